"""``torch.nn.Module`` wrappers around the generic blocks.

Parameters are ordinary ``nn.Parameter`` tensors, so models work with any
optimizer, ``state_dict``, ``.to(device)`` and ``torch.compile``; each module
wraps its parameters in :class:`~applicative.Field` values with their
structures and calls the generic function. Parameter layouts match PyTorch's
own layers (``weight`` is ``(out, in)``; multi-head ``in_proj_weight`` is
``[q; k; v]`` stacked head-major), so weights copy across directly.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Generic, Self, TypeVar, TypeVarTuple, cast

import torch
from torch import Tensor, nn

from ._algebra import affine_through, linear, pointwise
from ._attention import Normalise, attention, scaled_softmax
from ._data import unsqueeze_batch
from ._errors import StructureError
from ._field import Field, expect_field
from ._kernels import batch_shape
from ._layers import layer_norm
from ._ring import REAL, Capability, Ring
from ._structure import Pointwise, Structure
from ._tensor import unflatten
from ._vector import Vector

I = TypeVar("I", bound=Structure)
O = TypeVar("O", bound=Structure)
D = TypeVar("D", bound=Structure)
S = TypeVar("S", bound=Structure)
T = TypeVar("T", bound=Structure)
B = TypeVarTuple("B")


class Linear(nn.Module, Generic[I, O]):
    """``x ↦ W x + b`` from structure ``I`` to structure ``O`` at every position of ``x``.

    Parameters ``weight`` ``(|O|, |I|)`` and ``bias`` ``(|O|,)``, initialised as
    ``torch.nn.Linear`` does (uniform in ``±1/sqrt(|I|)``).
    """

    def __init__(
        self,
        inp: I,
        out: O,
        bias: bool = True,
        *,
        ring: Ring = REAL,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        for s in (inp, out):
            s.check_ring(ring, "Linear")
        self.inp, self.out, self.ring = inp, out, ring
        k = 1.0 / math.sqrt(inp.size)
        self.weight = nn.Parameter(torch.empty(out.size, inp.size, dtype=dtype, device=device).uniform_(-k, k))
        self.bias = nn.Parameter(torch.empty(out.size, dtype=dtype, device=device).uniform_(-k, k)) if bias else None

    @property
    def weight_field(self) -> Field[O, I]:
        return Field.unchecked(self.weight, (self.out, self.inp), self.ring)

    @property
    def bias_field(self) -> Field[O] | None:
        return None if self.bias is None else Field.unchecked(self.bias, (self.out,), self.ring)

    def forward(self, x: Field[*B, I]) -> Field[*B, O]:
        expect_field("Linear", x)
        return linear(self.weight_field, self.bias_field, x)

    def __call__(self, x: Field[*B, I]) -> Field[*B, O]:
        return cast("Field[*B, O]", super().__call__(x))

    def extra_repr(self) -> str:
        return f"{self.inp!r} -> {self.out!r}, bias={self.bias is not None}"


class MLP(nn.Module, Generic[I, O]):
    """``linear W2 b2 . fmap activation . linear W1 b1`` from ``I`` through ``hidden`` to ``O``."""

    def __init__(
        self,
        inp: I,
        hidden: Structure,
        out: O,
        activation: Pointwise = torch.relu,
        *,
        ring: Ring = REAL,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.activation = activation
        self.linear1: Linear[I, Structure] = Linear(inp, hidden, ring=ring, dtype=dtype, device=device)
        self.linear2: Linear[Structure, O] = Linear(hidden, out, ring=ring, dtype=dtype, device=device)

    def forward(self, x: Field[*B, I]) -> Field[*B, O]:
        expect_field("MLP", x)
        return self.linear2(pointwise(self.activation, self.linear1(x)))

    def __call__(self, x: Field[*B, I]) -> Field[*B, O]:
        return cast("Field[*B, O]", super().__call__(x))


class LayerNorm(nn.Module, Generic[D]):
    """Layer norm over structure ``D``; ``weight`` starts as ``pure 1``, ``bias`` as zero."""

    def __init__(
        self,
        d: D,
        eps: float = 1e-5,
        *,
        ring: Ring = REAL,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        ring.require("LayerNorm", "a mean and a variance", Capability.SOFTMAX)
        d.check_ring(ring, "LayerNorm")
        self.d, self.eps = d, eps
        one = torch.ones((), dtype=dtype, device=device)
        self.weight = nn.Parameter(d.pure(one, -1).clone())
        self.bias = nn.Parameter(torch.zeros(d.size, dtype=dtype, device=device))

    def forward(self, x: Field[*B, D]) -> Field[*B, D]:
        expect_field("LayerNorm", x)
        w, b = Field.unchecked(self.weight, (self.d,), x.ring), Field.unchecked(self.bias, (self.d,), x.ring)
        return layer_norm(x, w, b, self.eps)

    def __call__(self, x: Field[*B, D]) -> Field[*B, D]:
        return cast("Field[*B, D]", super().__call__(x))


class MultiHeadAttention(nn.Module, Generic[D]):
    """Multi-head attention on fields ``S x D``, each head attending with structures ``key``/``value``.

    Per head ``h``: ``q_h = x Wq_hᵀ`` (``S x key``), ``k_h``, ``v_h`` likewise from
    the memory (``x`` itself for self-attention); ``o_h = attention(normalise,
    q_h, k_h, v_h)``; the output is ``Σ_h o_h Wo_hᵀ + b`` -- a linear map out of
    ``value.stack(heads)``.

    Args:
        model: the model structure ``D``.
        key: per-head query/key structure (``Vector(d // heads)`` for the usual Transformer).
        value: per-head value structure.
        heads: number of heads.
        normalise: the normalisation (default: a scaled softmax over ``key.size``), chosen here once;
            :meth:`using` gives the same layer with another.
    """

    def __init__(
        self,
        model: D,
        key: Structure,
        value: Structure,
        heads: int,
        normalise: Normalise | None = None,
        bias: bool = True,
        *,
        ring: Ring = REAL,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if heads < 1:
            raise StructureError(f"MultiHeadAttention: heads must be >= 1, got {heads}")
        for s in (model, key, value):
            s.check_ring(ring, "MultiHeadAttention")
        self.model, self.key, self.value, self.heads, self.ring = model, key, value, heads, ring
        self.normalise = normalise if normalise is not None else scaled_softmax(key.size)
        self.normalise.check_ring(ring, "MultiHeadAttention")
        self.keys, self.values = key.stack(heads), value.stack(heads)
        n_in = 2 * self.keys.size + self.values.size
        k = 1.0 / math.sqrt(model.size)
        self.in_proj_weight = nn.Parameter(torch.empty(n_in, model.size, dtype=dtype, device=device).uniform_(-k, k))
        self.in_proj_bias = nn.Parameter(torch.zeros(n_in, dtype=dtype, device=device)) if bias else None
        self.out_proj: Linear[Structure, D] = Linear(self.values, model, bias, ring=ring, dtype=dtype, device=device)

    def _project(self, x: Field[*tuple[Any, ...]], rows: slice | None = None) -> Tensor:
        # all rows: the parameters themselves (slicing them costs a zero-filled copy in backward)
        w: Tensor = self.in_proj_weight
        b: Tensor | None = self.in_proj_bias
        if rows is not None:
            w, b = w[rows], None if b is None else b[rows]
        return affine_through(self.model, x.structures[:-1], x.tensor, w, b, self.ring)

    def _heads(self, t: Tensor, s: Structure, per_head: Structure) -> Field[Structure, Structure]:
        # (..., n, h * k) -> (..., h, n, k): heads become a batch axis
        t = unflatten(t, -1, (self.heads, per_head.size)).transpose(-2, -3)
        return Field.unchecked(t, (unsqueeze_batch(s, -1), per_head), self.ring)

    def using(self, normalise: Normalise) -> Self:
        """This layer with another normalisation, sharing its parameters (a fused and an unfused route of one
        layer, say); the normalisation is checked against the ring as at construction."""
        normalise.check_ring(self.ring, "MultiHeadAttention")
        other = copy.copy(self)  # shallow: the parameters and submodules are this layer's own
        other.normalise = normalise
        return other

    def forward(
        self,
        x: Field[S, D],
        memory: Field[T, D] | None = None,
        position: tuple[Tensor, Tensor] | None = None,
    ) -> Field[S, D]:
        """Attend from ``x`` (``S x D``) to ``memory`` (``T x D``, default ``x``).

        ``position = (p, r)`` adds ``p_h(s) · r_h(t)`` to head ``h``'s score of query ``s`` against key ``t``
        (before the normalisation's scale): fixed features appended to every head's queries and keys,
        ``p`` broadcastable to ``(..., heads, |S|, e)`` and ``r`` to ``(..., heads, |T|, e)``, each stored
        as its sequence is (Chebyshev coefficients along a Chebyshev ``S``). Positional biases take this
        form, e.g. a Gaussian window ``-β (s - t)² = (2βs, β) · (t, -t²) - βs²`` (the last term is the
        same for every key). Needs plain ``Vector`` keys.
        """
        expect_field("MultiHeadAttention", x)
        if memory is not None:
            expect_field("MultiHeadAttention", memory, "memory")
        d, w = self.model, self.in_proj_weight
        for name, f in (("input", x), ("memory", memory)):
            if f is not None and f.structures[-1] != d:
                raise StructureError(
                    f"MultiHeadAttention: the {name}'s features are {f.structures[-1]!r} but the model is {d!r}"
                )
            if f is not None and (f.dtype, f.device) != (w.dtype, w.device):
                raise StructureError(
                    f"MultiHeadAttention: the {name} is {f.dtype} on {f.device} but the parameters are "
                    f"{w.dtype} on {w.device}; convert with module.to(...) or field.to(...)"
                )
        nk = self.keys.size
        s_q = x.structures[0]
        if memory is None:
            qkv = self._project(x)  # (..., n, 2hk + hv); split: its backward is one concatenation
            tq, tk, tv = torch.split(qkv, [nk, nk, self.values.size], -1)
            s_kv = s_q
        else:
            tq = self._project(x, slice(0, nk))
            kv = self._project(memory, slice(nk, None))
            tk, tv = torch.split(kv, [nk, self.values.size], -1)
            s_kv = memory.structures[0]
        q = self._heads(tq, s_q, self.key)
        k = self._heads(tk, s_kv, self.key)
        v = self._heads(tv, s_kv, self.value)
        if position is not None:
            q, k = self._positioned(q, k, position)
        o = attention(self.normalise, q, k, v).tensor  # (..., h, n, gv)
        o = o.transpose(-2, -3).flatten(-2)  # (..., n, h * gv)
        return self.out_proj(Field.unchecked(o, (s_q, self.values), self.ring))  # type: ignore[arg-type]

    def _positioned(
        self, q: Field[Structure, Structure], k: Field[Structure, Structure], position: tuple[Tensor, Tensor]
    ) -> tuple[Field[Structure, Structure], Field[Structure, Structure]]:
        """``q``, ``k`` with the position features ``position = (p, r)`` appended to every head's keys."""
        p, r = position
        if not _dot_product(self.key):
            raise StructureError(
                f"MultiHeadAttention: position features extend plain Vector keys, but the keys are {self.key!r}; "
                "use key=Vector(n) or leave position out"
            )
        if p.ndim < 2 or r.ndim < 2 or p.shape[-1] != r.shape[-1]:
            raise StructureError(
                f"MultiHeadAttention: position features (p, r) need the same last size e, got shapes {tuple(p.shape)} "
                f"and {tuple(r.shape)}; pass p (..., heads, |S|, e) and r (..., heads, |T|, e)"
            )
        e, out = p.shape[-1], []
        for f, extra, name in ((q, p, "p"), (k, r, "r")):
            t = f.tensor
            try:
                extra = extra.to(t).expand(*t.shape[:-1], e)
            except RuntimeError:
                raise StructureError(
                    f"MultiHeadAttention: position feature {name} of shape {tuple(extra.shape)} does not broadcast "
                    f"to the heads' {tuple(t.shape[:-1])} x e={e}; shape it (..., heads, positions, e)"
                ) from None
            out.append(Field.unchecked(torch.cat([t, extra], -1), (f.structures[0], Vector(t.shape[-1] + e)), f.ring))
        return out[0], out[1]

    def __call__(
        self,
        x: Field[S, D],
        memory: Field[T, D] | None = None,
        position: tuple[Tensor, Tensor] | None = None,
    ) -> Field[S, D]:
        return cast("Field[S, D]", super().__call__(x, memory, position))


def _dot_product(s: Structure) -> bool:
    """Whether contracting over ``s`` is the plain dot product: values stored at their positions, the counting
    measure, no per-example data -- what keys extended by position features keep (they become a ``Vector``)."""
    return s.basis is None and not batch_shape(s) and s.log_measure(torch.float64, torch.device("cpu")) is None
