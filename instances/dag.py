"""Directed acyclic graphs: a batch of ragged DAGs whose nodes each carry an operation, folded from sources to sinks.

The design source (Part 6) extends expression trees to "directed-acyclic
graphs, where the node combination proceeds from sources to sinks": an
expression in which a subexpression may be used more than once. A node
``v`` with operation ``op(v)`` and children ``l(v)``, ``r(v)`` (earlier nodes)
folds as ``fold v = combine(fold l(v), fold r(v), op(v))``; a source folds to
its own value. Written as a tree, a DAG repeats every shared subexpression --
``2^k`` copies after ``k`` levels of sharing -- while the fold here computes
each node once.

Storage (per example, ``N`` the padded node count, nodes in topological
order: children come before their parent):

* ``children`` ``(*batch, N, 2)`` int64: the two children of an operation
  node, ``-1, -1`` at a source (a unary operation repeats its child);
* ``ops`` ``(*batch, N)`` int64: an operation code in ``[0, operations)`` at
  each operation node (read only there);
* ``level`` ``(*batch, N)`` int64: ``0`` at a source, ``1 + max(level l, level r)``
  at an operation node (computed when not given, checked when given);
* ``count`` ``(*batch,)`` int64: how many nodes example ``i`` has (the rest is padding).

:meth:`DAG.fold` runs one batched step per level: level ``k`` depends only on
levels below ``k``, so every node of level ``k`` in every DAG of the batch
is combined by one call of ``combine`` (gathers of the children's rows from one
flat node buffer, one ``index_copy_`` of the results). The Python loop runs
``height`` times (the largest level), never once per node; time and memory
are linear in the number of nodes (each is read as a child and written once).
Building the schedule costs one host synchronisation (the nodes per level).

Laws. As a structure, :class:`DAG` is the index set of its nodes with the
counting measure on each example's ``count`` nodes (the :class:`Padded`
contract): values live at nodes, so ``fmap`` / ``zip_with`` act node by node,
``counit`` sums over the nodes, attention over nodes is one fused kernel. The
functor, applicative (monoidal), counit, fusion and attention laws therefore
all apply and are checked by :class:`~instances.DAGArbitrary`. Pairing two
*different* DAGs is refused (as for ``Padded``): a node-for-node pairing of
two graphs has no meaning, and a common refinement, which pairs two trees,
does not exist for graphs. The fold is *not* the counit (its algebra is per
node and ``combine`` is any function), so those laws say nothing about it;
what it satisfies, and the tests check, is (1) *sharing is transparent*: the
fold equals the fold of the unrolled tree (:meth:`instances.Expressions.fold`,
and a memoised recursive evaluator) for every ``combine``, values and
gradients; (2) with ``combine = +`` it is linear: a node's value is
``Σ_s paths(s -> v) x_s``, the counit against the path-count measure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVarTuple, final

import torch
from torch import Tensor

from applicative import Field, Ragged, StructureError, per_example
from applicative.tensors import summary

from ._levels import fold_levels

A = TypeVarTuple("A")

#: nodes per example, ``(*batch,)`` (``None``: every slot a node)
Counts = Tensor | Sequence[int] | None
#: a node written by hand: ``None`` for a source, ``(op, left, right)`` (earlier node indices) for an operation
Node = tuple[str, int, int] | None

__all__ = ["DAG", "DAGLevel", "DAGSchedule"]


@dataclass(frozen=True)
class DAGLevel:
    """The operation nodes of one level across the batch, as ``(n,)`` int64 rows of the ``R N`` node buffer."""

    out: Tensor
    left: Tensor
    right: Tensor


@dataclass(frozen=True)
class DAGSchedule:
    """How to fold ``rows`` DAGs of ``nodes`` slots: the levels ``1 .. height`` in order (``len(levels) = height``)."""

    rows: int
    nodes: int
    levels: tuple[DAGLevel, ...]


@final
class DAG(Ragged):
    """A batch of ragged DAGs: positions are each example's nodes in topological order (:class:`~applicative.Ragged`).

    Args:
        children: ``(*batch, N, 2)`` integer children of each node; ``-1, -1`` at a source.
        ops: ``(*batch, N)`` integer operation codes (read at operation nodes only).
        operations: how many operations there are; codes at operation nodes lie in ``[0, operations)``.
        count: ``(*batch,)`` nodes per example in ``[1, N]`` (default: ``N`` each); later slots are padding.
        level: ``(*batch, N)`` each node's level; computed when ``None``, checked otherwise.

    Raises:
        StructureError: on a wrong shape or dtype, a child that is not an earlier node of the same example, a
            node with exactly one child, a code out of range, or a wrong ``level``.
    """

    # padding nodes (to the most nodes, when batches join): no children, code 0, level 0
    #: ``(*batch, N, 2)`` the two children of each operation node, ``-1 -1`` at a source and at padding
    children: Tensor = per_example(event_dims=2, pad_axis=-2, fill=-1)
    #: ``(*batch, N)`` the operation code of each node (read at operation nodes only)
    ops: Tensor = per_example(event_dims=1, pad_axis=-1, fill=0)
    #: ``(*batch, N)`` each node's level: ``0`` at a source, ``1 +`` the larger child level otherwise
    level: Tensor = per_example(event_dims=1, pad_axis=-1, fill=0)
    #: how many operations there are: codes lie in ``[0, operations)``
    operations: int

    def __init__(
        self, children: Tensor, ops: Tensor, operations: int, count: Counts = None, level: Tensor | None = None
    ) -> None:
        self.children, self.ops, self.level, self.count = _checked(children, ops, operations, count, level)
        self.size, self.operations = self.children.shape[-2], operations

    @classmethod
    def from_lists(
        cls, dags: Sequence[Sequence[Node]], operations: Sequence[str], device: torch.device | str | None = None
    ) -> DAG:
        """A batch from lists of nodes in topological order: ``None`` for a source, ``(op, i, j)`` for an operation.

        ``DAG.from_lists([[None, None, ("+", 0, 1), ("*", 2, 2)]], ["+", "*"])`` is ``(a + b) * (a + b)``
        with ``a + b`` computed once.
        """
        if isinstance(dags, str) or not isinstance(dags, Sequence) or not dags or not all(dags):
            raise StructureError(
                f"DAG.from_lists: expected a non-empty list of non-empty node lists, got {summary(dags, 60)}"
            )
        names = {name: k for k, name in enumerate(operations)}
        n = max(len(d) for d in dags)
        children: list[list[tuple[int, int]]] = []
        ops: list[list[int]] = []
        levels: list[list[int]] = []
        for b, nodes in enumerate(dags):
            row, codes = [(-1, -1)] * n, [0] * n
            for i, node in enumerate(nodes):
                if node is None:
                    continue
                if not (isinstance(node, tuple) and len(node) == 3 and node[0] in names):
                    raise StructureError(
                        f"DAG.from_lists: a node must be None (a source) or (op, i, j) with op one of "
                        f"{sorted(names)}, got {summary(node)} at node {i} of DAG {b}"
                    )
                codes[i], row[i] = names[node[0]], (node[1], node[2])
            children.append(row)
            ops.append(codes)
            levels.append(_list_levels(row, len(nodes), b))
        count = torch.tensor([len(d) for d in dags], dtype=torch.int64)
        return cls(
            torch.tensor(children, dtype=torch.int64, device=device),
            torch.tensor(ops, dtype=torch.int64, device=device),
            len(names),
            count.to(device),
            torch.tensor(levels, dtype=torch.int64, device=device),  # checked in one pass, not relaxed
        )

    @property
    def sources(self) -> Tensor:
        """``(*batch, N)``: ``True`` at sources (nodes whose value is the input's)."""
        return self.mask & (self.children[..., 0] < 0)

    @functools.cached_property
    def schedule(self) -> DAGSchedule:
        """The level schedule (built on first use and kept, as a cache; the batch flattened to ``R`` rows)."""
        return _schedule(self.children, self.level, self.mask)

    @property
    def height(self) -> int:
        """The largest level: the number of batched steps a fold takes."""
        return len(self.schedule.levels)

    def fold(self, x: Field[DAG, *A], combine: Callable[[Field[*A], Field[*A], Tensor], Field[*A]]) -> Field[DAG, *A]:
        """Every node's value, from sources to sinks: ``x`` at the sources, ``combine`` at operation nodes.

        Args:
            x: a field ``DAG x ...`` on this batch (batch shape the DAGs'); read at the sources only.
            combine: ``combine(left, right, op)`` on ``(n, ...)`` fields and ``(n,)`` codes (as for
                :meth:`instances.Expressions.fold`: :func:`instances.by_op`, :class:`models.NodeCell`);
                called once per level.

        Returns:
            ``DAG x ...``: each node's value (sources: their input; padding: as in ``x``).

        Under ``torch.compile`` the first fold of a DAG builds its schedule, which reads the level sizes on
        the host (a graph break); build it beforehand (``dag.schedule``) and the fold traces as one graph.
        """
        dag, rest = x.structures[0], x.axes[1:]
        if not isinstance(dag, DAG) or not (dag is self or dag == self or dag.equals(self)):
            raise StructureError(f"DAG.fold: the field's first axis {dag!r} is not this batch's {self!r}")
        if tuple(x.batch_shape) != tuple(self.batch_shape):
            raise StructureError(
                f"DAG.fold: the field's batch {tuple(x.batch_shape)} must be the DAGs' {tuple(self.batch_shape)} "
                "(one DAG per example)"
            )
        s = self.schedule
        inner = x.tensor.shape[x.tensor.ndim - len(rest) :]
        buffer = x.tensor.reshape(s.rows * s.nodes, *inner).clone()  # (R N, ...): one row per node slot
        levels = ((level.left, level.right, level.out, level.out) for level in s.levels)  # k reads levels < k
        fold_levels(buffer, levels, self.ops.reshape(-1), rest, x.ring, combine, "DAG.fold")
        return Field.unchecked(buffer.reshape(x.tensor.shape), (self, *rest), x.ring)

    def last(self, x: Field[DAG, *A]) -> Field[*A]:
        """The values at each example's last node (a sink: nothing comes after it): ``(*batch, ...)``."""
        if not isinstance(x.structures[0], DAG) or x.structures[0].size != self.size:
            raise StructureError(f"DAG.last: expected a field on {self!r}, got one on {x.structures[0]!r}")
        rows = self.count.numel()
        t = x.tensor.reshape(rows, self.size, *x.tensor.shape[len(self.batch_shape) + 1 :])
        picked = t[torch.arange(rows, device=t.device), (self.count.reshape(-1) - 1).to(t.device)]
        return Field.unchecked(picked.reshape(*self.batch_shape, *picked.shape[1:]), x.axes[1:], x.ring)

    def __repr__(self) -> str:
        return f"DAG({self.operations} operations, batch={tuple(self.batch_shape)}, nodes<={self.size})"


def _checked(
    children: Tensor, ops: Tensor, operations: int, count: Counts, level: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Children (``-1 -1`` at sources and padding), codes, levels and counts as fresh int64 tensors, or an error."""
    _integer("children", children, "(*batch, N, 2)")
    if children.ndim < 2 or children.shape[-1] != 2 or children.shape[-2] < 1:
        raise StructureError(
            f"DAG: children must have shape (*batch, N, 2) (two child indices per node, -1 -1 at a source), "
            f"got {tuple(children.shape)}"
        )
    batch, n = tuple(children.shape[:-2]), children.shape[-2]
    _integer("ops", ops, f"{(*batch, n)}")
    if tuple(ops.shape) != (*batch, n):
        raise StructureError(f"DAG: ops must have shape {(*batch, n)} (one code per node), got {tuple(ops.shape)}")
    if not isinstance(operations, int) or operations < 1:
        raise StructureError(f"DAG: operations must be an int >= 1, got {operations!r:.40}")
    device = children.device
    if count is None:
        c = torch.full(batch, n, dtype=torch.int64, device=device)
    else:
        c = count if isinstance(count, Tensor) else torch.tensor(list(count), dtype=torch.int64)
        _integer("count", c, f"{batch}")
        if tuple(c.shape) != batch:
            raise StructureError(f"DAG: count must have shape {batch} (one per example), got {tuple(c.shape)}")
        c = c.to(device, torch.int64)
        if bool(((c < 1) | (c > n)).any()):
            raise StructureError(f"DAG: every count must lie in [1, {n}], got {c.min().item()}..{c.max().item()}")
    ch, o = children.to(torch.int64).clone(), ops.to(device, torch.int64).clone()
    index = torch.arange(n, device=device)
    valid = index < c.unsqueeze(-1)  # (*batch, N)
    source = (ch < 0).all(-1)
    half = (ch < 0).any(-1) & ~source
    if bool((half & valid).any()):
        raise StructureError(
            "DAG: a node has one child index of -1 and one real child; an operation node needs two children "
            "(repeat the child for a unary operation), a source needs -1 -1"
        )
    internal = valid & ~source
    late = internal & ((ch >= index.unsqueeze(-1)).any(-1))
    if bool(late.any()):
        where = late.nonzero()[0].tolist()
        raise StructureError(
            f"DAG: node {where[-1]} of example {tuple(where[:-1])} has a child at or after itself; nodes must be "
            "in topological order (every child an earlier node of the same example)"
        )
    bad = internal & ((o < 0) | (o >= operations))
    if bool(bad.any()):
        raise StructureError(
            f"DAG: operation codes must lie in [0, {operations}), got {int(o[bad][0])} at an operation node; "
            "pass operations= the number of distinct operations"
        )
    ch = torch.where(internal.unsqueeze(-1), ch, -1)  # sources and padding: no children
    if level is None:
        lv = _levels(ch, internal)
    else:
        _integer("level", level, f"{(*batch, n)}")
        if tuple(level.shape) != (*batch, n):
            raise StructureError(f"DAG: level must have shape {(*batch, n)}, got {tuple(level.shape)}")
        lv = torch.where(valid, level.to(device, torch.int64), 0)
        # one pass suffices: in topological order, a level equal to 1 + its children's everywhere is the level
        kids = lv.gather(-1, ch.clamp(min=0).flatten(-2)).reshape(*batch, n, 2).amax(-1)
        if not bool((lv == torch.where(internal, kids + 1, 0)).all()):
            raise StructureError(
                "DAG: level disagrees with the children (0 at a source, 1 + the larger child level at an "
                "operation node); leave level=None to have it computed"
            )
    return ch, o, lv, c


def _integer(name: str, t: object, shape: str) -> None:
    if not isinstance(t, Tensor) or t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise StructureError(f"DAG: {name} must be an integer tensor {shape}, got {summary(t)}")


def _list_levels(row: list[tuple[int, int]], count: int, b: int) -> list[int]:
    """Levels of one DAG written as lists (padding 0), in one pass; the constructor re-checks them."""
    out = [0] * len(row)
    for i, (a, c) in enumerate(row[:count]):
        if a >= 0 and c >= 0:
            if not (a < i and c < i):
                raise StructureError(
                    f"DAG.from_lists: node {i} of DAG {b} reads node {max(a, c)}; nodes must be in topological "
                    "order (every child an earlier node)"
                )
            out[i] = 1 + max(out[a], out[c])
    return out


def _levels(children: Tensor, internal: Tensor) -> Tensor:
    """Each node's level by relaxation: ``height + 1`` batched sweeps, each a gather of the children's levels."""
    n = children.shape[-2]
    flat = children.clamp(min=0).flatten(-2)  # (*batch, 2N) both children, side by side
    level = torch.zeros(internal.shape, dtype=torch.int64, device=children.device)
    for _ in range(n):  # a level is final once its children's are: at most (height + 1) sweeps change anything
        kids = level.gather(-1, flat).reshape(*internal.shape, 2).amax(-1)
        new = torch.where(internal, kids + 1, 0)
        if torch.equal(new, level):
            break
        level = new
    return level


def _schedule(children: Tensor, level: Tensor, mask: Tensor) -> DAGSchedule:
    """Group the operation nodes of ``R`` flattened DAGs by level: one stable sort, one host read of the counts."""
    n = children.shape[-2]
    ch = children.reshape(-1, n, 2)
    lv = level.reshape(-1, n)
    rows = ch.shape[0]
    base = (torch.arange(rows, device=ch.device) * n).unsqueeze(-1)  # (R, 1) the first row of each DAG
    internal = mask.reshape(-1, n) & (ch[..., 0] >= 0)
    out = (base + torch.arange(n, device=ch.device))[internal]
    left, right = (base + ch[..., 0])[internal], (base + ch[..., 1])[internal]
    k = lv[internal]
    order = torch.argsort(k, stable=True)
    counts = torch.bincount(k, minlength=1).tolist()[1:]  # nodes at levels 1, 2, ...
    columns = [t[order] for t in (out, left, right)]
    levels, at = [], 0
    for c in counts:
        levels.append(DAGLevel(*(t[at : at + c] for t in columns)))
        at += c
    return DAGSchedule(rows, n, tuple(levels))
