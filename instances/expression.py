"""Expression trees: a batch of binary trees whose internal nodes each carry an operation.

The design source's tree counit folds every node with one algebra,
``counit (Node l r) = counit l + counit r``. An expression tree generalises it
to a *per-node* algebra: node ``v`` with operation ``op(v)`` folds its
children as ``fold v = combine(fold l, fold r, op(v))`` and a leaf folds to its
value; ``combine`` is any batched function of two children and an operation
code -- exact arithmetic (:func:`by_op`: ``+``, ``x``, ``max``, ...) or a
learned cell (:class:`models.TreeFold`). With ``combine = +`` everywhere it is
the counit of a ``SUM`` tree; with ``(l + r) / 2`` that of a ``MEAN`` tree.

:class:`Expressions` pairs a :class:`~instances.Tree` (the leaves' axis of a
field) with an operation code per internal node, listed in in-order: node
``j`` is the one read between leaves ``j`` and ``j + 1`` (their lowest common
ancestor), so codes are a ``(*batch, N - 1)`` tensor beside the
``(*batch, N)`` leaves. :meth:`Expressions.fold` evaluates the whole ragged
batch level by level (``instances._expression_schedule``): one call of
``combine`` per level over every node of that depth in every tree, so the
Python loop runs the tallest tree's height times, not once per node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias, TypeVar, TypeVarTuple, final

import torch
from torch import Tensor

from applicative import Field, StructureError
from applicative.tensors import summary

from ._expression_schedule import Schedule, schedule
from ._levels import fold_levels
from ._tree_partition import MAX_DEPTH
from .tree import NodeAlgebra, Tree

A = TypeVarTuple("A")
L = TypeVar("L")


class Combine(Protocol):
    """``combine(left, right, op) -> parent`` for any axes: two ``(n, ...)`` fields and ``(n,)`` operation codes."""

    def __call__(self, left: Field[*A], right: Field[*A], op: Tensor, /) -> Field[*A]: ...


#: an expression written by hand: ``(op, left, right)`` at a node, anything that is not a tuple at a leaf
Nested: TypeAlias = object

__all__ = ["Combine", "Expressions", "by_op"]


@final
class Expressions:
    """A batch of expression trees: leaves on a :class:`Tree` axis, an operation code at each internal node.

    Args:
        tree: the trees ``(*batch, N)``.
        ops: ``(*batch, N - 1)`` integer operation codes of the internal nodes in in-order (anything at padding).
        operations: how many operations there are; codes must lie in ``[0, operations)``.

    Raises:
        StructureError: if ``ops`` has the wrong shape or dtype, or a code is out of range.
    """

    def __init__(self, tree: Tree, ops: Tensor, operations: int) -> None:
        if not isinstance(tree, Tree):
            raise StructureError(f"Expressions: expected a Tree, got {type(tree).__name__}")
        want = (*tree.batch_shape, tree.size - 1)
        if not isinstance(ops, Tensor) or ops.dtype.is_floating_point or ops.dtype.is_complex:
            raise StructureError(f"Expressions: operation codes must be an integer tensor {want}, got {summary(ops)}")
        if tuple(ops.shape) != want:
            raise StructureError(
                f"Expressions: {tree!r} has {tree.size - 1} internal-node slots per tree, so ops must have shape "
                f"{want} (one code per internal node, in-order), got {tuple(ops.shape)}"
            )
        if operations < 1:
            raise StructureError(f"Expressions: operations must be >= 1, got {operations}")
        real = tree.mask[..., 1:]
        bad = real & ((ops < 0) | (ops >= operations))
        if bool(bad.any()):
            raise StructureError(
                f"Expressions: operation codes must lie in [0, {operations}), got {int(ops[bad][0])} at an internal "
                "node; pass operations= the number of distinct operations"
            )
        self.tree, self.ops, self.operations = tree, ops.to(tree.mask.device, torch.int64), operations
        self._schedule: Schedule | None = None

    @classmethod
    def from_nested(
        cls, trees: Sequence[Nested], operations: Sequence[str], device: torch.device | str | None = None
    ) -> tuple[Expressions, list[list[object]]]:
        """A batch from nested ``(op, left, right)`` tuples (``op`` a name in ``operations``), and the leaves.

        ``Expressions.from_nested([("+", 1, ("*", 2, 3))], ["+", "*"])`` is ``1 + 2 x 3``.
        """
        if isinstance(trees, str | tuple) or not isinstance(trees, Sequence) or not trees:
            raise StructureError(
                f"Expressions.from_nested: expected a non-empty list of expressions, got {summary(trees, 60)}"
            )
        names = {name: k for k, name in enumerate(operations)}
        rows = [_flatten(t, names) for t in trees]
        n = max(len(d) for _, d, _ in rows)
        depth = torch.tensor([d + [-1] * (n - len(d)) for _, d, _ in rows], dtype=torch.int64)
        ops = torch.tensor([o + [0] * (n - 1 - len(o)) for _, _, o in rows], dtype=torch.int64)
        ops = ops.reshape(len(rows), n - 1)  # (batch, N - 1), also when every tree is a single leaf
        tree = Tree(depth.to(device), NodeAlgebra.SUM)
        return cls(tree, ops.to(device), len(names)), [leaves for leaves, _, _ in rows]

    @property
    def schedule(self) -> Schedule:
        """The level schedule (built on first use; the batch flattened to ``R`` rows)."""
        if self._schedule is None:
            t = self.tree
            n = t.size
            self._schedule = schedule(t.start.reshape(-1, n), t.depth.reshape(-1, n), t.mask.reshape(-1, n))
        return self._schedule

    @property
    def height(self) -> int:
        """The tallest tree's height: the number of steps a fold takes."""
        return len(self.schedule.levels)

    def node_depths(self) -> Tensor:
        """``(*batch, N - 1)`` each internal node's depth in its tree, in-order (``-1`` at padding)."""
        return self.schedule.depth.reshape(self.ops.shape)

    def fold(self, x: Field[Tree, *A], combine: Callable[[Field[*A], Field[*A], Tensor], Field[*A]]) -> Field[*A]:
        """Fold each tree bottom up with its nodes' operations: the roots' values ``(*batch, ...)``.

        Args:
            x: leaf values, a field ``Tree x ...`` on this batch's tree (batch shape the tree's).
            combine: ``combine(left, right, op)`` on ``(n, ...)`` fields and ``(n,)`` codes; called once per level.
        """
        tree, rest = x.structures[0], x.axes[1:]
        if tree is not self.tree and not (isinstance(tree, Tree) and _same_trees(tree, self.tree)):
            raise StructureError(f"Expressions.fold: the field's first axis {tree!r} is not this batch's {self.tree!r}")
        if tuple(x.batch_shape) != tuple(self.tree.batch_shape):
            raise StructureError(
                f"Expressions.fold: the field's batch {tuple(x.batch_shape)} must be the trees' "
                f"{tuple(self.tree.batch_shape)} (one tree per example)"
            )
        s = self.schedule
        inner = x.tensor.shape[x.tensor.ndim - len(rest) :]
        leaves = x.tensor.reshape(s.rows * s.leaves, *inner)
        buffer = torch.cat([leaves, leaves.new_zeros(s.rows * (s.leaves - 1), *inner)])
        levels = ((level.left, level.right, level.node, level.out) for level in s.levels)  # deepest first
        fold_levels(buffer, levels, self.ops.reshape(-1), rest, x.ring, combine, "Expressions.fold")
        root = buffer.index_select(0, s.root)
        return Field.unchecked(root.reshape(*self.tree.batch_shape, *inner), rest, x.ring)

    def __repr__(self) -> str:
        batch, n = tuple(self.tree.batch_shape), self.tree.size
        return f"Expressions({self.operations} operations, batch={batch}, leaves<={n})"


def by_op(*functions: Callable[[Tensor, Tensor], Tensor]) -> Combine:
    """A ``combine`` applying ``functions[op]`` at each node (each a batched ``(Tensor, Tensor) -> Tensor``).

    Every function is evaluated on the whole level and the results selected by code (the levels are small).
    """
    if not functions:
        raise StructureError("by_op: give at least one function (operation code k applies functions[k])")

    def combine(left: Field[*A], right: Field[*A], op: Tensor) -> Field[*A]:
        a, b = left.tensor, right.tensor
        code = op.reshape(op.shape[0], *[1] * (a.ndim - 1))
        out = functions[0](a, b)
        for k, f in enumerate(functions[1:], 1):
            out = torch.where(code == k, f(a, b), out)
        return left.with_tensor(out)

    return combine


def _same_trees(a: Tree, b: Tree) -> bool:
    """Whether two batches hold the same tree shapes (any node algebra: a fold ignores the measure)."""
    return a.start.shape == b.start.shape and bool(torch.equal(a.start, b.start.to(a.start.device)))


def _flatten(tree: Nested, names: dict[str, int]) -> tuple[list[object], list[int], list[int]]:
    """An expression's leaves, their depths and its nodes' codes, all left to right (in-order); no recursion."""
    leaves: list[object] = []
    depths: list[int] = []
    ops: list[int] = []
    stack: list[tuple[object, int, bool]] = [(tree, 0, False)]  # (item, depth, is an operation code)
    while stack:
        item, d, is_op = stack.pop()
        if is_op:
            ops.append(item)  # type: ignore[arg-type]
        elif isinstance(item, tuple):
            if len(item) != 3 or item[0] not in names:
                raise StructureError(
                    f"Expressions: a node must be (op, left, right) with op one of {sorted(names)}, got {summary(item)}"
                )
            if d >= MAX_DEPTH:
                raise StructureError(f"Expressions: deeper than the maximum depth {MAX_DEPTH}")
            stack += [(item[2], d + 1, False), (names[item[0]], d, True), (item[1], d + 1, False)]
        else:
            leaves.append(item)
            depths.append(d)
    return leaves, depths, ops
