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
counit, softmax, contractions and attention select them out before any
arithmetic, so neither they nor their gradients reach a valid output, and a
model selects them out of its input (:func:`applicative.clear_padding`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar, final

import torch
from torch import Tensor

from applicative import DataStructure, Field, Lineage, Ring, Structure

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
        lineage: Hashable | None = None,
    ) -> Tree:
        """Set the fields from already valid tensors (no checks; for the constructors in ``instances._tree_ops``).

        A refinement leaves ``start`` and ``depth`` to its ``sources``: (source, index into the source's leaves)
        for the trees it was built to refine. ``lineage``: where the data came from (``None``: new data).
        """
        self._start, self._depth, self.algebra = start, depth, algebra
        if mask is None:
            assert start is not None
            mask = start != SENTINEL
        #: ``(*batch, N)``: ``True`` at each tree's leaves, ``False`` at padding
        self.mask: Tensor = mask
        self.size = mask.shape[-1]
        self._sources: list[tuple[Tree, Tensor]] = sources or []
        # The last join, keyed by the other tree's identity: the joined tree is a pure function of the two
        # (immutable) trees, so the cache cannot change a result; it saves the merge sort across the calls
        # of one layer (equality does not need it: two joins of the same trees have one lineage).
        self._last_join: tuple[Tree, Tree] | None = None
        self._set_lineage(Lineage() if lineage is None else lineage)
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

    @classmethod
    def leaf(
        cls, batch: Sequence[int] = (), algebra: NodeAlgebra = NodeAlgebra.SUM, device: torch.device | str | None = None
    ) -> Tree:
        """Single-leaf trees (the shape of ``pure``), one per batch position ``batch``."""
        return ops.leaf(cls, batch, algebra, device)

    @classmethod
    def from_nested(
        cls,
        trees: Sequence[Nested[L]],
        algebra: NodeAlgebra = NodeAlgebra.SUM,
        device: torch.device | str | None = None,
    ) -> tuple[Tree, list[list[L]]]:
        """A batch of trees from nested 2-tuples, and their leaves in order (see ``_tree_ops.from_nested``)."""
        return ops.from_nested(cls, trees, algebra, device)

    @classmethod
    def from_sexp(
        cls, texts: Sequence[str], algebra: NodeAlgebra = NodeAlgebra.SUM, device: torch.device | str | None = None
    ) -> tuple[Tree, list[list[str]]]:
        """A batch of trees from s-expressions ``"((a b) c)"`` (every list has two items), and their atoms."""
        return ops.from_sexp(cls, texts, algebra, device)

    def leaf_counts(self) -> Tensor:
        """``(*batch,)`` number of leaves of each tree."""
        return ops.leaf_counts(self)

    def depths(self, index: int | Sequence[int] = ()) -> list[int]:
        """The leaf depths of one tree (``index`` into the batch), left to right."""
        return ops.depths(self, index)

    def to_nested(self, leaves: Sequence[L] | Tensor, index: int | Sequence[int] = ()) -> Nested[L]:
        """One tree (``index`` into the batch) as nested 2-tuples holding ``leaves`` (a sequence, or a tensor
        ``(N, ...)`` of its values)."""
        return ops.to_nested(self, leaves, index)

    def to_sexp(self, leaves: Sequence[object] | Tensor, index: int | Sequence[int] = ()) -> str:
        """One tree as an s-expression with ``leaves`` printed by ``str``."""
        return ops.to_sexp(self, leaves, index)

    def show(self, leaves: Sequence[object] | Tensor | None = None, index: int | Sequence[int] = ()) -> str:
        """A readable drawing of one tree (leaves labelled by ``leaves``, or by their depth-first number)."""
        return ops.show(self, leaves, index)

    def address(self, levels: int) -> Tensor:
        """Each leaf's path from the root: ``(*batch, N, levels)``, ``+1`` right / ``-1`` left / ``0`` below the leaf.

        A positional encoding for tree models (``0`` at padding).

        Raises:
            StructureError: unless ``1 <= levels <=`` :data:`MAX_DEPTH`.
        """
        return ops.address(self, levels)

    # ---- the contract: per-example data, the measure ------------------------------

    def data(self) -> tuple[Tensor, ...]:
        """``(start, depth)``: the breakpoints and leaf depths (a refinement's are computed now, if not yet)."""
        return (self.start, self.depth)

    def with_data(self, data: tuple[Tensor, ...]) -> Tree:
        return ops.build(self, data[0], data[1])

    def static(self) -> Hashable:
        return (self.algebra, tuple(self.mask.shape))

    def __eq__(self, other: object) -> bool:
        """Same node algebra and shape, and the same data: one lineage, or the very same breakpoints.

        A refinement's breakpoints are computed lazily: they are never forced to compare.
        """
        if self is other:
            return True
        if not isinstance(other, Tree) or self.static() != other.static():
            return False
        if self.lineage == other.lineage:
            return True
        start, depth = self._start, self._depth
        return start is not None and start is other._start and depth is other._depth

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

    def join(self, other: Structure, op: str) -> Structure:
        """The common refinement of the two batches of trees (their batches broadcast, left-aligned).

        Raises:
            StructureError: if ``other`` is not a tree with the same node algebra, or the batches do not broadcast.
        """
        return ops.join(self, other, op)

    def inner(self, other: Structure, a: Tensor, b: Tensor, ring: Ring) -> Tensor | None:
        """``counit (zip_with mul a b)`` in one compiled walk of both partitions (CPU, real ring), else ``None``."""
        return ops.inner(self, other, a, b, ring)

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        """Copy each leaf's value down to the leaves of ``target`` inside it (``target`` must refine this tree)."""
        return ops.refine(self, x, dim, target)

    def take(self, x: Tensor, dim: int, index: Tensor | None) -> Tensor:
        """Gather along the tree axis ``dim`` of ``x`` at per-tree positions ``index`` ``(*batch, M)``.

        ``index=None`` keeps the real leaves and zeroes the padding (a canonical form for comparisons).
        """
        return ops.take(self, x, dim, index)

    @classmethod
    def concat(cls, structures: Sequence[Tree]) -> Tree:
        """Batches of trees joined along their first batch axis, padded to the largest leaf count."""
        return ops.concat(cls, structures)


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
