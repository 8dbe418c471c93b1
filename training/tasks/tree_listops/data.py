"""A seeded ListOps-style task: nested ``MAX`` / ``MIN`` / ``MED`` / ``SM`` (sum mod 10) over digits.

An expression is ``[OP a1 ... ak]`` with ``2 <= k <= max_args`` arguments, each
a digit or (up to ``max_depth`` levels of operators) another expression; its
value is a digit. ``MED`` is the upper median (``sorted(a)[k // 2]``).

Two views of one expression:

* **flat tokens** (for a sequence model, as in Long Range Arena): ``[OP``
  opens, digits, ``]`` closes: ``[MAX 2 9 [MIN 4 7 ] 0 ]``;
* **a binary tree** (for the Treeformer): the expression's tokens without
  brackets are the leaves, in the same order; a node ``[OP a1 ... ak]`` is
  ``(OP, args)`` where ``args`` is the balanced binary tree of its arguments.
  So the operator is the leftmost leaf of its subtree, and the structure the
  brackets encode is the tree's shape instead;
* **an expression tree** (for the fold model, :mod:`training.tasks.tree_listops.nodes`):
  the digits are the leaves and the operators sit at the internal nodes.

The training and test splits nest at most :data:`DEPTH` = 3 levels; an optional
third split (:func:`generate_deep`) nests ``DEPTH + 1 ..`` levels, deeper than
any training expression, to test generalisation in depth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from instances import NodeAlgebra, Tree
from training.errors import InputError

OPS = ("MAX", "MIN", "MED", "SM")
#: token ids: digits 0-9, then the operators, then ``]`` and padding
VOCAB = [str(d) for d in range(10)] + list(OPS) + ["]", "<pad>"]
CLOSE, PAD = VOCAB.index("]"), VOCAB.index("<pad>")

Expr = int | tuple[str, list[Any]]


#: the deepest nesting an expression given to a model may have (the deeper test split's bound)
MAX_NESTING = 16
#: the most operators and digits one expression given to a model may hold (Long Range Arena's are at most 2,000
#: tokens long); past it, one expression's attention alone would hold the machine
MAX_NODES = 1 << 14


def check_expressions(exprs: object, where: str, name: str) -> list[Expr]:
    """``exprs`` if it is a non-empty list of expressions, each a digit ``0..9`` or ``(OP, [args])`` with ``OP`` one of
    :data:`OPS` and at least one argument, nesting at most :data:`MAX_NESTING` levels and holding at most
    :data:`MAX_NODES` operators and digits; else an :class:`~training.InputError` naming the first bad one (walked
    without recursion, and no further than the bounds: any depth or size is answered at once)."""
    if isinstance(exprs, str | bytes | tuple) or not isinstance(exprs, list):
        raise InputError(f"{where}: {name} must be a list of expressions, got {type(exprs).__name__}")
    if not exprs:
        raise InputError(f"{where}: {name} is an empty list; pass at least one expression")
    for i, e in enumerate(exprs):
        problem = _problem(e)
        if problem is not None:
            raise InputError(f"{where}: {name}[{i}] {problem}")
    return exprs


def _problem(e: object) -> str | None:
    """What makes ``e`` no expression, or ``None``."""
    stack: list[tuple[object, int]] = [(e, 0)]
    nodes = 0
    while stack:
        node, level = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"holds more than {MAX_NODES:,} operators and digits; split it, or give smaller expressions"
        if isinstance(node, int) and not isinstance(node, bool):
            if not 0 <= node <= 9:
                return f"holds the number {node}; the leaves are digits 0..9"
            continue
        if not (isinstance(node, tuple) and len(node) == 2):
            return f"holds {node!r:.40}; a node is a digit 0..9 or (OP, [arguments]) with OP one of {', '.join(OPS)}"
        op, args = node
        if op not in OPS:
            return f"holds the operator {op!r:.20}; the operators are {', '.join(OPS)}"
        if not isinstance(args, list | tuple) or not args:
            return f"holds ({op!r}, {args!r:.30}); an operator takes a non-empty list of arguments"
        if nodes + len(stack) + len(args) > MAX_NODES:
            return f"holds more than {MAX_NODES:,} operators and digits; split it, or give smaller expressions"
        if level + 1 > MAX_NESTING:
            return f"nests more than {MAX_NESTING} levels of operators"
        stack.extend((a, level + 1) for a in args)
    return None


def evaluate(e: Expr) -> int:
    """The digit an expression denotes."""
    if isinstance(e, int):
        return e
    op, args = e
    vals = [evaluate(a) for a in args]
    if op == "MAX":
        return max(vals)
    if op == "MIN":
        return min(vals)
    if op == "MED":
        return sorted(vals)[len(vals) // 2]
    return sum(vals) % 10


def nesting(e: Expr) -> int:
    """How deeply an expression's operators nest: ``0`` for a digit, ``1`` for ``[OP digits]``, ..."""
    return 0 if isinstance(e, int) else 1 + max(nesting(a) for a in e[1])


def random_expr(rng: random.Random, depth: int, max_args: int, p_nest: float) -> Expr:
    """An operator node with ``2..max_args`` arguments; arguments nest with probability ``p_nest``."""
    k = rng.randint(2, max_args)
    args: list[Expr] = [
        random_expr(rng, depth - 1, max_args, p_nest) if depth > 1 and rng.random() < p_nest else rng.randint(0, 9)
        for _ in range(k)
    ]
    return (rng.choice(OPS), args)


def nested_exactly(rng: random.Random, depth: int, max_args: int, p_nest: float) -> Expr:
    """An expression nesting exactly ``depth`` levels: one random argument nests ``depth - 1``, the rest at most."""
    if depth <= 1:
        return random_expr(rng, 1, max_args, p_nest)
    k = rng.randint(2, max_args)
    deep = rng.randrange(k)
    args: list[Expr] = [
        nested_exactly(rng, depth - 1, max_args, p_nest)
        if i == deep
        else random_expr(rng, depth - 1, max_args, p_nest)
        if rng.random() < p_nest
        else rng.randint(0, 9)
        for i in range(k)
    ]
    return (rng.choice(OPS), args)


def flat_tokens(e: Expr) -> list[int]:
    """``[OP a1 ... ]`` token ids (the operator token stands for ``[OP``)."""
    if isinstance(e, int):
        return [e]
    op, args = e
    return [VOCAB.index(op), *(t for a in args for t in flat_tokens(a)), CLOSE]


def binary_tree(e: Expr) -> Any:
    """The expression as nested 2-tuples of token ids: ``(OP, balanced(args))``."""
    if isinstance(e, int):
        return e
    op, args = e
    return (VOCAB.index(op), _balanced([binary_tree(a) for a in args]))


def _balanced(items: list[Any]) -> Any:
    if len(items) == 1:
        return items[0]
    h = len(items) // 2
    return (_balanced(items[:h]), _balanced(items[h:]))


@dataclass(frozen=True)
class Split:
    """One split of the data: expressions and their values."""

    exprs: list[Expr]
    labels: Tensor  # (n,) int64

    def __len__(self) -> int:
        return len(self.exprs)


#: the deepest nesting the generator gives the training and test splits
DEPTH = 3


def generate(n: int, seed: int, depth: int = DEPTH, max_args: int = 4, p_nest: float = 0.35) -> Split:
    """``n`` expressions from a seeded generator (nesting at most ``depth``)."""
    rng = random.Random(seed)
    exprs = [random_expr(rng, depth, max_args, p_nest) for _ in range(n)]
    return Split(exprs, torch.tensor([evaluate(e) for e in exprs]))


def generate_deep(n: int, seed: int, deepest: int, max_args: int = 4, p_nest: float = 0.35) -> Split:
    """``n`` expressions nesting more than :data:`DEPTH` levels: exactly ``DEPTH + 1 .. deepest``, in turn."""
    rng = random.Random(seed)
    exprs = [nested_exactly(rng, DEPTH + 1 + i % (deepest - DEPTH), max_args, p_nest) for i in range(n)]
    return Split(exprs, torch.tensor([evaluate(e) for e in exprs]))


@dataclass(frozen=True)
class Splits:
    """The job's data: a training split, a held-out test split (another seed) and a deeper test split."""

    train: Split
    test: Split
    #: expressions nested deeper than any in ``train`` (``None``: not asked for)
    deep: Split | None = None


def splits(n_train: int, n_test: int, seed: int, n_deep: int = 0, deepest: int = DEPTH + 3) -> Splits:
    """``n_train`` training expressions from ``seed``, ``n_test`` test ones from ``seed + 1``, ``n_deep`` deeper.

    The deeper split (seed ``seed + 2``) nests ``DEPTH + 1 .. deepest`` levels, more than any training expression.
    """
    deep = generate_deep(n_deep, seed + 2, deepest) if n_deep else None
    return Splits(generate(n_train, seed), generate(n_test, seed + 1), deep)


def tree_batch(
    exprs: list[Expr], algebra: NodeAlgebra, device: torch.device | str | None = None
) -> tuple[Tree, Tensor]:
    """The trees of a batch and their leaf token ids ``(batch, N)`` (``PAD`` at padding)."""
    tree, leaves = Tree.from_nested([binary_tree(e) for e in exprs], algebra, device)
    tokens = torch.full((len(exprs), tree.size), PAD, dtype=torch.long)
    for i, row in enumerate(leaves):
        tokens[i, : len(row)] = torch.tensor(row)
    return tree, tokens.to(device)


def flat_batch(exprs: list[Expr]) -> Tensor:
    """Flat token ids ``(batch, L)``, right-padded with ``PAD``."""
    rows = [flat_tokens(e) for e in exprs]
    out = torch.full((len(rows), max(len(r) for r in rows)), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out
