"""The kernels and conversions of :class:`~instances.Tree`, as free functions of its contract.

A tree's contract is its per-example data -- sorted left breakpoints ``start`` and leaf
depths ``depth``, ``(*batch, N)``, with a validity ``mask`` -- and its node algebra. What
pairing needs (:func:`join`, :func:`refine`, :func:`take`, the fused :func:`inner`), batching
(:func:`concat`) and the conversions to and from nested tuples and s-expressions are written
here against that; the class (:mod:`instances.tree`) is a shell whose methods are these.

A refinement (the result of :func:`join`) knows its mask and, for each of its two sources,
the index of the source leaf containing each of its leaves; its ``start`` and ``depth`` are
computed from those on first use (:func:`from_sources`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, TypeVar

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Capability, Ring, Structure, StructureError
from applicative.tensors import aligned, broadcast_batch, pad_before

from . import _tree_convert as convert
from ._tree_partition import (
    MAX_DEPTH,
    SENTINEL,
    NodeAlgebra,
    address_bits,
    check_tree_index,
    containing,
    is_refinement,
    merge,
)

if TYPE_CHECKING:
    from .tree import Tree

L = TypeVar("L")


# ---- construction --------------------------------------------------------------------------


def build(
    like: Tree,
    start: Tensor | None,
    depth: Tensor | None,
    mask: Tensor | None = None,
    sources: list[tuple[Tree, Tensor]] | None = None,
    lineage: Hashable | None = None,
) -> Tree:
    """A new tree of ``like``'s class and node algebra from already valid tensors (no checks).

    ``lineage``: where its data came from (``None``: new data; see :attr:`applicative.DataStructure.lineage`).
    """
    return object.__new__(type(like)).fill(start, depth, like.algebra, mask, sources, lineage)


def from_sources(t: Tree, of: str) -> Tensor:
    """A refined leaf's ``start`` / ``depth``: the larger of those of the two leaves containing it."""
    batch = tuple(t.batch_shape)
    (a, ia), (b, ib) = t._sources
    ta = torch.gather(expand(getattr(a, of), batch), -1, ia)
    tb = torch.gather(expand(getattr(b, of), batch), -1, ib)
    return torch.where(t.mask, torch.maximum(ta, tb), SENTINEL if of == "start" else 0)


def expand(t: Tensor, batch: tuple[int, ...]) -> Tensor:
    """Per-tree data ``(*b, N)`` broadcast left-aligned to ``(*batch, N)``."""
    q = t.ndim - 1
    return t.reshape(*t.shape[:-1], *([1] * (len(batch) - q)), t.shape[-1]).expand(*batch, t.shape[-1])


def concat(cls: type[Tree], structures: Sequence[Tree]) -> Tree:
    """Batches of trees joined along their first batch axis, padded to the largest leaf count."""
    first = structures[0]
    if all(t is first for t in structures) and not first.batch_shape:  # one tree shared by every example
        return first
    if any(type(t) is not cls or t.algebra is not first.algebra or not t.batch_shape for t in structures):
        raise StructureError(
            f"cannot concatenate {[repr(t) for t in structures][:3]}: trees need one node algebra and a batch axis"
        )
    n = max(t.size for t in structures)
    start = torch.cat([nnf.pad(t.start, (0, n - t.size), value=SENTINEL) for t in structures], 0)
    depth = torch.cat([nnf.pad(t.depth, (0, n - t.size), value=0) for t in structures], 0)
    return build(first, start, depth)


# ---- pairing ----------------------------------------------------------------------------------


def _same_kind(a: Tree, other: Structure) -> bool:
    return type(other) is type(a) and other.algebra is a.algebra


def join(a: Tree, other: Structure, op: str) -> Structure:
    """The common refinement of the two batches of trees."""
    if not _same_kind(a, other):
        raise StructureError(f"{op}: cannot pair {a!r} with {other!r}: both must be trees with the same node algebra")
    b: Tree = other  # type: ignore[assignment]
    compiling = torch.compiler.is_compiling()
    if not compiling and a._last_join is not None and a._last_join[0] is b:
        return a._last_join[1]
    batch = broadcast_batch(a.batch_shape, b.batch_shape)
    if batch is None:
        raise StructureError(f"{op}: tree batches {tuple(a.batch_shape)} and {tuple(b.batch_shape)} do not broadcast")
    sa, sb = expand(a.start, batch), expand(b.start, batch)
    if compiling:  # traceable: one batched sort, padded to the static bound Na + Nb (no host sync)
        start, ia, ib, mask = merge(sa, sb, static=True)
    elif sa.device.type == "cpu":  # a compiled linear merge; its refined breakpoints are computed when asked for
        from ._tree_linear_merge import merge_linear  # numba: imported when first needed

        start, (ia, ib, mask) = None, merge_linear(sa, sb)
    else:  # one batched sort (the same results)
        start, ia, ib, mask = merge(sa, sb)
    out = build(a, start, None, mask, [(a, ia), (b, ib)], (a.lineage, ("join", b.lineage)))
    if not compiling:
        a._last_join = (b, out)
    return out


def inner(s: Tree, other: Structure, a: Tensor, b: Tensor, ring: Ring) -> Tensor | None:
    """``counit (zip_with mul a b)`` in one compiled walk of both partitions (CPU, real ring), else ``None``."""
    if not ring.has(Capability.SOFTMAX) or not _same_kind(s, other) or torch.compiler.is_compiling():
        return None
    t: Tree = other  # type: ignore[assignment]
    if broadcast_batch(s.batch_shape, t.batch_shape) is None:
        return None
    from ._tree_inner import inner_linear  # numba: imported when first needed

    mean = s.algebra is NodeAlgebra.MEAN
    return inner_linear(s.start, t.start, s.depth if mean else None, t.depth if mean else None, a, b)


def refine(a: Tree, x: Tensor, dim: int, target: Structure) -> Tensor:
    """Copy each leaf's value down to the leaves of ``target`` inside it (``target`` must refine ``a``)."""
    if target is a:
        return x
    if not _same_kind(a, target):
        raise StructureError(f"cannot refine {a!r} to {target!r}: not a tree with the same node algebra")
    t: Tree = target  # type: ignore[assignment]
    index = next((i for s, i in t._sources if s is a), None)
    if index is None:
        batch = broadcast_batch(a.batch_shape, t.batch_shape)
        if batch is None or tuple(batch) != tuple(t.batch_shape):
            raise StructureError(f"cannot refine {a!r} to {t!r}: batch shapes do not match")
        start = expand(a.start, batch)
        if not bool(is_refinement(start, t.start).all()):
            raise StructureError(f"cannot refine {a!r} to {t!r}: some target tree does not refine it")
        index = containing(start, t.start)
    return take(a, x, dim, index)


def take(a: Tree, x: Tensor, dim: int, index: Tensor | None) -> Tensor:
    """Gather along the tree axis ``dim`` of ``x`` at per-tree positions ``index`` ``(*batch, M)``.

    ``index=None`` keeps the real leaves and zeroes the padding (a canonical form for comparisons).
    """
    d = dim % x.ndim
    if index is None:
        x, d = pad_before(x, d, len(a.batch_shape))
        return torch.where(aligned(a.mask, d, x.ndim - d - 1), x, 0)
    x, d = pad_before(x, d, index.ndim - 1)
    idx = aligned(index, d, x.ndim - d - 1)
    # gather needs equal ranks and no broadcasting: expand both (views) to the common shape
    shape = [max(i, j) for i, j in zip(x.shape, idx.shape, strict=True)]
    shape[d] = x.shape[d]
    xs = x.expand(shape)
    shape[d] = idx.shape[d]
    return torch.gather(xs, d, idx.expand(shape))


# ---- conversions ------------------------------------------------------------------------------


def leaf(
    cls: type[Tree],
    batch: Sequence[int] = (),
    algebra: NodeAlgebra = NodeAlgebra.SUM,
    device: torch.device | str | None = None,
) -> Tree:
    """Single-leaf trees (the shape of ``pure``), one per batch position."""
    return cls(torch.zeros((*batch, 1), dtype=torch.int64, device=device), algebra)


def from_sexp(
    cls: type[Tree],
    texts: Sequence[str],
    algebra: NodeAlgebra = NodeAlgebra.SUM,
    device: torch.device | str | None = None,
) -> tuple[Tree, list[list[str]]]:
    """A batch of trees from s-expressions ``"((a b) c)"`` (every list has two items), and their atoms."""
    return from_nested(cls, convert.parse_all(texts), algebra, device)


def from_nested(
    cls: type[Tree],
    trees: Sequence[convert.Nested[L]],
    algebra: NodeAlgebra = NodeAlgebra.SUM,
    device: torch.device | str | None = None,
) -> tuple[Tree, list[list[L]]]:
    """A batch of trees from nested 2-tuples (anything not a tuple is a leaf), and their leaves in order.

    ``Tree.from_nested([((1, 2), 3), 4])`` has batch ``(2,)`` and leaves ``[[1, 2, 3], [4]]``.
    """
    leaves, depths = convert.flatten_all(trees, MAX_DEPTH)
    n = max(len(d) for d in depths)
    depth = torch.tensor([d + [-1] * (n - len(d)) for d in depths], dtype=torch.int64, device=device)
    return cls(depth, algebra), leaves


def leaf_counts(t: Tree) -> Tensor:
    """``(*batch,)`` number of leaves of each tree."""
    return t.mask.sum(-1)


def depths(t: Tree, index: int | Sequence[int] = ()) -> list[int]:
    """The leaf depths of one tree (``index`` into the batch)."""
    i = (index,) if isinstance(index, int) else tuple(index)
    check_tree_index("Tree.depths", i, tuple(t.batch_shape))
    out: list[int] = t.depth[i][t.mask[i]].tolist()
    return out


def to_nested(t: Tree, leaves: Sequence[L] | Tensor, index: int | Sequence[int] = ()) -> convert.Nested[L]:
    """One tree as nested 2-tuples holding ``leaves`` (a sequence, or a tensor ``(N, ...)`` of its values)."""
    d = depths(t, index)
    vals = leaves[: len(d)]
    if isinstance(vals, Tensor):
        vals = [v.item() if v.ndim == 0 else v for v in vals]
    return convert.build(d, list(vals))


def to_sexp(t: Tree, leaves: Sequence[object] | Tensor, index: int | Sequence[int] = ()) -> str:
    """One tree as an s-expression with ``leaves`` printed by ``str``."""
    return convert.to_sexp(to_nested(t, leaves, index))


def show(t: Tree, leaves: Sequence[object] | Tensor | None = None, index: int | Sequence[int] = ()) -> str:
    """A readable drawing of one tree (leaves labelled by ``leaves``, or by their depth-first number)."""
    labels = list(range(len(depths(t, index)))) if leaves is None else leaves
    return convert.pretty(to_nested(t, labels, index))


def address(t: Tree, levels: int) -> Tensor:
    """Each leaf's path from the root: ``(*batch, N, levels)``, ``+1`` right / ``-1`` left / ``0`` below the leaf.

    A positional encoding for tree models (``0`` at padding).
    """
    if not 0 < levels <= MAX_DEPTH:
        raise StructureError(f"Tree.address: levels must lie in [1, {MAX_DEPTH}], got {levels}")
    return address_bits(t.start, t.depth, levels)
