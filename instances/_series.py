"""What series structures share: a basis of ``size`` coefficients whose products are exact on ``2 size - 1`` points,
and the law checker's draws on the subspace where truncated products stay exact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from applicative import Basis, Structure
from applicative.laws import Draw, Elements


@dataclass(frozen=True)
class SeriesBasis(Basis):
    """Coefficients ↔ values at ``points`` positions, by a subclass's ``transforms`` (values, coefficients)."""

    size: int
    #: the series' two transforms: ``values(c, dim, points)`` and ``coefficients(v, dim, size)``
    transforms: ClassVar[tuple[Callable[..., Tensor], Callable[..., Tensor]]]

    @property
    def grid(self) -> int:
        """``2n - 1`` points: a product of two series of ``n`` terms has ``2n - 1`` (the degree doubles)."""
        return 2 * self.size - 1

    def positions(self, x: Tensor, dim: int, points: int) -> Tensor:
        return type(self).transforms[0](x, dim, points)

    def stored(self, v: Tensor, dim: int) -> Tensor:
        return type(self).transforms[1](v, dim, self.size)


def leading(
    axes: tuple[Structure, ...],
    draw: Draw,
    batch: tuple[int, ...],
    elements: Elements,
    kind: type[Structure],
    terms: Callable[[int], int],
) -> Tensor:
    """A drawn value on ``axes`` whose coefficients along every ``kind`` axis of size ``n`` past the first
    ``terms(n)`` are zero (the subspace a law's products keep exact)."""
    t = draw.tensor((*batch, *(a.size for a in axes)), elements, torch.float64)
    k = len(axes)
    for i, a in enumerate(axes):
        if isinstance(a, kind):
            keep = terms(a.size)
            t.narrow(i - k, keep, a.size - keep).zero_()
    return t
