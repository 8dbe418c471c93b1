"""``applicative-transformers train --stream``: the command on data read from the files as the steps need them, in
one process or two under ``torchrun``. The streamed run's reported errors are checked against the in-memory
evaluation of the model it saved, and two processes against one, weight for weight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import training
from operators import heat
from operators.dataset import from_file
from operators.layout import Axis
from training.tasks.operator import errors
from training.tasks.operator.command import main

ROOT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_thread")


def _files(tmp_path: Path) -> list[str]:
    heat.write(tmp_path / "train.npz", 64, 16, 1, seed=0)
    heat.write(tmp_path / "test.npz", 12, 16, 1, seed=1)
    return [
        "--train",
        str(tmp_path / "train.npz"),
        "--test",
        str(tmp_path / "test.npz"),
        "--input-key",
        "u0",
        "--output-key",
        "u",
        "--layout",
        "periodic",
        "--stream",
        "--preset",
        "tiny",
        "--no-progress",
        "--workers",
        "0",
    ]


def test_a_streamed_run_reports_what_its_saved_model_scores_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["train", *_files(tmp_path), "--steps", "20", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "streamed" in said and "least-squares baseline skipped: the data are streamed" in said
    report = json.loads((out / "report.json").read_text())
    model = training.load(out)
    test = from_file(tmp_path / "test.npz", (Axis("periodic"),), input_key="u0", output_key="u")
    in_memory = errors(model, test)
    got = report["tests"]["test"]
    np.testing.assert_allclose([got["mean"], got["max"]], [float(in_memory.mean()), float(in_memory.max())], rtol=1e-5)
    assert got["samples"] == len(test) and report["steps"] == 20
    assert (out / "worst-test.png").exists()


def test_two_processes_under_torchrun_train_the_weights_of_one(tmp_path: Path) -> None:
    """float64, batch 8: two ranks of four pairs each take one process's steps to rounding (DDP averages the
    gradients of each rank's slice of the seeded global batch)."""
    args = [*_files(tmp_path), "--steps", "4", "--batch", "8", "--config", "dtype=float64"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    for name, head in (("one", []), ("two", ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"])):
        command = [sys.executable, *head, "-m", "examples.operator", *args, "--out", str(tmp_path / name)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    one = torch.load(tmp_path / "one" / "checkpoint.pt", weights_only=True)["task"]["model"]
    two = torch.load(tmp_path / "two" / "checkpoint.pt", weights_only=True)["task"]["model"]
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-9, atol=1e-11, msg=lambda m, k=k: f"{k}: {m}")
    reports = [json.loads((tmp_path / n / "report.json").read_text())["tests"]["test"] for n in ("one", "two")]
    assert reports[0]["mean"] == pytest.approx(reports[1]["mean"], rel=1e-10)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--time-axis", "1"], "a time axis (--time-axis) is read in memory"),
        (["--config", "augment=shifts"], "augment=shifts is not applied to streamed batches"),
        (["--log-input", "true"], "without log_input"),
    ],
)
def test_stream_refusals_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    assert main(["train", *_files(tmp_path), "--out", str(tmp_path / "r"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err, err


def test_torchrun_without_stream_is_refused_before_any_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["train", "--train", str(tmp_path / "absent.npz")]) == 2
    assert "under torchrun each process reads its share of the data: add --stream" in capsys.readouterr().err
