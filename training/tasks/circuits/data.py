"""Seeded arithmetic circuits mod 10 with shared subexpressions, as DAG batches and as unrolled trees.

A circuit of depth ``d`` and width ``w`` has ``w + 1`` digit sources at level 0, ``w`` operation nodes at
each level ``1 .. d - 1`` and one output node at level ``d``. A node at level ``k`` reads one child from
level ``k - 1`` (so its level is exactly ``k``) and the other from level ``k - 1`` (probability 3/4) or
any earlier level, in random order, with an operation from :data:`OPS` (ListOps' sum mod 10, max and
min, and the difference mod 10; products mod 10 are left out: they drive most outputs to 0). Each node
is read by about two parents, so the output's expression tree -- the circuit with every shared subexpression
written out -- has up to ``2^d`` leaves, while the circuit has ``w d + 1`` nodes. Nodes the output does
not read are dropped. Everything is drawn from ``random.Random(seed)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from instances import DAG, Expressions
from instances.dag import Node

OPS = ["+", "-", "max", "min"]
EXACT: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: (a + b) % 10,
    "-": lambda a, b: (a - b) % 10,
    "max": max,
    "min": min,
}


@dataclass(frozen=True)
class Circuit:
    """Nodes in topological order (``None``: a source), a digit per node (``0`` at operations), the output's value."""

    nodes: list[Node]
    digits: list[int]
    value: int
    depth: int


def evaluate(nodes: Sequence[Node], digits: Sequence[int]) -> list[int]:
    """Every node's value, in topological order (each node once)."""
    out: list[int] = []
    for node, x in zip(nodes, digits, strict=True):
        out.append(x if node is None else EXACT[node[0]](out[node[1]], out[node[2]]))
    return out


def circuit(rng: random.Random, depth: int, width: int = 3) -> Circuit:
    """One random circuit whose output is at level ``depth``."""
    levels: list[list[int]] = [list(range(width + 1))]
    nodes: list[Node] = [None] * (width + 1)
    for k in range(1, depth + 1):
        here = []
        for _ in range(1 if k == depth else width):
            a = rng.choice(levels[k - 1])
            b = rng.choice(levels[k - 1] if rng.random() < 0.75 else [i for lv in levels for i in lv])
            if rng.random() < 0.5:
                a, b = b, a
            here.append(len(nodes))
            nodes.append((rng.choice(OPS), a, b))
        levels.append(here)
    # keep the output's ancestors only, renumbered in the same (topological) order
    keep, stack = set(), [len(nodes) - 1]
    while stack:
        i = stack.pop()
        if i not in keep:
            keep.add(i)
            node = nodes[i]
            if node is not None:
                stack += [node[1], node[2]]
    new = {old: j for j, old in enumerate(sorted(keep))}
    kept: list[Node] = []
    for old in sorted(keep):
        node = nodes[old]
        kept.append(None if node is None else (node[0], new[node[1]], new[node[2]]))
    digits = [rng.randrange(10) if node is None else 0 for node in kept]
    return Circuit(kept, digits, evaluate(kept, digits)[-1], depth)


def generate(n: int, depths: Sequence[int], seed: int, width: int = 3) -> list[Circuit]:
    """``n`` circuits, depths drawn uniformly from ``depths``."""
    rng = random.Random(seed)
    return [circuit(rng, rng.choice(list(depths)), width) for _ in range(n)]


def unroll(c: Circuit, i: int | None = None) -> Any:
    """Node ``i`` (default: the output) as a nested ``(op, left, right)`` tree with digits at the leaves."""
    i = len(c.nodes) - 1 if i is None else i
    node = c.nodes[i]
    return c.digits[i] if node is None else (node[0], unroll(c, node[1]), unroll(c, node[2]))


def tree_size(c: Circuit) -> int:
    """Leaves of the unrolled tree (without building it)."""
    size: list[int] = []
    for node in c.nodes:
        size.append(1 if node is None else size[node[1]] + size[node[2]])
    return size[-1]


def dag_batch(circuits: Sequence[Circuit], device: torch.device | str | None = None) -> tuple[DAG, Tensor, Tensor]:
    """The circuits as one :class:`DAG` batch, the digits ``(B, N)`` (int64) and the outputs ``(B,)``, on ``device``."""
    dag = DAG.from_lists([c.nodes for c in circuits], OPS, device)
    digits = torch.zeros(len(circuits), dag.size, dtype=torch.int64)
    for b, c in enumerate(circuits):
        digits[b, : len(c.digits)] = torch.tensor(c.digits)
    return dag, digits.to(device), torch.tensor([c.value for c in circuits], device=device)


def tree_batch(
    circuits: Sequence[Circuit], device: torch.device | str | None = None
) -> tuple[Expressions, Tensor, Tensor]:
    """The unrolled circuits as :class:`Expressions`, the leaf digits ``(B, L)`` and the outputs ``(B,)``."""
    e, leaves = Expressions.from_nested([unroll(c) for c in circuits], OPS, device)
    digits = torch.zeros(len(circuits), e.tree.size, dtype=torch.int64)
    for b, row in enumerate(leaves):
        digits[b, : len(row)] = torch.tensor(row)
    return e, digits.to(device), torch.tensor([c.value for c in circuits], device=device)
