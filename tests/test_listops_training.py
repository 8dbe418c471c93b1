"""The ListOps job on the shared training loop: resume, one-line errors, signals, reports, loading.

A run stopped by SIGTERM and resumed ends with exactly the parameters of an uninterrupted one; every
user error at the command line is one line on stderr and exit status 2, before any work; a trained model
loads in one call and predicts what the trained model predicts. All on the ``tiny`` preset (seconds).
"""

from __future__ import annotations

import json
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from examples.tree_listops.__main__ import main
from training import CheckpointError, Interrupted, RunDir, Trained
from training.config import CONVENTIONS
from training.loop import Progress
from training.tasks import tree_listops
from training.tasks.tree_listops import data, train
from training.tasks.tree_listops.config import PRESETS
from training.tasks.tree_listops.model import CHECKPOINT, SPEC, ListOpsModel, sinusoid

TINY = PRESETS["tiny"]
ARGS = ["--preset", "tiny", "--no-progress", "--device", "cpu"]  # the default is cuda where there is one


@pytest.fixture(autouse=True)
def _keep_threads() -> Iterator[None]:
    threads = torch.get_num_threads()  # the job sets --threads (default 1)
    yield
    torch.set_num_threads(threads)


def _splits(cfg: Any = TINY) -> data.Splits:
    return data.splits(cfg.train, cfg.test, cfg.seed)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*ARGS, *argv])
    return code, capsys.readouterr().err


def _same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (k, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(p, q), k


@pytest.mark.parametrize("kind", ["tree-mean", "vector"])
def test_sigterm_checkpoints_and_resume_is_bit_identical(kind: Any, tmp_path: Path) -> None:
    cfg = TINY.replace(checkpoint_every=7, eval_every=5)
    splits = _splits(cfg)
    straight = train.train(cfg, kind, splits, tmp_path / "a", progress=False)

    def term(run: Progress) -> None:
        if run.step == 9:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted, match="SIGTERM at step 9"):
        train.train(cfg, kind, splits, tmp_path / "b", progress=False, on_step=term)
    assert torch.load(tmp_path / "b" / CHECKPOINT, weights_only=True)["step"] == 9
    resumed = train.train(cfg, kind, splits, tmp_path / "b", progress=False)
    assert resumed.resumed_from == 9 and resumed.step == cfg.steps
    _same_parameters(straight.model, resumed.model)
    assert straight.history == resumed.history
    assert [r["step"] for r in resumed.history] == [5, 10, 15, 20]
    assert not list((tmp_path / "b").glob("*.tmp"))


def test_command_line_sigterm_exits_143_and_the_rerun_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main([*ARGS, "--models", "tree-sum", "--out", str(tmp_path / "a")]) == 0
    real = train.train

    def stopped(*args: Any, **kwargs: Any) -> Trained:
        def term(run: Progress) -> None:
            if run.step == 6:
                os.kill(os.getpid(), signal.SIGTERM)

        return real(*args, **kwargs, on_step=term)

    monkeypatch.setattr(train, "train", stopped)
    code, err = _cli(capsys, "--models", "tree-sum", "--out", str(tmp_path / "b"))
    assert code == 128 + signal.SIGTERM == 143
    assert "SIGTERM at step 6" in err and "rerun the same command to resume" in err
    monkeypatch.setattr(train, "train", real)
    assert main([*ARGS, "--models", "tree-sum", "--out", str(tmp_path / "b")]) == 0
    assert "(resumed from step 6)" in capsys.readouterr().out
    _same_parameters(tree_listops.load(tmp_path / "a", "tree-sum"), tree_listops.load(tmp_path / "b", "tree-sum"))
    a, b = (json.loads((tmp_path / d / "report.json").read_text())["results"]["tree-sum"] for d in "ab")
    assert b["resumed_from_step"] == 6 and a["resumed_from_step"] is None
    assert a["history"] == b["history"] and a["test_accuracy"] == b["test_accuracy"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--config", "heads=abc"], "heads='abc': must be an integer"),
        (["--config", "lr=0"], "lr=0.0: must be >= 1e-12"),
        (["--config", "lr=nan"], "lr=nan: must be finite"),
        (["--config", "heads=3"], "heads must divide width"),
        (["--config", "heads"], "expected FIELD=VALUE"),
        (["--config", "nosuch=1"], "no such config field"),
        (["--config", "eval_every=0"], "eval_every=0: must be >= 1"),
        (["--steps", "-5"], "steps=-5: must be >= 1"),
        (["--batch", "two"], "batch='two': must be an integer"),
        (["--eval-every", "0"], "eval_every=0: must be >= 1"),
        (["--models", "tree-mean,bogus"], "no model 'bogus'"),
        (["--models", "vector,vector"], "vector named twice"),
        (["--threads", "0"], "argument --threads: 0 is out of range: must be in 1.."),
        (["--device", "cuda:7" if torch.cuda.is_available() else "cuda"], "--device cuda"),
        (["--device", "bogus"], "--device 'bogus': not a device"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--preset", "huge"], "argument --preset: invalid choice: 'huge'"),
    ],
)
def test_bad_input_is_one_line_before_any_work(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "splits", lambda *a, **k: pytest.fail("data generated before the input was checked"))
    code, err = _cli(capsys, "--out", str(tmp_path / "run"), *argv)
    assert code == 2
    assert says in err, err
    assert err.startswith("python -m examples.tree_listops: error: ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unusable_out_is_one_line_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "splits", lambda *a, **k: pytest.fail("data generated before --out was checked"))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, err = _cli(capsys, "--out", str(blocker / "run"))
    assert code == 2 and "cannot write to --out" in err and len(err.strip().splitlines()) == 1
    out = tmp_path / "run"
    with RunDir(out):  # another run holds it
        code, err = _cli(capsys, "--out", str(out))
    assert code == 2 and "another run" in err and f"pid {os.getpid()}" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_out_fails_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    code, err = _cli(capsys, "--out", str(ro / "run"))
    assert code == 2 and "cannot write to --out" in err


def test_a_changed_config_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    assert main([*ARGS, "--models", "tree-mean,vector", "--out", str(out)]) == 0
    monkeypatch.setattr(data, "splits", lambda *a, **k: pytest.fail("data generated before the resume was checked"))
    code, err = _cli(capsys, "--models", "vector", "--out", str(out), "--lr", "0.5", "--config", "width=32")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert str(out / "vector" / CHECKPOINT) in err and "lr: 0.001 -> 0.5; width: 16 -> 32" in err


def test_a_finished_run_is_extended_by_more_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main([*ARGS, "--models", "tree-mean", "--out", str(out)]) == 0
    before = tree_listops.load(out)
    assert main([*ARGS, "--models", "tree-mean", "--out", str(out), "--steps", "30"]) == 0
    report = json.loads((out / "report.json").read_text())
    result = report["results"]["tree-mean"]
    assert result["steps"] == 30 and result["resumed_from_step"] == TINY.steps
    assert report["device"] == "cpu" and report["torch"] == torch.__version__ and report["config"]["steps"] == 30
    assert [r["step"] for r in result["history"]] == [10, 20, 30]
    assert set(result["history"][0]) == {"step", "loss", "test_accuracy"}
    assert "resumed from step 20" in capsys.readouterr().out
    after = tree_listops.load(out)
    assert any(not torch.equal(p, q) for p, q in zip(before.parameters(), after.parameters(), strict=True))


def test_load_gives_the_trained_model(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main([*ARGS, "--models", "tree-mean,vector", "--out", str(out)]) == 0
    splits = _splits()
    exprs = splits.test.exprs
    report = json.loads((out / "report.json").read_text())["results"]
    for kind in ("tree-mean", "vector"):
        model = tree_listops.load(out, kind)
        assert isinstance(model, ListOpsModel) and model.kind == kind and not model.training
        trained = train.train(TINY, kind, splits, out / kind, progress=False)  # the finished run, from its checkpoint
        assert trained.resumed_from == TINY.steps
        _same_parameters(model, trained.model)
        torch.testing.assert_close(model(exprs), trained.model(exprs), rtol=0, atol=0)
        assert torch.equal(model.predict(exprs), trained.model.predict(exprs))
        assert report[kind]["test_accuracy"] == train.accuracy(model, splits.test)
        # a model's own directory loads too
        assert torch.equal(tree_listops.load(out / kind).predict(exprs), model.predict(exprs))
    with pytest.raises(CheckpointError, match="several trained models"):
        tree_listops.load(out)
    with pytest.raises(CheckpointError, match="no checkpoint there"):
        tree_listops.load(out, "tree-sum")
    with pytest.raises(CheckpointError, match="no checkpoint there"):
        tree_listops.load(tmp_path / "nothing")


def test_load_refuses_a_foreign_checkpoint(tmp_path: Path) -> None:
    torch.save({"config": {"steps": 1}, "task": {}}, tmp_path / CHECKPOINT)
    with pytest.raises(CheckpointError, match="does not record what it holds"):
        tree_listops.load(tmp_path)
    meta = SPEC.meta()
    torch.save({"meta": meta, "config": {"steps": 1}, "task": {}}, tmp_path / CHECKPOINT)
    with pytest.raises(CheckpointError, match=r"not a ListOps model \(its config field model is None"):
        tree_listops.load(tmp_path)


def test_a_divergence_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(CONVENTIONS, "lr", {"max": 1e31})  # a rate the configs refuse (lr <= 10), to force it
    argv = ["--models", "vector", "--out", str(tmp_path), "--lr", "1e30", "--eval-every", "1"]
    code, err = _cli(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "training diverged at step" in err and "try a smaller --lr" in err


def test_sinusoid_handles_odd_dimensions() -> None:
    for dims in (4, 5):
        got = sinusoid(7, dims)
        pos = torch.arange(7.0).unsqueeze(-1)
        freq = torch.exp(-torch.log(torch.tensor(1000.0)) * torch.arange(0, dims, 2) / dims)
        torch.testing.assert_close(got[:, 0::2], torch.sin(pos * freq))
        torch.testing.assert_close(got[:, 1::2], torch.cos(pos * freq[: dims // 2]))
    # so an odd number of position features works for the vector model too
    trained = train.train(TINY.replace(levels=5, steps=2), "vector", _splits(), None, progress=False)
    assert trained.step == 2


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_process_checkpoints_and_exits_128_plus_it(signum: int, tmp_path: Path) -> None:
    """The real command in its own process: a signal mid-training writes a checkpoint of the step it stopped at."""
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    argv = [sys.executable, "-m", "examples.tree_listops", "--preset", "tiny", "--steps", "100000", "--no-progress"]
    argv += ["--models", "tree-sum", "--out", str(out), "--config", "checkpoint_every=50"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "tree-sum" / CHECKPOINT).exists():  # training is under way (the handlers are set)
        assert proc.poll() is None and time.monotonic() < deadline, "the job did not start training"
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert f"{name} at step" in err and "Traceback" not in err
    step = torch.load(out / "tree-sum" / CHECKPOINT, weights_only=True)["step"]
    assert f"{name} at step {step};" in err and 50 <= step < 100000
