"""Binary trees as dyadic partitions of ``[0, 1)``: the batched tensor kernels.

A full binary tree is the same thing as a partition of ``[0, 1)`` into aligned
dyadic intervals ``[k 2^-d, (k + 1) 2^-d)``: the root is ``[0, 1)``, a node's
children are its two halves, and the leaves, read left to right, are the
cells of the partition. A leaf at depth ``d`` is a cell of length ``2^-d``.

Stored, per tree, with numerators over ``2^MAX_DEPTH`` (exact ``int64``):

* ``start`` ``(*batch, N)`` -- the sorted left breakpoints of the cells,
* ``depth`` ``(*batch, N)`` -- each cell's depth,

padded to the batch's largest leaf count ``N`` with ``start = SENTINEL``
(``= 2^MAX_DEPTH``, past the end of every tree) and ``depth = 0``. Memory is
linear in the number of leaves, whatever the depth.

The design source's ``pair`` takes the *common refinement* of two trees --
the smallest tree containing both -- copying a leaf's value down the subtree
the other tree has in its place. On partitions that is:

* common refinement = the sorted union of the two sets of breakpoints (one
  batched ``sort`` of the concatenation, a duplicate mask, one scatter to
  compact);
* a refined leaf's value = the value of the old leaf that contains it, whose
  index is a running count over the sorted union (how many old breakpoints
  are ``<=`` the new one, minus one), then gathered; its depth = the larger
  of the two containing leaves' depths (computed only when asked for).
  Refining onto a tree not built by a merge uses ``searchsorted`` instead.

Everything here is a few batched tensor operations (CPU or CUDA); the only
host synchronisation is reading the refined tree's padded size. On the CPU
:class:`~instances.Tree` merges with the compiled linear walk of
:mod:`instances._tree_linear_merge` instead, which gives the same results.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import torch
from torch import Tensor

from applicative import StructureError
from applicative.tensors import summary


class NodeAlgebra(enum.Enum):
    """How a tree's counit combines the two children of a node."""

    #: ``counit l + counit r`` -- every leaf weighs 1
    SUM = "sum"
    #: ``(counit l + counit r) / 2`` -- a leaf at depth ``d`` weighs ``2^-d``
    MEAN = "mean"


#: deepest leaf a tree may have; breakpoints are numerators over ``2^MAX_DEPTH``
MAX_DEPTH = 62
#: padding breakpoint: ``2^MAX_DEPTH``, the right end of ``[0, 1)``
SENTINEL = 1 << MAX_DEPTH


def lengths(depth: Tensor) -> Tensor:
    """Cell lengths ``2^(MAX_DEPTH - depth)`` as ``int64`` numerators."""
    one = torch.ones((), dtype=torch.int64, device=depth.device)
    return torch.bitwise_left_shift(one, MAX_DEPTH - depth)


def from_depths(depth: Tensor | Sequence[object]) -> tuple[Tensor, Tensor]:
    """Breakpoints of trees given by their leaf depths, validated.

    Args:
        depth: ``(*batch, N)`` integer leaf depths left to right, ``-1`` at
            (trailing) padding positions: a tensor, or nested lists of ints.

    Returns:
        ``(start, depth)`` in the stored form (``SENTINEL`` / ``0`` padding).

    Raises:
        StructureError: if some row is not the leaf-depth sequence of a full
            binary tree of depth ``<= MAX_DEPTH``.
    """
    depth = as_depth_tensor(depth)
    if depth.dtype.is_floating_point or depth.dtype.is_complex or depth.dtype == torch.bool:
        raise StructureError(f"Tree: leaf depths must be an integer tensor, got dtype {depth.dtype}")
    if depth.ndim < 1 or depth.shape[-1] < 1:
        raise StructureError(f"Tree: leaf depths need shape (*batch, leaves >= 1), got {tuple(depth.shape)}")
    depth = depth.to(torch.int64)
    mask = depth >= 0
    problems = []
    if bool((depth < -1).any()) or bool((depth > MAX_DEPTH).any()):
        problems.append(f"depths must lie in [0, {MAX_DEPTH}] (or be -1 for padding)")
    elif bool((mask[..., 1:] & ~mask[..., :-1]).any()):
        problems.append("padding (-1) may only come after all of a tree's leaves")
    elif not bool(mask[..., 0].all()):
        problems.append("every tree needs at least one leaf")
    if problems:
        raise StructureError(f"Tree: invalid leaf depths {_row_hint(depth)}: {problems[0]}")
    d = torch.where(mask, depth, MAX_DEPTH)
    length = torch.where(mask, lengths(d), 0)
    end = torch.cumsum(length, -1)  # first overflow past 2^62 shows as > SENTINEL or negative
    start = end - length
    ok = ((end > 0) & (end <= SENTINEL) & (start % torch.where(mask, length, 1) == 0)) | ~mask
    total = end[..., -1]
    if not bool(ok.all()) or not bool((total == SENTINEL).all()):
        bad = (~ok.all(-1)) | (total != SENTINEL)
        raise StructureError(
            f"Tree: leaf depths {_row_hint(depth, bad)} are not those of a full binary tree: "
            "each leaf of depth d must start at a multiple of 2^-d and the leaves' lengths 2^-d must sum to 1 "
            "(e.g. [1, 2, 2] is ((.) (. .)); [1, 2] is not a tree)"
        )
    return torch.where(mask, start, SENTINEL), torch.where(mask, depth, 0)


def as_depth_tensor(depth: object) -> Tensor:
    """Leaf depths as a tensor: a tensor as it is, nested lists of ints converted (``int64``)."""
    if isinstance(depth, Tensor):
        return depth
    if not isinstance(depth, Sequence) or isinstance(depth, str | bytes):
        raise StructureError(
            f"Tree: leaf depths must be an integer tensor or nested lists of ints, got {type(depth).__name__} "
            f"{summary(depth, 60)}; e.g. Tree(torch.tensor([[1, 2, 2], [1, 1, -1]]))"
        )
    try:
        t = torch.tensor(depth)
    except (TypeError, ValueError, RuntimeError) as e:
        raise StructureError(
            f"Tree: leaf depths {summary(depth, 60)} are not a rectangular array of ints ({e}); "
            "pad shorter trees with -1: [[1, 2, 2], [1, 1, -1]]"
        ) from None
    return t.to(torch.int64) if t.numel() == 0 else t  # an empty list is float32 to torch


def _row_hint(depth: Tensor, bad: Tensor | None = None) -> str:
    rows = depth.reshape(-1, depth.shape[-1])
    i = 0 if bad is None else int(bad.reshape(-1).nonzero()[0, 0])
    shown, more = rows[i, :40].tolist(), rows.shape[-1] > 40  # a long row is cut short
    return f"(row {i}: {str(shown)[:-1]}{', ...' if more else ''}])"


def check_tree_index(op: str, index: tuple[int, ...], batch: tuple[int, ...]) -> None:
    """Raise unless ``index`` selects exactly one tree of a batch of shape ``batch``."""
    ok = len(index) == len(batch) and all(
        isinstance(j, int) and not isinstance(j, bool) and -n <= j < n for j, n in zip(index, batch, strict=True)
    )
    if not ok:
        example = "index=()" if not batch else f"index={0 if len(batch) == 1 else tuple(0 for _ in batch)}"
        raise StructureError(
            f"{op}: index {index} does not select a single tree of the batch {batch}; "
            f"pass {len(batch)} int(s), one per batch axis, each in range, e.g. {example}"
        )


def containing(start: Tensor, points: Tensor) -> Tensor:
    """Index of the cell of ``start`` containing each breakpoint of ``points``.

    ``start`` ``(*batch, N)`` and ``points`` ``(*batch, M)`` (batch shapes equal);
    returns ``(*batch, M)`` ``int64`` indices (clamped into range at padding).
    """
    i = torch.searchsorted(start.contiguous(), points.contiguous(), right=True) - 1
    return i.clamp_(min=0)


def merge(start_a: Tensor, start_b: Tensor, static: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The common refinement of two batches of trees (batch shapes already broadcast to one).

    One sort of the concatenated breakpoints (plus one ``SENTINEL`` column, so
    every row ends in padding). The last copy of each distinct breakpoint is
    kept, and a scatter records its sorted position ``p`` in its slot; the leaf
    of ``a`` containing it is ``#(breakpoints of a <= u) - 1``, a running count
    read at ``p``, and the leaf of ``b`` is ``p - #(breakpoints of a <= u)``.

    Returns:
        ``(start, index_a, index_b, mask)``: the refined trees' breakpoints,
        padded to their largest leaf count ``n``; for each refined leaf the
        index of the leaf of ``a`` (of ``b``) containing it; and whether each
        position is a leaf (not padding); all ``(*batch, n)``. With ``static``,
        ``n = Na + Nb`` (a bound known without reading the data: no host
        synchronisation, so ``torch.compile`` traces it).
    """
    na, nb = start_a.shape[-1], start_b.shape[-1]
    end = torch.full((*start_a.shape[:-1], 1), SENTINEL, dtype=start_a.dtype, device=start_a.device)
    u, order = torch.sort(torch.cat([start_a, start_b, end], -1), dim=-1, stable=True)  # (*batch, W)
    count_a = torch.cumsum(order < na, -1)  # breakpoints of a up to and including here
    keep = u[..., :-1] != u[..., 1:]  # the last copy of each breakpoint (never a SENTINEL: the last column is one)
    slot = torch.cumsum(keep, -1)  # 1-based slot of each kept copy
    # the one host synchronisation: the padded size (static: the bound Na + Nb)
    n = na + nb if static else int(slot[..., -1].max())
    width = u.shape[-1]
    slot.mul_(keep)  # dropped entries go to slot 0, a trash slot
    p = torch.arange(width - 1, device=u.device).expand_as(slot)
    kept = torch.full((*u.shape[:-1], width), width - 1, dtype=torch.int64, device=u.device)
    # sorted position of each refined leaf (padding: the SENTINEL column); contiguous for fast gathers
    kept = kept.scatter_(-1, slot, p)[..., 1 : n + 1].contiguous()
    count = torch.gather(count_a, -1, kept)
    start = torch.gather(u, -1, kept)
    return start, count - 1, (kept - count).clamp_(max=nb - 1), start != SENTINEL


def is_refinement(coarse: Tensor, fine: Tensor) -> Tensor:
    """Whether each tree of ``fine`` refines the one of ``coarse`` (every breakpoint of ``coarse`` is in ``fine``).

    ``coarse`` ``(*batch, N)``, ``fine`` ``(*batch, M)``; returns ``(*batch,)`` booleans.
    """
    i = containing(fine, coarse)
    hit = torch.gather(fine, -1, i) == coarse
    return (hit | (coarse == SENTINEL)).all(-1)


def address_bits(start: Tensor, depth: Tensor, levels: int) -> Tensor:
    """The path from the root to each leaf: ``+1`` right / ``-1`` left per level, ``0`` below the leaf.

    ``start``, ``depth`` ``(*batch, N)``; returns ``(*batch, N, levels)`` ``int8``.
    """
    k = torch.arange(levels, device=start.device)
    bit = torch.bitwise_right_shift(start.unsqueeze(-1), MAX_DEPTH - 1 - k) & 1  # (*batch, N, levels)
    inside = k < depth.unsqueeze(-1)
    return torch.where(inside & (start != SENTINEL).unsqueeze(-1), 2 * bit - 1, 0).to(torch.int8)
