"""Batches of binary trees: the design source's ``Tree`` applicative, on tensors.

The design source (Part 6)::

    data Tree l = Node (Tree l) (Tree l) | Leaf l
    pure x = Leaf x
    pair (Node la ra) (Node lb rb) = Node (pair la lb) (pair ra rb)
    pair (Node l r)   (Leaf x)     = Node (fmap (,x) l) (fmap (,x) r)
    pair (Leaf x)     (Node l r)   = Node (fmap (x,) l) (fmap (x,) r)
    pair (Leaf x)     (Leaf y)     = Leaf (x, y)
    counit (Node l r) = counit l + counit r;   counit (Leaf x) = x

A :class:`Tree` is one axis of a :class:`~applicative.Field`: a batch of
trees, ragged across the batch, whose leaves hold the values stored along
that axis (scalars, or inner structures on the axes after it). Trees are
dyadic partitions of ``[0, 1)`` (see ``instances._tree_partition``):
``pair`` is the common refinement -- the merge of two sorted lists of
breakpoints -- followed by a gather that copies each leaf's value down, so
``pair``, ``zip_with``, ``fmap`` and ``counit`` are a handful of batched
tensor operations and memory is linear in the number of leaves. The merge
is a compiled two-pointer walk on the CPU (``instances._tree_linear_merge``)
and one batched sort elsewhere (``instances._tree_partition.merge``); the
two give identical results.

The counit is a node algebra, chosen per tree (:class:`NodeAlgebra`):

* ``SUM`` -- the design source's ``counit (Node l r) = counit l + counit r``:
  the counting measure on leaves;
* ``MEAN`` -- ``counit (Node l r) = (counit l + counit r) / 2``: a leaf at depth
  ``d`` weighs ``2^-d``, i.e. Lebesgue measure on the partition. It is a
  probability measure (Kraft: ``Σ 2^-d = 1``) and refinement preserves it, so
  attention over a ``MEAN`` tree sees the structure through the additive bias
  ``log w = -d log 2``. Over a ring other than the reals it needs a ``1/2``:
  idempotent semirings (max-plus, min-plus) have ``1/2 = one``.

Batch alignment. A tree's batch axes line up with the *leading* axes of the
tensors it acts on (the untyped batch of a field); typed axes between the
batch and the tree axis -- outer structures, attention heads, query
positions -- all see the same tree. Two trees' batch shapes broadcast
left-aligned (missing trailing axes count as 1), so ``unsqueeze_batch(-1)``
is the identity. A tensor with fewer leading axes than the tree's batch (a
parameter, say) is shared by every tree.

Padding positions (beyond a tree's leaf count) hold arbitrary values: the
counit, softmax and attention bias mask them. Fused attention reads them as
values with weight zero, so keep them finite (they are, when computed by a
model from finite inputs).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import ClassVar, TypeVar, final

import torch
from torch import Tensor

from applicative import DataStructure, Field

from . import _tree_ops as ops
from ._tree_convert import Nested
from ._tree_partition import MAX_DEPTH, SENTINEL, NodeAlgebra, from_depths

L = TypeVar("L")

__all__ = ["MAX_DEPTH", "NodeAlgebra", "Tree", "tree_field"]


@final
class Tree(DataStructure):
    """A batch of binary trees as one field axis of size ``N`` (the largest leaf count).

    Construct from leaf depths (``Tree(depth)``), nested tuples
    (:meth:`from_nested`) or s-expressions (:meth:`from_sexp`). The contract is
    written here (per-example data, the measure); pairing, batching and the
    conversions are free functions in ``instances._tree_ops``.

    Args:
        depth: ``(*batch, N)`` integer tensor: each tree's leaf depths, left to
            right, padded with ``-1``. ``[1, 2, 2]`` is ``(a, (b, c))``.
        algebra: the counit's node algebra (default ``SUM``).

    Raises:
        StructureError: if a row is not the leaf depths of a full binary tree.
    """

    tensors: ClassVar[tuple[str, ...]] = ("start", "depth")
    mask: Tensor
    algebra: NodeAlgebra
    _start: Tensor | None
    _depth: Tensor | None
    _sources: list[tuple[Tree, Tensor]]
    _last_join: tuple[Tree, Tree] | None

    def __init__(self, depth: Tensor | Sequence[object], algebra: NodeAlgebra = NodeAlgebra.SUM) -> None:
        start, d = from_depths(depth)
        self.fill(start, d, algebra)

    def fill(
        self,
        start: Tensor | None,
        depth: Tensor | None,
        algebra: NodeAlgebra,
        mask: Tensor | None = None,
        sources: list[tuple[Tree, Tensor]] | None = None,
    ) -> Tree:
        """Set the fields from already valid tensors (no checks; for the constructors in ``instances._tree_ops``).

        A refinement leaves ``start`` and ``depth`` to its ``sources``: (source, index into the source's leaves)
        for the trees it was built to refine.
        """
        self._start, self._depth, self.algebra = start, depth, algebra
        if mask is None:
            assert start is not None
            mask = start != SENTINEL
        self.mask, self.size = mask, mask.shape[-1]
        self._sources = sources or []
        # The last join, keyed by the other tree's identity: the joined tree is a pure function of the two
        # (immutable) trees, so the cache cannot change a result; it keeps a join's result the *same* object
        # across the calls of one layer (equality compares tensors by identity) and saves the merge sort.
        self._last_join = None
        return self

    @property
    def start(self) -> Tensor:
        """``(*batch, N)`` sorted left breakpoints over ``2^MAX_DEPTH`` (``SENTINEL`` at padding; lazy: refinements)."""
        if self._start is None:
            self._start = ops.from_sources(self, "start")
        return self._start

    @property
    def depth(self) -> Tensor:
        """``(*batch, N)`` leaf depths (``0`` at padding; lazy in a refinement)."""
        if self._depth is None:
            self._depth = ops.from_sources(self, "depth")
        return self._depth

    leaf = classmethod(ops.leaf)

    @classmethod
    def from_nested(
        cls,
        trees: Sequence[Nested[L]],
        algebra: NodeAlgebra = NodeAlgebra.SUM,
        device: torch.device | str | None = None,
    ) -> tuple[Tree, list[list[L]]]:
        """A batch of trees from nested 2-tuples, and their leaves in order (see ``_tree_ops.from_nested``)."""
        return ops.from_nested(cls, trees, algebra, device)

    from_sexp = classmethod(ops.from_sexp)
    leaf_counts = ops.leaf_counts
    depths = ops.depths
    to_nested = ops.to_nested
    to_sexp = ops.to_sexp
    show = ops.show
    address = ops.address

    # ---- the contract: per-example data, the measure ------------------------------

    def with_data(self, data: tuple[Tensor, ...]) -> Tree:
        return ops.build(self, data[0], data[1])

    def static(self) -> Hashable:
        return (self.algebra, tuple(self.mask.shape))

    def __eq__(self, other: object) -> bool:
        # a refinement's breakpoints are computed lazily: never force them to compare (it is a new tree anyway)
        if self is other:
            return True
        return isinstance(other, Tree) and None not in (self._start, other._start) and super().__eq__(other)

    def __hash__(self) -> int:
        return hash((Tree, self.algebra, tuple(self.mask.shape)))

    @property
    def batch_shape(self) -> torch.Size:
        return self.mask.shape[:-1]

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log w`` at the leaves (``0``, or ``-d log 2`` for ``MEAN``), ``-inf`` at padding; ``(*batch, N)``."""
        zero = torch.zeros((), dtype=dtype, device=device)
        logw = zero if self.algebra is NodeAlgebra.SUM else -math.log(2.0) * self.depth.to(dtype)
        return torch.where(self.mask, logw, float("-inf")).to(device)

    def __repr__(self) -> str:
        return f"Tree({self.algebra.value}, batch={tuple(self.batch_shape)}, leaves<={self.size})"

    # ---- pairing and batching (instances._tree_ops) ------------------------------------------

    join = ops.join
    inner = ops.inner
    refine = ops.refine
    take = ops.take
    concat = classmethod(ops.concat)


def tree_field(
    trees: Sequence[Nested[float]],
    algebra: NodeAlgebra = NodeAlgebra.SUM,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Field[Tree]:
    """A ``Field[Tree]`` from nested tuples of numbers: tensor ``(batch, N)``, zero at padding."""
    tree, leaves = Tree.from_nested(trees, algebra, device)
    t = torch.zeros(len(leaves), tree.size, dtype=dtype, device=device)
    for i, row in enumerate(leaves):
        t[i, : len(row)] = torch.tensor(row, dtype=dtype)
    return Field(t, (tree,))
