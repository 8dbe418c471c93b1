"""Triangular feed-forward time mixing (Ishuov, "Feed forward that produces Shakespeare"), on the generic parts.

In place of attention, each head mixes its features along time with a learned lower-triangular matrix:
transpose ``(time, embedding)`` to ``(embedding, time)`` and apply a linear map from the sequence to
itself whose weight is masked to ``j <= i`` -- ``y_i = Σ_{j<=i} M_ij x_j`` -- with no bias, so no
position sees the future. ``M`` starts as running averages, ``M_ij = γ^(i-j) / Σ_{k<=i} γ^(i-k)``
(``γ = 1``: the plain mean of the first ``i + 1`` positions; ``γ < 1`` discounts older ones). The
feed-forward uses LeakyReLU(0.07). The mixing is ``mul_mm`` of a ``Seq x Seq`` weight with the
``Seq x Head`` features of each head: the sequence axis's own contraction, on any ordered structure.
"""

from __future__ import annotations

import functools
from typing import TypeVar, cast

import torch
import torch.nn.functional as nnf
from torch import nn

from applicative import (
    MLP,
    Field,
    LayerNorm,
    Structure,
    StructureError,
    add,
    mul_mm,
    require_order,
    unsqueeze_batch,
)

S = TypeVar("S", bound=Structure)
D = TypeVar("D", bound=Structure)

#: the feed-forward's activation in the paper
leaky_relu = functools.partial(nnf.leaky_relu, negative_slope=0.07)


def running_average(context: int, gamma: float = 1.0) -> torch.Tensor:
    """``M_ij = γ^(i-j) / Σ_{k<=i} γ^(i-k)`` for ``j <= i``, ``0`` above the diagonal: ``(context, context)``."""
    i = torch.arange(context, dtype=torch.float64)
    lag = i[:, None] - i[None, :]
    w = torch.where(lag >= 0, gamma ** lag.clamp(min=0), 0.0)
    return w / w.sum(-1, keepdim=True)


class TriangularMixing(nn.Module):
    """``heads`` learned lower-triangular time-mixing matrices over a model structure split into heads."""

    def __init__(
        self, model: Structure, context: int, heads: int, gamma: float = 1.0, *, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        if not 0.0 < gamma <= 1.0:
            raise StructureError(f"TriangularMixing: gamma must lie in (0, 1], got {gamma}")
        self.model, self.head, self.heads, self.context = model, model.split(heads), heads, context
        target = torch.empty(0).device  # the default device (meta, when the model is only counted)
        with torch.device("cpu"):  # fixed matrices, built by value
            init = running_average(context, gamma).to(dtype=dtype or torch.get_default_dtype(), device=target)
            past = torch.ones(context, context, dtype=torch.bool).tril().to(target)
        self.weight = nn.Parameter(init.expand(heads, context, context).clone())  # (h, T, T)
        self.register_buffer("past", past)

    def forward(self, x: Field[S, D]) -> Field[S, D]:
        seq, model = x.structures
        if model != self.model:
            raise StructureError(f"TriangularMixing: the input's features are {model!r}, the model is {self.model!r}")
        require_order(seq, "TriangularMixing")
        t = seq.size
        if t > self.context:
            raise StructureError(f"TriangularMixing: {seq!r} is longer than the context {self.context}")
        past = cast(torch.Tensor, self.past)[:t, :t]
        per_head = unsqueeze_batch(seq, -1)  # heads become a batch axis (after any per-example batch of seq)
        m = torch.where(past, self.weight[:, :t, :t], 0.0).expand(*x.tensor.shape[:-2], self.heads, t, t)
        w = Field(m, (per_head, per_head))
        heads = x.tensor.reshape(*x.tensor.shape[:-1], self.heads, self.head.size).transpose(-2, -3)  # (..., h, T, dh)
        y = mul_mm(w, Field(heads, (per_head, self.head)))  # y_i = Σ_{j<=i} M_ij x_j, per head
        return x.with_tensor(y.tensor.transpose(-2, -3).flatten(-2))


class TriangularLayer(nn.Module):
    """A pre-norm block: ``x + mix(norm1 x)``, then ``x + mlp(norm2 x)`` with LeakyReLU(0.07)."""

    def __init__(
        self,
        model: Structure,
        hidden: Structure,
        context: int,
        heads: int,
        gamma: float = 1.0,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.norm1, self.norm2 = LayerNorm(model, dtype=dtype), LayerNorm(model, dtype=dtype)
        self.mix = TriangularMixing(model, context, heads, gamma, dtype=dtype)
        self.mlp: MLP[Structure, Structure] = MLP(model, hidden, model, leaky_relu, dtype=dtype)

    def forward(self, x: Field[S, D]) -> Field[S, D]:
        x = add(x, self.mix(self.norm1(x)))
        return add(x, cast("Field[S, D]", self.mlp(self.norm2(x))))


__all__ = ["TriangularLayer", "TriangularMixing", "leaky_relu", "running_average"]
