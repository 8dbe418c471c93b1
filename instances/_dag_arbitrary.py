"""How the law checker draws DAG batches (:class:`DAGArbitrary`): 1-4 node slots, two random DAGs per batch.

Values at padding slots are unobservable (weight zero), so equality compares them as zero.
"""

from __future__ import annotations

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw

from .dag import DAG


class DAGArbitrary(Arbitrary[DAG]):
    """Draws a :class:`DAG` batch of 2 examples on ``n`` in ``[1, 4]`` slots, each with its own node count."""

    kind = DAG

    def structure(self, draw: Draw) -> DAG:
        n = draw.integers(1, 4)
        children = torch.full((2, n, 2), -1, dtype=torch.int64)
        for b in range(2):
            for i in range(1, n):
                if draw.booleans():  # an operation node on two earlier nodes (possibly the same one twice)
                    children[b, i, 0], children[b, i, 1] = draw.integers(0, i - 1), draw.integers(0, i - 1)
        ops = torch.tensor([[draw.integers(0, 1) for _ in range(n)] for _ in range(2)], dtype=torch.int64)
        return DAG(children, ops, 2, [draw.integers(1, n), draw.integers(1, n)])

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, DAG):
            return x
        d = dim % x.ndim
        mask = s.mask.reshape(*s.mask.shape[:1], *([1] * (d - 1)), s.size, *([1] * (x.ndim - d - 1)))
        return torch.where(mask, x, 0)
