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
dyadic partitions of ``[0, 1)`` (see :mod:`instances._tree_partition`):
``pair`` is the common refinement -- the merge of two sorted lists of
breakpoints -- followed by a gather that copies each leaf's value down, so
``pair``, ``zip_with``, ``fmap`` and ``counit`` are a handful of batched
tensor operations and memory is linear in the number of leaves. The merge
is a compiled two-pointer walk on the CPU (:mod:`instances._tree_linear_merge`)
and one batched sort elsewhere (:func:`instances._tree_partition.merge`); the
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

import enum
import math
from collections.abc import Hashable, Sequence
from typing import TypeVar, final

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Field, Ring, Structure, StructureError
from applicative.tensors import aligned, broadcast_batch, pad_before

from . import _tree_convert as convert
from ._tree_partition import (
    MAX_DEPTH,
    SENTINEL,
    address_bits,
    check_tree_index,
    containing,
    from_depths,
    is_refinement,
    merge,
)

L = TypeVar("L")

__all__ = ["MAX_DEPTH", "NodeAlgebra", "Tree", "tree_field"]


class NodeAlgebra(enum.Enum):
    """How a tree's counit combines the two children of a node."""

    #: ``counit l + counit r`` -- every leaf weighs 1
    SUM = "sum"
    #: ``(counit l + counit r) / 2`` -- a leaf at depth ``d`` weighs ``2^-d``
    MEAN = "mean"


@final
class Tree(Structure):
    """A batch of binary trees as one field axis of size ``N`` (the largest leaf count).

    Construct from leaf depths (``Tree(depth)``), nested tuples
    (:meth:`from_nested`) or s-expressions (:meth:`from_sexp`).

    Args:
        depth: ``(*batch, N)`` integer tensor: each tree's leaf depths, left to
            right, padded with ``-1``. ``[1, 2, 2]`` is ``(a, (b, c))``.
        algebra: the counit's node algebra (default ``SUM``).

    Raises:
        StructureError: if a row is not the leaf depths of a full binary tree.
    """

    mask: Tensor
    algebra: NodeAlgebra

    def __init__(self, depth: Tensor | Sequence[object], algebra: NodeAlgebra = NodeAlgebra.SUM) -> None:
        start, d = from_depths(depth)
        self._set(start, d, algebra)

    def _set(
        self,
        start: Tensor | None,
        depth: Tensor | None,
        algebra: NodeAlgebra,
        mask: Tensor | None = None,
        sources: list[tuple[Tree, Tensor]] | None = None,
    ) -> None:
        self._start, self._depth, self.algebra = start, depth, algebra
        if mask is None:
            assert start is not None
            mask = start != SENTINEL
        self.mask = mask
        self.size = mask.shape[-1]
        # (source, index into the source's leaves) for the trees this one was built to refine
        self._sources: list[tuple[Tree, Tensor]] = sources or []
        # The last join, keyed by the other tree's identity: the joined tree is a pure function of the two
        # (immutable) trees, so the cache cannot change a result; it keeps a join's result the *same* object
        # across the calls of one layer (equality compares tensors by identity) and saves the merge sort.
        self._last_join: tuple[Tree, Tree] | None = None

    @classmethod
    def _of(
        cls,
        start: Tensor | None,
        depth: Tensor | None,
        algebra: NodeAlgebra,
        mask: Tensor | None = None,
        sources: list[tuple[Tree, Tensor]] | None = None,
    ) -> Tree:
        """A tree from already valid stored tensors (no checks); a refinement may leave ``start`` to its sources."""
        t = cls.__new__(cls)
        t._set(start, depth, algebra, mask, sources)
        return t

    def _from_sources(self, of: str) -> Tensor:
        """A refined leaf's ``start`` / ``depth``: the larger of those of the two leaves containing it."""
        batch = tuple(self.batch_shape)
        (a, ia), (b, ib) = self._sources
        ta = torch.gather(_expand(getattr(a, of), batch), -1, ia)
        tb = torch.gather(_expand(getattr(b, of), batch), -1, ib)
        return torch.where(self.mask, torch.maximum(ta, tb), SENTINEL if of == "start" else 0)

    @property
    def start(self) -> Tensor:
        """``(*batch, N)`` sorted left breakpoints over ``2^MAX_DEPTH`` (``SENTINEL`` at padding).

        A refinement computes it on first use: a refined leaf starts where the
        later of the two leaves containing it starts.
        """
        if self._start is None:
            self._start = self._from_sources("start")
        return self._start

    @property
    def depth(self) -> Tensor:
        """``(*batch, N)`` leaf depths (``0`` at padding).

        A refinement computes it on first use: the deeper of the two leaves
        containing each refined leaf.
        """
        if self._depth is None:
            self._depth = self._from_sources("depth")
        return self._depth

    # ---- construction and conversion ----------------------------------------

    @classmethod
    def leaf(
        cls, batch: Sequence[int] = (), algebra: NodeAlgebra = NodeAlgebra.SUM, device: torch.device | str | None = None
    ) -> Tree:
        """Single-leaf trees (the shape of ``pure``), one per batch position."""
        return cls(torch.zeros((*batch, 1), dtype=torch.int64, device=device), algebra)

    @classmethod
    def from_nested(
        cls,
        trees: Sequence[convert.Nested[L]],
        algebra: NodeAlgebra = NodeAlgebra.SUM,
        device: torch.device | str | None = None,
    ) -> tuple[Tree, list[list[L]]]:
        """A batch of trees from nested 2-tuples (anything not a tuple is a leaf), and their leaves in order.

        ``Tree.from_nested([((1, 2), 3), 4])`` has batch ``(2,)`` and leaves
        ``[[1, 2, 3], [4]]``.
        """
        leaves, depths = convert.flatten_all(trees, MAX_DEPTH)
        n = max(len(d) for d in depths)
        padded = [d + [-1] * (n - len(d)) for d in depths]
        return cls(torch.tensor(padded, dtype=torch.int64, device=device), algebra), leaves

    @classmethod
    def from_sexp(
        cls, texts: Sequence[str], algebra: NodeAlgebra = NodeAlgebra.SUM, device: torch.device | str | None = None
    ) -> tuple[Tree, list[list[str]]]:
        """A batch of trees from s-expressions ``"((a b) c)"`` (every list has two items), and their atoms."""
        return cls.from_nested(convert.parse_all(texts), algebra, device)

    def leaf_counts(self) -> Tensor:
        """``(*batch,)`` number of leaves of each tree."""
        return self.mask.sum(-1)

    def depths(self, index: int | Sequence[int] = ()) -> list[int]:
        """The leaf depths of one tree (``index`` into the batch)."""
        i = (index,) if isinstance(index, int) else tuple(index)
        check_tree_index("Tree.depths", i, tuple(self.batch_shape))
        out: list[int] = self.depth[i][self.mask[i]].tolist()
        return out

    def to_nested(self, leaves: Sequence[L] | Tensor, index: int | Sequence[int] = ()) -> convert.Nested[L]:
        """One tree as nested 2-tuples holding ``leaves`` (a sequence, or a tensor ``(N, ...)`` of its values)."""
        d = self.depths(index)
        vals = leaves[: len(d)]
        if isinstance(vals, Tensor):
            vals = [v.item() if v.ndim == 0 else v for v in vals]
        return convert.build(d, list(vals))

    def to_sexp(self, leaves: Sequence[object] | Tensor, index: int | Sequence[int] = ()) -> str:
        """One tree as an s-expression with ``leaves`` printed by ``str``."""
        return convert.to_sexp(self.to_nested(leaves, index))

    def show(self, leaves: Sequence[object] | Tensor | None = None, index: int | Sequence[int] = ()) -> str:
        """A readable drawing of one tree (leaves labelled by ``leaves``, or by their depth-first number)."""
        labels = list(range(len(self.depths(index)))) if leaves is None else leaves
        return convert.pretty(self.to_nested(labels, index))

    def address(self, levels: int) -> Tensor:
        """Each leaf's path from the root: ``(*batch, N, levels)``, ``+1`` right / ``-1`` left / ``0`` below the leaf.

        A positional encoding for tree models (``0`` at padding).
        """
        if not 0 < levels <= MAX_DEPTH:
            raise StructureError(f"Tree.address: levels must lie in [1, {MAX_DEPTH}], got {levels}")
        return address_bits(self.start, self.depth, levels)

    # ---- the contract: per-example data, the measure ------------------------------

    def data(self) -> tuple[Tensor, ...]:
        return (self.start, self.depth)

    def with_data(self, data: tuple[Tensor, ...]) -> Tree:
        return Tree._of(data[0], data[1], self.algebra)

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

    @classmethod
    def concat(cls, structures: Sequence[Tree]) -> Tree:
        """Batches of trees joined along their first batch axis, padded to the largest leaf count."""
        first = structures[0]
        if all(t is first for t in structures) and not first.batch_shape:  # one tree shared by every example
            return first
        if any(not isinstance(t, Tree) or t.algebra is not first.algebra or not t.batch_shape for t in structures):
            raise StructureError(
                f"cannot concatenate {[repr(t) for t in structures][:3]}: trees need one node algebra and a batch axis"
            )
        n = max(t.size for t in structures)
        start = torch.cat([nnf.pad(t.start, (0, n - t.size), value=SENTINEL) for t in structures], 0)
        depth = torch.cat([nnf.pad(t.depth, (0, n - t.size), value=0) for t in structures], 0)
        return Tree._of(start, depth, first.algebra)

    def __repr__(self) -> str:
        return f"Tree({self.algebra.value}, batch={tuple(self.batch_shape)}, leaves<={self.size})"

    # ---- Applicative ----------------------------------------------------------

    def join(self, other: Structure, op: str) -> Structure:
        """The common refinement of the two batches of trees."""
        if not isinstance(other, Tree) or other.algebra is not self.algebra:
            raise StructureError(
                f"{op}: cannot pair {self!r} with {other!r}: both must be trees with the same node algebra"
            )
        compiling = torch.compiler.is_compiling()
        if not compiling and self._last_join is not None and self._last_join[0] is other:
            return self._last_join[1]
        batch = broadcast_batch(self.batch_shape, other.batch_shape)
        if batch is None:
            raise StructureError(
                f"{op}: tree batches {tuple(self.batch_shape)} and {tuple(other.batch_shape)} do not broadcast"
            )
        a, b = _expand(self.start, batch), _expand(other.start, batch)
        if compiling:  # traceable: one batched sort, padded to the static bound Na + Nb (no host sync)
            start, ia, ib, mask = merge(a, b, static=True)
        elif a.device.type == "cpu":  # a compiled linear merge; its refined breakpoints are computed when asked for
            from ._tree_linear_merge import merge_linear  # numba: imported when first needed

            start, (ia, ib, mask) = None, merge_linear(a, b)
        else:  # one batched sort (the same results)
            start, ia, ib, mask = merge(a, b)
        out = Tree._of(start, None, self.algebra, mask, [(self, ia), (other, ib)])
        if not compiling:
            self._last_join = (other, out)
        return out

    def inner(self, other: Structure, a: Tensor, b: Tensor, ring: Ring) -> Tensor | None:
        """``counit (zip_with mul a b)`` in one compiled walk of both partitions (CPU, real ring), else ``None``."""
        if (
            not ring.has("has_exp", "ordered")
            or not isinstance(other, Tree)
            or other.algebra is not self.algebra
            or torch.compiler.is_compiling()
            or broadcast_batch(self.batch_shape, other.batch_shape) is None
        ):
            return None
        from ._tree_inner import inner_linear  # numba: imported when first needed

        mean = self.algebra is NodeAlgebra.MEAN
        return inner_linear(self.start, other.start, self.depth if mean else None, other.depth if mean else None, a, b)

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        """Copy each leaf's value down to the leaves of ``target`` inside it (``target`` must refine ``self``)."""
        if target is self:
            return x
        if not isinstance(target, Tree) or target.algebra is not self.algebra:
            raise StructureError(f"cannot refine {self!r} to {target!r}: not a tree with the same node algebra")
        index = next((i for s, i in target._sources if s is self), None)
        if index is None:
            batch = broadcast_batch(self.batch_shape, target.batch_shape)
            if batch is None or tuple(batch) != tuple(target.batch_shape):
                raise StructureError(f"cannot refine {self!r} to {target!r}: batch shapes do not match")
            start = _expand(self.start, batch)
            if not bool(is_refinement(start, target.start).all()):
                raise StructureError(f"cannot refine {self!r} to {target!r}: some target tree does not refine it")
            index = containing(start, target.start)
        return self.take(x, dim, index)

    def take(self, x: Tensor, dim: int, index: Tensor | None) -> Tensor:
        """Gather along the tree axis ``dim`` of ``x`` at per-tree positions ``index`` ``(*batch, M)``.

        ``index=None`` keeps the real leaves and zeroes the padding (a canonical form for comparisons).
        """
        d = dim % x.ndim
        if index is None:
            x, d = pad_before(x, d, len(self.batch_shape))
            return torch.where(aligned(self.mask, d, x.ndim - d - 1), x, 0)
        x, d = pad_before(x, d, index.ndim - 1)
        idx = aligned(index, d, x.ndim - d - 1)
        # gather needs equal ranks and no broadcasting: expand both (views) to the common shape
        shape = [max(i, j) for i, j in zip(x.shape, idx.shape, strict=True)]
        shape[d] = x.shape[d]
        xs = x.expand(shape)
        shape[d] = idx.shape[d]
        return torch.gather(xs, d, idx.expand(shape))


def _expand(t: Tensor, batch: tuple[int, ...]) -> Tensor:
    """Per-tree data ``(*b, N)`` broadcast left-aligned to ``(*batch, N)``."""
    q = t.ndim - 1
    return t.reshape(*t.shape[:-1], *([1] * (len(batch) - q)), t.shape[-1]).expand(*batch, t.shape[-1])


def tree_field(
    trees: Sequence[convert.Nested[float]],
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
