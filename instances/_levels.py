"""The fold by levels that :class:`~instances.DAG` and :class:`~instances.Expressions` share.

A schedule groups the operation nodes of a ragged batch by level, so that every node of a level reads only
values written at earlier levels. The values live in one buffer, a row per node slot; a level is three
gathers (left children, right children, operation codes), one call of ``combine`` over the whole level, and
one scatter of the parents into their rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVarTuple

from torch import Tensor

from applicative import Field, Ring, StructureError

A = TypeVarTuple("A")

#: ``combine(left, right, op)`` on ``(n, ...)`` fields and ``(n,)`` operation codes
Combine = Callable[[Field[*A], Field[*A], Tensor], Field[*A]]


def fold_levels(
    buffer: Tensor,
    levels: Iterable[tuple[Tensor, Tensor, Tensor, Tensor]],
    ops: Tensor,
    axes: tuple[*A],
    ring: Ring,
    combine: Combine[*A],
    op: str,
) -> Tensor:
    """``buffer`` ``(rows, ...)`` with every level's parents written in place, level by level.

    Args:
        buffer: one row per node slot, the inputs already in their rows; ``...`` the values' axes ``axes``.
        levels: per level, the rows of the left and right children, the rows of ``ops`` holding the nodes'
            codes, and the rows the parents are written to (all ``(n,)`` integer tensors).
        ops: the operation codes, flattened.
        combine: called once per level; must return values like its inputs (``op`` names the caller in the error).
    """
    for left_rows, right_rows, codes, out in levels:
        left = Field.unchecked(buffer.index_select(0, left_rows), axes, ring)
        right = Field.unchecked(buffer.index_select(0, right_rows), axes, ring)
        parent = combine(left, right, ops.index_select(0, codes))
        if parent.axes != axes or parent.tensor.shape != left.tensor.shape:
            raise StructureError(
                f"{op}: combine must return values like its inputs, {axes} {tuple(left.tensor.shape)}, "
                f"got {parent.axes} {tuple(parent.tensor.shape)}"
            )
        # in place: index_select saves only its index for backward, so earlier reads stay valid
        buffer.index_copy_(0, out, parent.tensor.to(buffer.dtype))
    return buffer
