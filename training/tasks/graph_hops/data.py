"""Seeded random graphs whose node labels need two hops: is a marked node at distance 1 or 2?

A graph has 16-32 nodes, undirected edges (about ``1.5 n`` of them, average degree 3, stored both ways) and about
8% of its nodes marked; a node's label is whether a marked node other than itself lies within two hops. A batch
is a padded :class:`instances.Graph` with self-loops, the marks and the labels (``-1`` at padding).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch
from torch import Tensor

from instances import Graph

#: one graph: its node count, directed edges (both ways), marks and labels
Sample = tuple[int, list[tuple[int, int]], list[int], list[int]]


def sample(rng: random.Random) -> Sample:
    """One graph: node count, directed edges (both ways), marks, labels."""
    n = rng.randint(16, 32)
    pairs = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(int(1.5 * n))}
    edges = [(a, b) for a, b in pairs] + [(b, a) for a, b in pairs]
    marked = [int(rng.random() < 0.08) for _ in range(n)]
    near = [set() for _ in range(n)]  # type: list[set[int]]
    for a, b in edges:
        near[b].add(a)
    labels = []
    for i in range(n):
        two = set(near[i]).union(*(near[j] for j in near[i])) - {i}
        labels.append(int(any(marked[j] for j in two)))
    return n, edges, marked, labels


def batch(graphs: Sequence[Sample], device: torch.device | str = "cpu") -> tuple[Graph, Tensor, Tensor]:
    """The graphs with self-loops, the marks ``(B, n)`` and labels ``(B, n)`` (``-1`` at padding), on ``device``."""
    g = Graph.from_lists([e for _, e, _, _ in graphs], [n for n, _, _, _ in graphs]).with_self_loops()
    marks = torch.zeros(len(graphs), g.size, dtype=torch.int64)
    labels = torch.full((len(graphs), g.size), -1, dtype=torch.int64)
    for b, (n, _, m, y) in enumerate(graphs):
        marks[b, :n], labels[b, :n] = torch.tensor(m), torch.tensor(y)
    return Graph(g.size, g.edges.to(device), g.count.to(device)), marks.to(device), labels.to(device)
