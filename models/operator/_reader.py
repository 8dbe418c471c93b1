r"""The grid reader: samples in a layout, read by cross-attention from learned queries on the model's series.

One cross-attention per axis through :class:`~applicative.MultiHeadAttention` (a separable reading:
``O(n P² + n² P)`` scores in 2D instead of ``n² P²``): along ``x`` for each grid row, the queries learned series on
the first axis's series and the keys and values the row's tokens on the axis's samples
(:meth:`~instances.axes.Axis.line`: the layout's quadrature is the measure, so the reading is an integral and any
resolution is read by the same weights); in 2D then along ``y`` at each point of the first series, queries on the
second series reading the first readings plus Fourier features of the samples' ``y``. Each is one fused SDPA call
with bias ``log w``; the readings are stored back as coefficients.

A sample's token is its values and Fourier features ``cos πkt, sin πkt`` (``k = 1..K``) of its coordinate
(:func:`tokens`). With a window ``β > 0`` head ``h`` of ``H`` also scores ``-β_h (t - s)²`` between a query at ``t``
and a sample at ``s`` (``β_h = β / 4^(H-1-h)``, fixed, as ALiBi fixes its slopes: :func:`models.gaussian_window`),
so each head reads near its query from the first step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from applicative import Field, LayerNorm, Linear, MultiHeadAttention, Pairs, ScaledSoftmax, Structure, add, kernels
from instances import Vector
from instances.axes import Axis

from ..funcformer import window_keys, window_queries, window_slopes


@dataclass(frozen=True)
class Reading:
    """How the grid reader reads the samples.

    Attributes:
        width: the reader's channels.
        heads: its attention heads (dividing ``width``).
        window: its locality ``β`` (``0``: none), as :attr:`models.FuncformerConfig.window` between a query and a
            sample.
        frequencies: Fourier features ``K`` per axis of a sample's coordinate.
        kind: ``"attention"`` (this reader) or ``"fourier"`` (every axis periodic: the samples' exact discrete
            Fourier coefficients, :class:`~models.operator.FourierReader`; the other fields then unused).
    """

    width: int = 32
    heads: int = 2
    window: float = 160.0
    frequencies: int = 4
    kind: Literal["attention", "fourier"] = "attention"


def features(t: Tensor, frequencies: int) -> Tensor:
    """``cos πkt, sin πkt`` (``k = 1..K``) at coordinates ``t`` ``(P,)``: ``(P, 2K)``."""
    k = torch.arange(1, frequencies + 1, dtype=t.dtype, device=t.device)
    return torch.cat([torch.cos(math.pi * t[:, None] * k), torch.sin(math.pi * t[:, None] * k)], -1)


def tokens(values: Tensor, t: Tensor, frequencies: int) -> Tensor:
    """Tokens along the second-last axis of ``values`` ``(..., P, C)``: ``(..., P, C + 2K)``, the values and
    :func:`features` of their coordinates ``t`` ``(P,)``."""
    f = features(t, frequencies).to(values.dtype)
    return torch.cat([values, f.expand(*values.shape[:-1], -1)], -1)


class GridReader(nn.Module):
    """Samples ``(batch, *grid, C)`` in the axes' layouts -> ``width`` feature functions on the domain (coefficients).

    Args:
        axes: one :class:`~instances.axes.Axis` per grid axis (one or two).
        domain: the series the functions are read onto, one per axis (the queries live there).
        in_channels: ``C``, the sample's values per point.
        width: the channels handed on (the lift's output).
        reading: the reader's own sizes (:class:`Reading`).
        eps: layer-norm epsilon.
    """

    window_x: Tensor | None
    window_y: Tensor | None

    def __init__(
        self,
        axes: Sequence[Axis],
        domain: Sequence[Structure],
        in_channels: int,
        width: int,
        reading: Reading = Reading(),
        *,
        eps: float = 1e-5,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.axes, self.domain, self.frequencies = tuple(axes), tuple(domain), reading.frequencies
        dims, heads = len(self.axes), reading.heads
        d, r = Vector(width), Vector(reading.width)
        f = Vector(2 * reading.frequencies)
        self.embed: Linear[Vector, Vector] = Linear(Vector(in_channels + f.size), r, dtype=dtype)
        self.position: Linear[Vector, Vector] | None = Linear(f, r, dtype=dtype) if dims == 2 else None
        self.norm_x: LayerNorm[Vector] = LayerNorm(r, eps=eps, dtype=dtype)
        self.norm_y: LayerNorm[Vector] | None = LayerNorm(r, eps=eps, dtype=dtype) if dims == 2 else None
        head = Vector(r.size // heads)
        scale = 1 / math.sqrt(head.size)
        self.attn_x = MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype)
        self.attn_y = MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype) if dims == 2 else None
        # learned series of queries, 0.1 N(0, 1) each (scaled in place: no elementwise op on the meta device)
        self.query_x = nn.Parameter(torch.randn(self.domain[0].size, r.size, dtype=dtype).mul_(0.1))
        self.query_y = (
            nn.Parameter(torch.randn(self.domain[1].size, r.size, dtype=dtype).mul_(0.1)) if dims == 2 else None
        )
        self.lift: Linear[Vector, Vector] = Linear(r, d, dtype=dtype)
        # the window's query sides are fixed series (from the arguments, not learned), computed by value where values
        # exist and moved to the default device (meta, when the model is only counted); the keys depend on the grid
        target = torch.empty(0).device
        with torch.device("cpu"):
            betas = torch.tensor(window_slopes(reading.window, heads), dtype=torch.float64) / scale
            for i, name in enumerate(("window_x", "window_y")):
                q = window_queries(betas, self.domain[i]).to(dtype) if len(betas) and i < dims else None
                self.register_buffer(name, None if q is None else q.to(target), persistent=False)

    def _window(self, i: int, query: Tensor | None, p: int, like: Tensor) -> tuple[Tensor, Tensor] | None:
        if query is None:
            return None
        return query, window_keys(self.axes[i].line(p), like.dtype, like.device)

    def forward(self, x: Tensor) -> Field[Structure, Vector]:
        """``x`` ``(batch, *grid, C)`` (standardised) -> ``(batch, |domain|, width)`` coefficients on the domain."""
        b, grid = x.shape[0], x.shape[1:-1]
        axes, r = self.axes, self.lift.inp
        nx, px = self.domain[0].size, grid[0]
        t_x = axes[0].t(px, x.dtype, x.device)
        if len(axes) == 1:
            memory = self.norm_x(
                self.embed(Field(tokens(x, t_x, self.frequencies), (axes[0].line(px), self.embed.inp)))
            )
            q = Field(self.query_x.expand(b, nx, r.size), (self.domain[0], r))
            return self.lift(add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))))
        assert self.attn_y is not None and self.norm_y is not None and self.position is not None
        assert self.query_y is not None
        py, ny = grid[1], self.domain[1].size
        # 1. along x, each row y_j a batch: tokens (b, P_y, P_x, C + 2K)
        rows = tokens(x.transpose(1, 2), t_x, self.frequencies)
        memory = self.norm_x(self.embed(Field(rows, (axes[0].line(px), self.embed.inp))))
        q = Field(self.query_x.expand(b, py, nx, r.size), (self.domain[0], r))
        read = add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))).tensor  # (b, P_y, n_x, R)
        # 2. along y, at each point x_k of the first series: keys (b, n_x, P_y, R)
        h = kernels.positions(self.domain[0], read, -2).transpose(-2, -3)
        fy = features(axes[1].t(py, h.dtype, h.device), self.frequencies)
        ly = axes[1].line(py)
        memory = self.norm_y(add(Field(h, (ly, r)), self.position(Field(fy, (ly, self.position.inp)))))
        q = Field(self.query_y.expand(b, nx, ny, r.size), (self.domain[1], r))
        g = add(q, self.attn_y(q, memory, position=self._window(1, self.window_y, py, x))).tensor  # (b, n_x, n_y, R)
        c = kernels.stored(self.domain[0], g, -3).flatten(-3, -2)  # (b, n_x n_y, R): coefficients on the pair
        return self.lift(Field(c, (Pairs(self.domain[0], self.domain[1]), r)))
