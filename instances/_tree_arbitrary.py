"""How the law checker draws trees (:class:`TreeArbitrary`) and what it compares.

Trees are drawn by splitting leaves of a single leaf: a few random splits, and
sometimes a long spine (a caterpillar, down to depth 40), per example of a
batch of 2 or for one tree shared by the batch. A value pairs with any tree
of the same batch shape (``pair`` takes the common refinement); ``pure``
builds the one-leaf tree. Equality ignores padding positions. The
isomorphism for the attention laws is the mirror image ``x ↦ 1 - x`` of
``[0, 1)``: it reverses each tree's leaves and preserves depths, hence both
node algebras.
"""

from __future__ import annotations

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw, Isomorphism

from .tree import NodeAlgebra, Tree


class TreeArbitrary(Arbitrary[Tree]):
    """Draws batches of trees with one node algebra (``SUM`` by default)."""

    kind = Tree

    def __init__(self, algebra: NodeAlgebra = NodeAlgebra.SUM) -> None:
        self.algebra = algebra

    def _depths(self, draw: Draw) -> list[int]:
        depths = [0]
        for _ in range(draw.integers(0, 5)):
            i = draw.integers(0, len(depths) - 1)
            depths[i : i + 1] = [depths[i] + 1, depths[i] + 1]
        if draw.booleans():  # a long spine below one leaf
            i = draw.integers(0, len(depths) - 1)
            d, spine = depths[i], draw.integers(1, 40)
            depths[i : i + 1] = [d + k for k in range(1, spine + 1)] + [d + spine]
        return depths

    def _draw(self, draw: Draw, batch: tuple[int, ...]) -> Tree:
        rows = [self._depths(draw) for _ in range(batch[0] if batch else 1)]
        n = max(len(r) for r in rows)
        t = torch.tensor([r + [-1] * (n - len(r)) for r in rows], dtype=torch.int64)
        return Tree(t if batch else t[0], self.algebra)

    def structure(self, draw: Draw) -> Tree:
        return self._draw(draw, (2,) if draw.booleans() else ())

    def partner(self, s: Tree, draw: Draw) -> Structure:
        return self._draw(draw, tuple(s.batch_shape))

    def unit(self, s: Tree, draw: Draw) -> Structure:
        return Tree.leaf(tuple(s.batch_shape), self.algebra)

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, Tree):
            return x
        return s.take(x, dim, None)

    def isomorphism(self, s: Tree, draw: Draw) -> Isomorphism:
        j = torch.arange(s.size)
        count = s.leaf_counts().unsqueeze(-1)
        index = torch.where(s.mask, count - 1 - j, j)  # (*batch, N): reverse the real leaves
        depth = torch.where(s.mask, torch.gather(s.depth, -1, index), -1)
        return Isomorphism(
            s, Tree(depth, s.algebra), lambda x, dim: s.take(x, dim, index), "mirror image (reverse the leaves)"
        )

    def __repr__(self) -> str:
        return f"TreeArbitrary({self.algebra.value})"
