"""ListOps as expression trees: the digits are the leaves, the operators sit at the internal nodes.

The third view of an expression (beside the flat tokens and the Treeformer's tree in
:mod:`training.tasks.tree_listops.data`), for folding models (:class:`models.TreeFold`). ListOps operators are
n-ary, so each ``[OP a1 ... ak]`` becomes a balanced binary tree over its arguments (``k - 1`` internal
nodes; the tree's depth grows by ``ceil(log2 k)`` per nesting level), and every one of those nodes
carries the code ``(OP, closes)``: ``closes`` marks the top node of the operator's group, where the
operator's value is due. So there are eight node codes, ``2 OPS.index(OP) + closes``.

What the fold carries up a group is a partial application. ``MAX``, ``MIN`` and ``SM`` are associative
(``max``, ``min``, ``+ mod 10``), so a running digit would do; ``MED`` is not (the median of medians is not
the median), so it must carry the multiset of its arguments. The exact evaluator here (:func:`exact`)
carries the multiset for every operator -- a count vector over the ten digits, merged by adding counts at
every node of a group -- and applies the operator to it at the closing node, giving a one-hot digit: the
n-ary semantics, evaluated level by level. A learned fold (``--model fold``) gets the same trees and codes
and learns its own state.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from applicative import Field, Vector
from instances import Expressions

from .data import OPS, Expr

#: the node codes: ``OP`` inside a group, ``OP]`` at the node that closes it (code ``2 OPS.index(OP) + closes``)
NODE_OPS = tuple(name for op in OPS for name in (op, op + "]"))
DIGITS = Vector(10)


def expression_tree(e: Expr) -> Any:
    """The expression as nested ``(code, left, right)`` tuples over its digits (a digit alone is a leaf)."""
    if isinstance(e, int):
        return e
    op, args = e
    return _group(op, [expression_tree(a) for a in args], closes=True)


def _group(op: str, items: list[Any], closes: bool) -> Any:
    if len(items) == 1:
        return items[0]
    h = len(items) // 2
    return (op + "]" if closes else op, _group(op, items[:h], False), _group(op, items[h:], False))


def fold_batch(exprs: list[Expr], device: torch.device | str | None = None) -> tuple[Expressions, Tensor]:
    """The expression trees of a batch and their leaf digits ``(batch, N)`` (``0`` at padding)."""
    trees, leaves = Expressions.from_nested([expression_tree(e) for e in exprs], NODE_OPS, device)
    digits = torch.zeros(len(exprs), trees.tree.size, dtype=torch.long)
    for i, row in enumerate(leaves):
        digits[i, : len(row)] = torch.tensor(row)
    return trees, digits.to(device)


def merge_or_apply(left: Field[Vector], right: Field[Vector], code: Tensor) -> Field[Vector]:
    """One level of the exact fold on digit counts ``(n, 10)``: add counts, apply ``OP`` where a group closes."""
    h = left.tensor + right.tensor  # the union of the two multisets
    digit = torch.arange(10, dtype=h.dtype, device=h.device)
    present = h > 0
    k = h.sum(-1, keepdim=True)
    largest = torch.where(present, digit, -1.0).amax(-1)
    smallest = torch.where(present, digit, 10.0).amin(-1)
    # the upper median sorted(a)[k // 2]: the first digit whose running count passes k // 2
    median = (torch.cumsum(h, -1) <= torch.div(k, 2, rounding_mode="floor")).sum(-1).to(h.dtype)
    total = torch.remainder((h * digit).sum(-1), 10)
    value = torch.stack([largest, smallest, median, total], -1).gather(-1, (code // 2).unsqueeze(-1))
    closed = torch.nn.functional.one_hot(value.squeeze(-1).long(), 10).to(h.dtype)
    return left.with_tensor(torch.where((code % 2 == 1).unsqueeze(-1), closed, h))


def exact(exprs: list[Expr]) -> Tensor:
    """The expressions' values ``(batch,)`` by the batched level-by-level fold (no recursion over nodes)."""
    trees, digits = fold_batch(exprs)
    counts = torch.nn.functional.one_hot(digits, 10).to(torch.float64)
    root = trees.fold(Field(counts, (trees.tree, DIGITS)), merge_or_apply)
    return root.tensor.argmax(-1)
