r"""The Funcformers along each axis of a domain of one or two series.

On a 1D domain, one :class:`~models.Funcformer` whose sequence is the axis's series and whose features at each
point are ``C`` numbers. On a 2D domain ``X x Y``, one along ``x`` whose features at each ``x`` are ``C`` functions
of ``y`` (``Pairs(Y, Vector(C))``, or ``Y`` alone for one), and one along ``y`` on the transposed functions (features:
functions of ``x``); their outputs are summed (the two directions treated alike). The map keeps its input's shape:
``(batch, *n, C)`` coefficients -> ``(batch, *n, C)``. ``config.convolution`` is taken along the periodic axes only
(a circular convolution needs a circle); along a bounded axis that Funcformer has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor, nn

from applicative import Field, Pairs, Structure
from instances import Fourier, Vector

from ..funcformer import Funcformer, FuncformerConfig


class AlongAxes(nn.Module):
    """Coefficients ``(batch, *n, C)`` on the domain's series -> the same shape, a Funcformer along each axis.

    Args:
        domain: the series of each axis (one or two structures; ``n`` their sizes).
        channels: ``C``, the functions handed along per point.
        width, hidden: each Funcformer's model channels and MLP width.
        config: the Funcformers' heads, depth, normalisation, activation, window and convolution (the last along
            periodic axes only).
    """

    def __init__(
        self,
        domain: Sequence[Structure],
        channels: int,
        width: int,
        hidden: int,
        config: FuncformerConfig,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.domain = tuple(domain)
        c, d, h = Vector(channels), Vector(width), Vector(hidden)
        x = self.domain[0]
        if len(self.domain) == 1:
            features: Structure = c
        else:
            features = self.domain[1] if c.size == 1 else Pairs(self.domain[1], c)
        self.x: Funcformer[Structure, Structure, Vector] = Funcformer(x, features, d, h, _on(config, x), dtype=dtype)
        self.y: Funcformer[Structure, Structure, Vector] | None = None
        if len(self.domain) == 2:  # the same along y: functions of x at each y, on the transposed input
            across: Structure = x if c.size == 1 else Pairs(x, c)
            self.y = Funcformer(self.domain[1], across, d, h, _on(config, self.domain[1]), dtype=dtype)

    def forward(self, f: Tensor) -> Tensor:
        """``f`` ``(batch, *n, C)`` coefficients -> the same shape."""
        b, c = f.shape[0], f.shape[-1]
        if self.y is None:
            return self.x(Field(f, (self.domain[0], self.x.features))).tensor
        n0, n1 = f.shape[1], f.shape[2]
        v = self.x(Field(f.reshape(b, n0, n1 * c), (self.domain[0], self.x.features))).tensor.reshape(b, n0, n1, c)
        t = f.transpose(1, 2).reshape(b, n1, n0 * c)  # [b, l, (k, c)]: y the sequence
        w = self.y(Field(t, (self.domain[1], self.y.features))).tensor.reshape(b, n1, n0, c)
        return v + w.transpose(1, 2)


def _on(config: FuncformerConfig, axis: Structure) -> FuncformerConfig:
    """``config`` for the Funcformer along ``axis``: its convolution kept only where the axis is periodic (a Fourier
    series)."""
    return replace(config, convolution=config.convolution and isinstance(axis, Fourier))
