"""The grid reader: samples in a layout, read by cross-attention from learned queries on the model's series.

One cross-attention per axis through :class:`~applicative.MultiHeadAttention` (a separable reading:
``O(n P² + n² P)`` scores in 2D): along ``x`` for each grid row, the queries learned series on ``X`` and the keys
and values the row's tokens on :func:`operators.layout.line` (its quadrature the measure), then in 2D along ``y``
at each point of ``X``. A sample's token is its values and Fourier features of its coordinate; a fixed window
(``reader_window``) makes each head read near its query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from applicative import Field, LayerNorm, Linear, MultiHeadAttention, Pairs, ScaledSoftmax, Structure, add, kernels
from instances import Vector
from models.funcformer import window_keys, window_queries, window_slopes
from operators.layout import line

from .config import Config
from .shape import Shape


def tokens(values: Tensor, t: Tensor, frequencies: int) -> Tensor:
    """Tokens along the second-last axis of ``values`` ``(..., P, C)``: ``(..., P, C + 2K)``, the values and
    ``cos πkt, sin πkt`` (``k = 1..K``) of their coordinates ``t`` ``(P,)``."""
    k = torch.arange(1, frequencies + 1, dtype=t.dtype, device=t.device)
    f = torch.cat([torch.cos(math.pi * t[:, None] * k), torch.sin(math.pi * t[:, None] * k)], -1).to(values.dtype)
    return torch.cat([values, f.expand(*values.shape[:-1], -1)], -1)


class Reader(nn.Module):
    """Samples ``(batch, *grid, C)`` in a layout -> ``width`` feature functions on the domain (coefficients).

    One cross-attention per axis through :class:`~applicative.MultiHeadAttention` (a separable reading:
    ``O(n P² + n² P)`` scores in 2D): along ``x`` for each grid row, the queries learned series on ``X`` and the
    keys and values the row's tokens on :func:`operators.layout.line` (its quadrature the measure); in 2D then
    along ``y`` at each point of ``X``, queries on ``Y`` reading the first readings plus Fourier features of the
    samples' ``y``. Each is one fused SDPA call with bias ``log w``.
    """

    window_x: Tensor | None
    window_y: Tensor | None

    def __init__(self, config: Config, shape: Shape, domain: Sequence[Structure], dtype: torch.dtype) -> None:
        super().__init__()
        self.shape, self.domain, self.frequencies = shape, tuple(domain), config.frequencies
        channels, heads = config.reader_width, config.reader_heads
        d, r = Vector(config.width), Vector(channels)
        f = Vector(2 * config.frequencies)
        self.embed: Linear[Vector, Vector] = Linear(Vector(shape.c_in + f.size), r, dtype=dtype)
        self.position: Linear[Vector, Vector] | None = Linear(f, r, dtype=dtype) if shape.dims == 2 else None
        self.norm_x: LayerNorm[Vector] = LayerNorm(r, eps=config.eps, dtype=dtype)
        self.norm_y: LayerNorm[Vector] | None = LayerNorm(r, eps=config.eps, dtype=dtype) if shape.dims == 2 else None
        head = Vector(r.size // heads)
        scale = 1 / math.sqrt(head.size)
        self.attn_x = MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype)
        self.attn_y = (
            MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype) if shape.dims == 2 else None
        )
        self.query_x = nn.Parameter(0.1 * torch.randn(self.domain[0].size, r.size, dtype=dtype))
        self.query_y = (
            nn.Parameter(0.1 * torch.randn(self.domain[1].size, r.size, dtype=dtype)) if shape.dims == 2 else None
        )
        self.lift: Linear[Vector, Vector] = Linear(r, d, dtype=dtype)
        # the window's query sides are fixed series (from the config, not learned); the keys depend on the grid
        betas = torch.tensor(window_slopes(config.reader_window, heads), dtype=torch.float64) / scale
        for i, name in enumerate(("window_x", "window_y")):
            q = window_queries(betas, self.domain[i]).to(dtype) if len(betas) and i < shape.dims else None
            self.register_buffer(name, q, persistent=False)

    def _window(self, i: int, query: Tensor | None, p: int, like: Tensor) -> tuple[Tensor, Tensor] | None:
        if query is None:
            return None
        return query, window_keys(line(self.shape.axes[i], p), like.dtype, like.device)

    def forward(self, x: Tensor) -> Field[Structure, Vector]:
        """``x`` ``(batch, *grid, C)`` (standardised) -> ``(batch, |domain|, width)`` coefficients on the domain."""
        b, grid = x.shape[0], x.shape[1:-1]
        axes, r = self.shape.axes, self.lift.inp
        nx = self.domain[0].size
        px = grid[0]
        t_x = axes[0].t(px, x.dtype, x.device)
        if self.shape.dims == 1:
            memory = self.norm_x(
                self.embed(Field(tokens(x, t_x, self.frequencies), (line(axes[0], px), self.embed.inp)))
            )
            q = Field(self.query_x.expand(b, nx, r.size), (self.domain[0], r))
            return self.lift(add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))))
        assert self.attn_y is not None and self.norm_y is not None and self.position is not None
        assert self.query_y is not None
        py, ny = grid[1], self.domain[1].size
        # 1. along x, each row y_j a batch: tokens (b, P_y, P_x, C + 2K)
        rows = tokens(x.transpose(1, 2), t_x, self.frequencies)
        memory = self.norm_x(self.embed(Field(rows, (line(axes[0], px), self.embed.inp))))
        q = Field(self.query_x.expand(b, py, nx, r.size), (self.domain[0], r))
        read = add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))).tensor  # (b, P_y, n_x, R)
        # 2. along y, at each point x_k of X: keys (b, n_x, P_y, R)
        h = kernels.positions(self.domain[0], read, -2).transpose(-2, -3)
        t_y = axes[1].t(py, h.dtype, h.device)
        k = torch.arange(1, self.frequencies + 1, dtype=h.dtype, device=h.device)
        fy = torch.cat([torch.cos(math.pi * t_y[:, None] * k), torch.sin(math.pi * t_y[:, None] * k)], -1)
        ly = line(axes[1], py)
        memory = self.norm_y(add(Field(h, (ly, r)), self.position(Field(fy, (ly, self.position.inp)))))
        q = Field(self.query_y.expand(b, nx, ny, r.size), (self.domain[1], r))
        g = add(q, self.attn_y(q, memory, position=self._window(1, self.window_y, py, x))).tensor  # (b, n_x, n_y, R)
        c = kernels.stored(self.domain[0], g, -3).flatten(-3, -2)  # (b, n_x n_y, R): coefficients on Pairs(X, Y)
        return self.lift(Field(c, (Pairs(self.domain[0], self.domain[1]), r)))
