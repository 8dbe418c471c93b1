"""How the law checker draws graph batches (:class:`GraphArbitrary`): 1-4 node slots, random edges, two graphs.

Values at padding slots are unobservable (weight zero), so equality compares them as zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw

from .graph import Graph


class GraphArbitrary(Arbitrary[Graph]):
    """Draws a :class:`Graph` batch of 2 examples on ``n`` in ``[1, 4]`` slots with up to 5 edges each."""

    kind = Graph

    def structure(self, draw: Draw) -> Graph:
        n = draw.integers(1, 4)
        count = [draw.integers(1, n), draw.integers(1, n)]
        edges = torch.full((2, 5, 2), -1, dtype=torch.int64)
        for b in range(2):
            for e in range(draw.integers(0, 5)):
                edges[b, e, 0], edges[b, e, 1] = draw.integers(0, count[b] - 1), draw.integers(0, count[b] - 1)
        return Graph(n, edges, count)

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, Graph):
            return x
        d = dim % x.ndim
        mask = s.mask.reshape(*s.mask.shape[:1], *([1] * (d - 1)), s.size, *([1] * (x.ndim - d - 1)))
        return torch.where(mask, x, 0)
