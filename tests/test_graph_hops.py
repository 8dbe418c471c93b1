"""The two-hop graph example: its labels against scipy's shortest paths, and a smoke run."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from examples.graph_hops import batch, experiment, main, sample
from training import UserError


def test_labels_are_a_marked_node_within_two_hops() -> None:
    rng = random.Random(0)
    for _ in range(50):
        n, edges, marked, labels = sample(rng)
        a = np.zeros((n, n))
        for s, t in edges:
            a[s, t] = 1
        dist = shortest_path(csr_matrix(a), unweighted=True)
        want = [int(any(marked[j] and 0 < dist[i, j] <= 2 for j in range(n))) for i in range(n)]
        assert labels == want
    g, marks, y = batch([sample(rng) for _ in range(3)])
    assert bool((g.adjacency().diagonal(dim1=-2, dim2=-1)[g.mask] >= 1).all())  # self-loops at every node
    assert bool(((y >= 0) == g.mask).all()) and marks.shape == y.shape


def test_the_program_runs() -> None:
    torch.set_num_threads(1)
    results = experiment(["--steps", "2", "--models", "ours,ours-1", "--train", "40", "--test", "10"])
    assert [r["model"] for r in results] == ["ours", "ours-1"]
    with pytest.raises(UserError, match="--models from"):
        experiment(["--models", "gcn"])
    assert main(["--models", "gcn"]) == 2
