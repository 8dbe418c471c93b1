"""How the law checker draws padded sequences (:class:`PaddedArbitrary`): sizes 1-4, a length per example.

Values at padding positions are unobservable (weight zero), so equality compares them as zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw

from .padded import Padded


class PaddedArbitrary(Arbitrary[Padded]):
    """Draws ``Padded(n, lengths)`` with a batch of 2 lengths in ``[1, n]``."""

    kind = Padded

    def structure(self, draw: Draw) -> Padded:
        n = draw.integers(1, 4)
        return Padded(n, [draw.integers(1, n), draw.integers(1, n)])

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, Padded):
            return x
        d = dim % x.ndim
        mask = s.mask.reshape(*s.mask.shape[:1], *([1] * (d - 1)), s.size, *([1] * (x.ndim - d - 1)))
        return torch.where(mask, x, 0)
