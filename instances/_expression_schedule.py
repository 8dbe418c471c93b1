"""The level schedule of a ragged batch of binary trees: internal nodes grouped by depth, as gather indices.

A tree is stored as the dyadic partition of ``[0, 1)`` given by its leaves
(:mod:`instances._tree_partition`): sorted breakpoints ``start`` with
numerators over ``2^M`` (``M = MAX_DEPTH``) and leaf depths. Its internal
nodes need no storage of their own: a tree with ``n`` leaves has ``n - 1``
internal nodes, and the ``j``-th of them in in-order (the one read between
leaves ``j`` and ``j + 1``) is the node that splits at the breakpoint
``p = start[j + 1]`` -- the lowest common ancestor of those two leaves.
Everything about that node follows from ``p`` alone:

* ``p``'s lowest set bit is ``2^(M - 1 - d)``, ``d`` the node's depth (the node
  is the dyadic interval ``[p - 2^(M-1-d), p + 2^(M-1-d))``, split at ``p``);
* its left child is leaf ``j`` if that leaf has depth ``d + 1``, else the
  internal node splitting at ``p - 2^(M-2-d)``; its right child is leaf
  ``j + 1`` if that has depth ``d + 1``, else the node splitting at
  ``p + 2^(M-2-d)`` -- found by one batched ``searchsorted``;
* the root splits at ``1/2`` (a one-leaf tree's root is its leaf).

Nodes at depth ``d`` depend only on children at depth ``d + 1``, so a fold
runs the levels deepest first, one batched step per level: the number of
steps is the height of the tallest tree of the batch, whatever the number of
nodes. (Grouping by height instead gives the same number of steps.)

Nodes live in one flat buffer: rows ``r N + i`` are the leaves of tree ``r``
(``N`` the padded leaf count, ``r`` over the flattened batch), rows
``R N + r (N - 1) + j`` its internal nodes in in-order. Building a schedule
costs one host synchronisation (the number of nodes at each depth).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ._tree_partition import MAX_DEPTH, containing

__all__ = ["Level", "Schedule", "schedule"]


@dataclass(frozen=True)
class Level:
    """The internal nodes of one depth, across the batch: ``(n,)`` int64 rows of the node buffer.

    Attributes:
        out: where each node's value is written.
        left, right: where its children's values are read.
        node: the node's in-order index over the flattened batch, ``r (N - 1) + j`` (for per-node data).
    """

    out: Tensor
    left: Tensor
    right: Tensor
    node: Tensor


@dataclass(frozen=True)
class Schedule:
    """How to fold a batch of ``R`` trees of ``N`` leaves bottom up.

    Attributes:
        rows: ``R``; leaves: ``N``.
        levels: the internal nodes by depth, deepest first (``len(levels)`` = the tallest tree's height).
        root: ``(R,)`` each tree's root row in the buffer (a leaf row for a one-leaf tree).
        depth: ``(R, N - 1)`` each internal node's depth (``-1`` at padding).
    """

    rows: int
    leaves: int
    levels: tuple[Level, ...]
    root: Tensor
    depth: Tensor

    @property
    def size(self) -> int:
        """Rows of the node buffer: ``R N`` leaves then ``R (N - 1)`` internal nodes."""
        return self.rows * (2 * self.leaves - 1)


def schedule(start: Tensor, depth: Tensor, mask: Tensor) -> Schedule:
    """The level schedule of trees given by their breakpoints.

    Args:
        start: ``(R, N)`` sorted breakpoints, ``SENTINEL`` at padding (:attr:`Tree.start`, batch flattened).
        depth: ``(R, N)`` leaf depths.
        mask: ``(R, N)`` which positions are leaves.
    """
    rows, n = start.shape
    device = start.device
    r = torch.arange(rows, device=device).unsqueeze(-1)  # (R, 1)
    one_leaf = mask.sum(-1) == 1
    if n == 1:
        empty = torch.zeros(rows, 0, dtype=torch.int64, device=device)
        return Schedule(rows, n, (), r.squeeze(-1) * n, empty)
    p = start[:, 1:]  # (R, N-1) the separators: internal node j splits at p[:, j]
    valid = mask[:, 1:]
    half = torch.where(valid, p & -p, 1)  # 2^(M-1-d): half the node's length (its lowest set bit)
    # exact: a power of two is exact in float64
    d = torch.where(valid, MAX_DEPTH - 1 - torch.log2(half.to(torch.float64)).round().to(torch.int64), -1)
    quarter = half >> 1  # a child's half length (0 only when both children are leaves at MAX_DEPTH)
    j = torch.arange(n - 1, device=device).unsqueeze(0)  # (1, N-1)
    internal = rows * n + r * (n - 1)  # (R, 1) first internal row of each tree
    # an internal child splits at p -/+ quarter: its separator is the breakpoint there, index (leaf index - 1)
    jl = (containing(start, (p - quarter).clamp(min=0)) - 1).clamp(min=0)
    jr = (containing(start, p + quarter) - 1).clamp(min=0, max=n - 2)
    left = torch.where(depth[:, :-1] == d + 1, r * n + j, internal + jl)
    right = torch.where(depth[:, 1:] == d + 1, r * n + j + 1, internal + jr)
    out = internal + j
    node = r * (n - 1) + j
    # group by depth, deepest first: one stable sort, one host read of the counts per depth
    dv = d[valid]
    order = torch.argsort(dv, descending=True, stable=True)
    counts = torch.bincount(dv, minlength=1).flip(0).tolist()
    columns = [t[valid][order] for t in (out, left, right, node)]
    levels, at = [], 0
    for c in counts:
        if c:
            o, lf, rt, nd = (t[at : at + c] for t in columns)
            levels.append(Level(o, lf, rt, nd))
            at += c
    # the root splits at 1/2
    centre = torch.full((rows, 1), 1 << (MAX_DEPTH - 1), dtype=start.dtype, device=device)
    j0 = (containing(start, centre).squeeze(-1) - 1).clamp(min=0)
    root = torch.where(one_leaf, r.squeeze(-1) * n, internal.squeeze(-1) + j0)
    return Schedule(rows, n, tuple(levels), root, d)
