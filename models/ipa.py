"""Iterated piecewise-affine approximation (Shamsi, Hua and Williams, "IPA"), on the generic parts.

A model ``F : Seq x D -> Seq x D`` is approximated by first-order Taylor expansions around ``P``
centres, combined by kernels, applied alternately to the columns (positions) and rows (features)
of ``X``:

* **column operation** -- at each position ``j``, a kernel-weighted sum of ``P`` affine maps of the
  earlier positions ``l <= j``::

      f_j = a + Σ_p Σ_{l<=j} K^p_{jl} S^p x_l,      K^p_{jl} = exp(x_lᵀ W^p x_j) / Σ_q exp(x_lᵀ W^q x_j)

  The kernels are normalised **over the centres** ``p`` (``Σ_p K^p_{jl} = 1``), not over the
  positions ``l``: a position's weights do not sum to one. The maps are position independent and low
  rank, ``W^p = W_l^p W_r^p`` and ``S^p = A^p B^p`` of rank ``k`` (a structure ``R``: ``Vector(k)``, or
  a piece of any model structure), so ``x_lᵀ W^p x_j`` is ``⟨W_l^pᵀ x_l, W_r^p x_j⟩_R`` -- the generic
  contraction of ``R`` -- and ``Σ_{l<=j}`` the sequence axis's own contraction (padding weighs zero).
* **row operation** -- ``T`` diagonal in time (so causal) and position independent, i.e. one affine map
  per centre acting at each position, combined by normalised Gaussian radial kernels::

      f(x) = Σ_p K^p(x) (T^p x + b^p),   K^p(x) = exp(-|x - c_p|² / 2σ²) / Σ_q exp(-|x - c_q|² / 2σ²)

  with learned centres ``c_p`` on ``D`` and width ``σ``; ``|x - c|²`` is ``D``'s own inner product.

Interpretations (the paper leaves them open): scores carry the factor ``1/sqrt(k)`` (a reparametrisation
of ``W``, for a sensible initialisation); each operation is applied as a pre-norm residual update
``x + op(norm x)``, the arrangement of the GPT it is compared with; ``|x|²`` cancels in the normalised
radial kernel, which is therefore ``softmax_p((⟨x, c_p⟩ - |c_p|²/2) / σ²)``.
"""

from __future__ import annotations

import math
from typing import TypeVar, cast

import torch
from torch import Tensor, nn

from applicative import (
    Field,
    LayerNorm,
    Linear,
    Structure,
    StructureError,
    Vector,
    add,
    mul_mm,
    mul_mmt,
    require_order,
    unsqueeze_batch,
)

S = TypeVar("S", bound=Structure)
D = TypeVar("D", bound=Structure)


def _centres_first(t: Tensor, centres: int, size: int) -> Tensor:
    """``(..., n, P * size) -> (..., P, n, size)``: the centres become a batch axis."""
    return t.reshape(*t.shape[:-1], centres, size).transpose(-2, -3)


class IPAColumn(nn.Module):
    """The causal column operation over ``P`` centres with rank structure ``rank`` (see the module docstring)."""

    def __init__(self, model: Structure, rank: Structure, centres: int, *, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        if centres < 1:
            raise StructureError(f"IPAColumn: centres must be >= 1, got {centres}")
        self.model, self.rank, self.centres = model, rank, centres
        ranks = rank.stack(centres)
        self.left: Linear[Structure, Structure] = Linear(model, ranks, bias=False, dtype=dtype)  # W_l^pᵀ x_l
        self.right: Linear[Structure, Structure] = Linear(model, ranks, bias=False, dtype=dtype)  # W_r^p x_j
        self.inner: Linear[Structure, Structure] = Linear(model, ranks, bias=False, dtype=dtype)  # B^p x_l
        self.outer: Linear[Structure, Structure] = Linear(ranks, model, dtype=dtype)  # Σ_p A^p (.) + a
        self.scale = 1.0 / math.sqrt(rank.size)

    def _per_centre(self, f: Field[S, Structure], seq: Structure) -> Field[Structure, Structure]:
        t = _centres_first(f.tensor, self.centres, self.rank.size)
        return Field.unchecked(t, (unsqueeze_batch(seq, -1), self.rank), f.ring)

    def forward(self, x: Field[S, D]) -> Field[S, D]:
        seq, model = x.structures
        if model != self.model:
            raise StructureError(f"IPAColumn: the input's features are {model!r}, the model is {self.model!r}")
        require_order(seq, "IPAColumn")
        left, right, inner = (self._per_centre(m(x), seq) for m in (self.left, self.right, self.inner))
        scores = mul_mmt(left, right).tensor * self.scale  # (..., P, j, l) = ⟨W_l^pᵀ x_l, W_r^p x_j⟩
        kernels = torch.softmax(scores, dim=-3)  # Σ_p K^p_jl = 1: over the centres
        t = seq.size
        past = torch.ones(t, t, dtype=torch.bool, device=scores.device).tril()
        per_head = unsqueeze_batch(seq, -1)
        k = Field.unchecked(kernels.masked_fill(~past, 0.0), (per_head, per_head), x.ring)
        u = mul_mm(k, inner).tensor  # (..., P, j, k): Σ_{l<=j} K^p_jl B^p x_l
        mixed = Field.unchecked(u.transpose(-2, -3).flatten(-2), (seq, self.outer.inp), x.ring)
        return cast("Field[S, D]", self.outer(mixed))


class IPARow(nn.Module):
    """The row operation: ``P`` affine maps on ``D`` combined by normalised Gaussian radial kernels."""

    def __init__(self, model: Structure, centres: int, *, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        if centres < 1:
            raise StructureError(f"IPARow: centres must be >= 1, got {centres}")
        self.model, self.centres = model, centres
        self.maps: Linear[Structure, Structure] = Linear(model, model.stack(centres), dtype=dtype)  # T^p x + b^p
        c = torch.randn(centres, model.size, dtype=dtype or torch.get_default_dtype())
        self.points = nn.Parameter(c)  # c_p (layer-normed inputs have unit-scale coordinates)
        self.log_width2 = nn.Parameter(torch.tensor(math.log(model.size), dtype=c.dtype))  # log σ²

    def kernels(self, x: Field[S, D]) -> Tensor:
        """``K^p(x)`` at each position: ``(..., n, P)``, summing to one over ``p``."""
        c = cast("Field[Vector, D]", Field.unchecked(self.points, (Vector(self.centres), self.model), x.ring))
        cx = mul_mmt(c, x).tensor  # ⟨x, c_p⟩
        cc = mul_mmt(c, c).tensor.diagonal()  # |c_p|²
        return torch.softmax((cx - cc / 2) * torch.exp(-self.log_width2), dim=-1)

    def forward(self, x: Field[S, D]) -> Field[S, D]:
        model = x.structures[-1]
        if model != self.model:
            raise StructureError(f"IPARow: the input's features are {model!r}, the model is {self.model!r}")
        y = self.maps(x).tensor
        y = y.reshape(*y.shape[:-1], self.centres, model.size)  # (..., n, P, |D|)
        return x.with_tensor((self.kernels(x).unsqueeze(-1) * y).sum(-2))


class IPALayer(nn.Module):
    """One iteration: ``x + column(norm1 x)``, then ``x + row(norm2 x)``."""

    def __init__(
        self,
        model: Structure,
        rank: Structure,
        column_centres: int,
        row_centres: int,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.norm1, self.norm2 = LayerNorm(model, dtype=dtype), LayerNorm(model, dtype=dtype)
        self.column = IPAColumn(model, rank, column_centres, dtype=dtype)
        self.row = IPARow(model, row_centres, dtype=dtype)

    def forward(self, x: Field[S, D]) -> Field[S, D]:
        x = add(x, self.column(self.norm1(x)))
        return add(x, self.row(self.norm2(x)))


__all__ = ["IPAColumn", "IPALayer", "IPARow"]
