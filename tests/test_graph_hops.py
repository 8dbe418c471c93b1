"""The two-hop graph example: its labels against scipy's shortest paths, and a smoke run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from examples.graph_hops import experiment, main
from training import UserError
from training.tasks.graph_hops.data import batch, sample


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


def test_the_program_runs(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    results = experiment(["--preset", "tiny", "--steps", "2", "--models", "ours,ours-1", "--no-progress"])
    assert [r["model"] for r in results] == ["ours", "ours-1"]
    with pytest.raises(UserError, match="--models: no model 'gcn'"):
        experiment(["--models", "gcn"])
    assert main(["--models", "gcn"]) == 2
    assert main(["--preset", "tiny", "--batch", "100", "--train", "50"]) == 2  # a batch larger than the data


def test_a_resumed_run_is_the_uninterrupted_one(tmp_path: Path) -> None:
    """The checkpoint keeps the batch sampler (a ``random.Random``): 6 steps then 12 are 12 steps at once."""
    torch.set_num_threads(1)
    args = ["--preset", "tiny", "--models", "ours", "--no-progress", "--config", "eval_every=6"]
    experiment([*args, "--steps", "6", "--out", str(tmp_path / "a")])
    resumed = experiment([*args, "--steps", "12", "--out", str(tmp_path / "a")])
    whole = experiment([*args, "--steps", "12", "--out", str(tmp_path / "b")])
    assert resumed == [{**whole[0], "seconds": resumed[0]["seconds"]}]
    report = json.loads((tmp_path / "a" / "report.json").read_text())["results"][0]
    assert report["resumed_from_step"] == 6 and [r["step"] for r in report["history"]] == [6, 12]
    assert (tmp_path / "a" / "ours" / "checkpoint.pt").exists()
