r"""The Fourier reader: samples on a grid of periodic axes, read by their exact discrete Fourier coefficients.

On a periodic axis sampled at ``t_j = -1 + 2j/P`` the first ``n ≤ P`` coefficients of the samples' trigonometric
interpolant (:func:`instances.fourier.coefficients`, a real DFT) are the series the model works on: exact for every
input of degree ``< P/2``, the same coefficients at every such resolution, and no weights spent on reading. On a
domain of two periodic axes the transform runs along each in turn (a 2-D real DFT). The ``C`` input channels of each
coefficient are then lifted to ``width`` model channels by one linear map on the domain's structure (its bias a
constant function), as the attention reader's last step is.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Pairs, Structure
from instances import Vector
from instances.fourier import coefficients


def fourier_coefficients(x: Tensor, sizes: Sequence[int]) -> Tensor:
    """Samples ``x`` ``(batch, *grid, C)`` at ``t_j = -1 + 2j/P`` on each axis -> their first ``sizes`` Fourier
    coefficients per axis, ``(batch, *sizes, C)`` (interleaved ``a_0, a_1, b_1, ...``; ``sizes`` odd, each ``≤`` its
    axis's ``P``)."""
    out = x
    for i, n in enumerate(sizes):
        out = coefficients(out, dim=1 + i, size=n)
    return out


class FourierReader(nn.Module):
    """``x`` ``(batch, *grid, C)`` (standardised, every axis periodic) -> ``(batch, |domain|, width)`` coefficients.

    Args:
        domain: the Fourier series of each axis (one or two; their sizes are the coefficients kept).
        in_channels: ``C``, the sample's values per point.
        width: the channels handed on.
    """

    def __init__(
        self, domain: Sequence[Structure], in_channels: int, width: int, *, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.domain = tuple(domain)
        self.whole = self.domain[0] if len(self.domain) == 1 else Pairs(self.domain[0], self.domain[1])
        self.lift: Linear[Vector, Vector] = Linear(Vector(in_channels), Vector(width), dtype=dtype)

    def forward(self, x: Tensor) -> Field[Structure, Vector]:
        c = fourier_coefficients(x, [s.size for s in self.domain]).flatten(1, -2)  # (b, |domain|, C)
        return self.lift(Field(c, (self.whole, self.lift.inp)))
