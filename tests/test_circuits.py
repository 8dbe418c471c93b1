"""The circuits example: its data against the exact folds, and a smoke run of the program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from applicative import Field
from examples.circuits.__main__ import experiment, main
from instances import by_op
from training import UserError
from training.tasks.circuits.data import EXACT, OPS, dag_batch, generate, tree_batch, tree_size

pytestmark = pytest.mark.usefixtures("one_thread")


BATCHED = {
    "+": lambda a, b: torch.remainder(a + b, 10),
    "-": lambda a, b: torch.remainder(a - b, 10),
    "max": torch.maximum,
    "min": torch.minimum,
}
EXACT_FOLD = by_op(*(BATCHED[k] for k in OPS))


def test_labels_are_the_exact_dag_and_tree_folds_and_the_sharing_is_real() -> None:
    circuits = generate(300, [1, 2, 3, 4, 5, 6], seed=3)
    dag, digits, labels = dag_batch(circuits)
    got = dag.last(dag.fold(Field(digits.double(), (dag,)), EXACT_FOLD)).tensor
    assert torch.equal(got.long(), labels)
    e, leaves, tree_labels = tree_batch(circuits)
    assert torch.equal(e.fold(Field(leaves.double(), (e.tree,)), EXACT_FOLD).tensor.long(), labels)
    assert torch.equal(tree_labels, labels)
    assert set(EXACT) == set(OPS)
    for c in circuits:
        assert int(dag.level[circuits.index(c), len(c.nodes) - 1]) == c.depth  # the output sits at level d
    deep = [c for c in circuits if c.depth == 6]
    assert sum(tree_size(c) for c in deep) > 2.5 * sum(len(c.nodes) for c in deep)  # shared subexpressions
    assert generate(5, [3], seed=1) == generate(5, [3], seed=1)  # seeded


def test_the_program_runs(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    argv = ["--models", "dag,tree", "--steps", "4", "--train", "200", "--test", "40", "--width", "8", "--hidden", "8"]
    results = experiment([*argv, "--json", str(out), "--no-progress"])
    assert [r.model for r in results] == ["dag", "tree"]
    assert results[0].parameters == results[1].parameters  # the same cell on both sides
    assert out.exists() and set(results[0].accuracy) == {"depth 1-4", "depth 5", "depth 6"}
    with pytest.raises(UserError, match="--models: no model 'rnn'"):
        experiment(["--models", "rnn,dag"])
    assert main(["--models", "rnn,dag"]) == 2


def test_a_run_directory_holds_the_report_and_resumes(tmp_path: Path) -> None:
    """``--out``: report.json and a checkpoint per model; a larger --steps continues where the run stood."""
    argv = ["--preset", "tiny", "--models", "dag", "--no-progress", "--out", str(tmp_path)]
    experiment([*argv, "--steps", "5"])
    experiment([*argv, "--steps", "10"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["config"]["steps"] == 10 and report["results"][0]["resumed_from_step"] == 5
    assert (tmp_path / "dag" / "checkpoint.pt").exists()


def test_the_gnn_peer_runs() -> None:
    pytest.importorskip("torch_geometric")
    argv = ["--models", "gnn", "--steps", "3", "--batch", "16", "--train", "100", "--test", "20", "--width", "8"]
    (r,) = experiment([*argv, "--no-progress"])
    assert r.model == "gnn" and r.parameters > 0
