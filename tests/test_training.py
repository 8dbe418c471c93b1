"""The shared training loop through the Poisson job: safe checkpoints, clean errors, signals, locks, loading.

Every user error at the command line is one line on stderr and exit status 2 (never a traceback);
nothing a checkpoint holds can run code; SIGTERM checkpoints like Ctrl-C and a resumed run ends with
exactly the parameters of an uninterrupted one; a trained model loads in one call and solves a
manufactured problem.
"""

from __future__ import annotations

import json
import math
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from examples.poisson.__main__ import main
from operators.poisson.solver import PoissonSolver
from training import ConfigError, Diverged, RunDir, UserError, load_checkpoint
from training.config import CONVENTIONS
from training.loop import Progress
from training.tasks import poisson
from training.tasks.poisson import data, train
from training.tasks.poisson.config import PRESETS
from training.tasks.poisson.model import CHECKPOINT, PoissonModel

TINY = PRESETS["tiny"]
ARGS = ["--preset", "tiny", "--no-progress", "--device", "cpu"]  # the default is cuda where there is one
PLAIN = ["--config", "odd=false"]  # the data-parallel comparisons (see there)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*ARGS, *argv])
    err = capsys.readouterr().err
    return code, err


class _Payload:
    """Unpickling this object runs ``open(path, "w")``: the side effect a hostile checkpoint would have."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_hostile_checkpoint_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    out = tmp_path / "run"
    out.mkdir()
    (out / ".program").write_text("python -m examples.poisson\n")  # a run of this program, its checkpoint swapped
    torch.save({"config": {}, "step": 0, "task": _Payload(str(marker))}, out / CHECKPOINT)
    code, err = _cli(capsys, "--out", str(out))
    assert code == 2
    assert "refused to load" in err and str(out / CHECKPOINT) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()  # the payload never ran


@pytest.mark.parametrize("content", [b"", b"garbage bytes", None], ids=["empty", "garbage", "truncated"])
def test_unreadable_checkpoint_names_the_file(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "checkpoint.pt"
    if content is None:
        torch.save({"step": 1, "w": torch.zeros(1000)}, path)
        path.write_bytes(path.read_bytes()[:200])
    else:
        path.write_bytes(content)
    with pytest.raises(Exception, match=str(path)) as info:
        load_checkpoint(path)
    assert "delete it" in str(info.value)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--config", "normalise=bogus"], "normalise='bogus': must be one of"),
        (["--config", "model=foo"], "model='foo': must be one of"),
        (["--config", "clip=nan"], "clip=nan: must be finite"),
        (["--steps", "-5"], "steps=-5: must be >= 1"),
        (["--config", "heads=abc"], "heads='abc': must be an integer"),
        (["--config", "heads"], "expected FIELD=VALUE"),
        (["--config", "eval_every=0"], "eval_every=0: must be >= 1"),
        (["--config", "dtype=int64"], "dtype='int64': must be one of"),
        (["--config", "dtype=bogus"], "dtype='bogus': must be one of"),
        (["--config", "batch=0"], "batch=0: must be >= 1"),
        (["--config", "nosuch=1"], "no such config field"),
        (["--config", "heads=3"], "heads must divide width"),
        (["--device", "cuda:7" if torch.cuda.is_available() else "cuda"], "--device cuda"),
        (["--device", "bogus"], "--device 'bogus': not a device"),
        *([] if torch.cuda.is_available() else [(["--amp"], "--amp (bf16 autocast) needs a CUDA device")]),
    ],
)
def test_bad_input_is_one_line_before_any_work(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "splits", lambda *a, **k: pytest.fail("data generated before the input was checked"))
    code, err = _cli(capsys, "--out", str(tmp_path / "run"), *argv)
    assert code == 2
    assert says in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_out_fails_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    code, err = _cli(capsys, "--out", str(ro / "run"))
    assert code == 2 and "cannot write to --out" in err


def test_unwritable_out_fails_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "splits", lambda *a, **k: pytest.fail("data generated before --out was checked"))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, err = _cli(capsys, "--out", str(blocker / "run"))
    assert code == 2 and "cannot write to --out" in err and str(blocker / "run") in err


def test_a_second_run_into_one_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with RunDir(out):  # another run holds it
        code, err = _cli(capsys, "--out", str(out))
    assert code == 2 and "another run" in err and f"pid {os.getpid()}" in err
    assert main([*ARGS, "--out", str(out)]) == 0  # free again


def test_a_run_directory_belongs_to_one_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Poisson run's directory refuses the ListOps program (and a ListOps run's the Poisson program) in one line
    naming both, before either writes a file; the program that owns it resumes there as before."""
    from examples.tree_listops.__main__ import main as listops

    out = tmp_path / "run"
    assert main([*ARGS, "--steps", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".lock"}
    assert listops(["--preset", "tiny", "--no-progress", "--models", "vector", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds a run of python -m examples.poisson" in err, err
    assert "python -m examples.tree_listops would overwrite" in err, err
    assert before == {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".lock"}
    assert not (out / "vector").exists()
    other = tmp_path / "listops"
    with RunDir(other, "python -m examples.tree_listops"):  # what a ListOps run leaves behind: its name
        pass
    code, err = _cli(capsys, "--out", str(other))
    assert code == 2 and "holds a run of python -m examples.tree_listops; python -m examples.poisson" in err, err


def test_sigterm_checkpoints_and_resume_is_bit_identical(tmp_path: Path) -> None:
    cfg = TINY.replace(checkpoint_every=7)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes)
    straight = train.train(cfg, splits, tmp_path / "a", progress=False)

    def term(run: Progress) -> None:
        if run.step == 9:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(KeyboardInterrupt, match="SIGTERM at step 9"):
        train.train(cfg, splits, tmp_path / "b", progress=False, on_step=term)
    resumed = train.train(cfg, splits, tmp_path / "b", progress=False)
    assert resumed.resumed_from == 9 and resumed.step == cfg.steps
    for (k, p), (_, q) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items(), strict=True):
        assert torch.equal(p, q), k
    assert straight.history == resumed.history


def test_a_finished_run_is_extended_by_more_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main([*ARGS, "--out", str(out)]) == 0
    assert main([*ARGS, "--out", str(out), "--steps", "30"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 30 and report["resumed_from_step"] == TINY.steps
    assert report["device"] == "cpu" and report["torch"] == torch.__version__
    assert [r["step"] for r in report["history"]] == [10, 20, 30]
    assert "resumed from step 20" in capsys.readouterr().out


def test_divergence_says_what_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CONVENTIONS, "lr", {"max": 1e31})  # a rate the configs refuse, to force a divergence
    cfg = TINY.replace(lr=1e30, clip=0.0, warmup=0.0, eval_every=1, checkpoint_every=100)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes)
    with pytest.raises(Diverged, match="no checkpoint had been written"):
        train.train(cfg, splits, tmp_path, progress=False)
    with pytest.raises(Diverged, match="nothing was saved"):
        train.train(cfg, splits, None, progress=False)


def test_config_change_names_each_field(tmp_path: Path) -> None:
    splits = data.splits(TINY.n_train, TINY.n_test, TINY.seed, TINY.modes)
    train.train(TINY, splits, tmp_path, progress=False, stop_after=3)
    with pytest.raises(ConfigError, match=rf"lr: {TINY.lr} -> 0.5; heads: 2 -> 4"):
        train.train(TINY.replace(lr=0.5, heads=4), splits, tmp_path, progress=False)


def test_load_gives_the_trained_model_and_solves_a_manufactured_problem(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main([*ARGS, "--out", str(out)]) == 0
    model = poisson.load(out)
    splits = data.splits(TINY.n_train, TINY.n_test, TINY.seed, TINY.modes, sources=TINY.sources)
    trained = train.train(TINY, splits, out, progress=False)  # the finished run, from its checkpoint (its data)
    f = splits.test.f[:3]
    torch.testing.assert_close(train.predict(model, f), train.predict(trained.model, f), rtol=0, atol=0)
    # the state dict alone restores the scale (a buffer), so nothing else is needed to rebuild the model
    again = poisson.PoissonModel(TINY)
    again.load_state_dict(model.state_dict())
    torch.testing.assert_close(train.predict(again, f), train.predict(model, f), rtol=0, atol=0)

    # solve: a callable source -> the solution on any grid; with the exact solver as the operator it recovers
    # the manufactured solution g = sin(πx) sin(2πy) (1 + x/2), whose Laplacian is computed by hand
    n, exact = 24, PoissonSolver(60)

    class Exact:
        modes = n

        def __call__(self, c: torch.Tensor) -> torch.Tensor:
            return exact.solve(c)[..., :n, :n]

    pi = math.pi

    def g(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sin(pi * x) * torch.sin(2 * pi * y) * (1 + x / 2)

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # Δg
        sx, cx, sy = torch.sin(pi * x), torch.cos(pi * x), torch.sin(2 * pi * y)
        gxx = (-(pi**2) * sx * (1 + x / 2) + pi * cx) * sy
        gyy = -4 * pi**2 * sx * (1 + x / 2) * sy
        return gxx + gyy

    x, y = torch.linspace(-1, 1, 37, dtype=torch.float64), torch.linspace(-0.9, 0.7, 23, dtype=torch.float64)
    want = g(*torch.meshgrid(x, y, indexing="ij"))
    got = poisson.solve(Exact(), f, x, y)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-8)
    # a source given as values on a grid is fitted, then solved the same way
    gx = torch.linspace(-1, 1, 64, dtype=torch.float64)
    values = f(*torch.meshgrid(gx, gx, indexing="ij"))
    torch.testing.assert_close(poisson.solve(Exact(), values, x, y, grid=(gx, gx)), want, rtol=0, atol=1e-6)
    # and the trained model answers on the same grid (shape and dtype; its accuracy is the job's report)
    assert poisson.solve(model, f, x, y).shape == (37, 23)


# ---- data parallel: torchrun, 2 processes on the CPU (gloo) ------------------------------------


def _torchrun(out: Path, steps: int) -> None:
    root = Path(__file__).resolve().parents[1]
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        "-m", "examples.poisson", *ARGS, "--steps", str(steps), *PLAIN, "--config", "dtype=float64", "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(out / CHECKPOINT)["task"]["model"]  # type: ignore[no-any-return]


def test_two_processes_take_the_steps_of_one_and_resume_across_process_counts(tmp_path: Path) -> None:
    """2 processes x batch B/2 (DDP, gloo) = 1 process x batch B, step for step; a checkpoint of one
    process resumes under two. Not odd: the odd part's bias gradients are exactly zero, so what reaches Adam is
    rounding, which its normalisation lifts to 1e-11 differences between the two summation orders."""
    cfg = TINY.replace(steps=6, dtype="float64", odd=False)
    assert main([*ARGS, "--steps", "6", *PLAIN, "--config", "dtype=float64", "--out", str(tmp_path / "one")]) == 0
    _torchrun(tmp_path / "two", 6)
    one, two = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-12, atol=1e-12, msg=k)
    assert not torch.equal(one["net.position"], PoissonModel(cfg).state_dict()["net.position"])  # it trained

    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    train.train(cfg, splits, tmp_path / "mixed", progress=False, stop_after=3)  # one process, to step 3
    (tmp_path / "mixed" / ".program").write_text("python -m examples.poisson\n")  # the command line's to go on with
    _torchrun(tmp_path / "mixed", 6)  # two processes, from step 3 to 6
    mixed = _weights(tmp_path / "mixed")
    for k in one:
        torch.testing.assert_close(mixed[k], one[k], rtol=1e-12, atol=1e-12, msg=k)


def test_listops_trees_shard_across_two_processes(tmp_path: Path) -> None:
    """Each process builds the trees of its slice of the batch; the averaged gradient is the whole batch's
    (float32: compared through Adam's first moment after one step, which is 0.1 x the gradient)."""
    from examples.tree_listops.__main__ import main as listops

    root = Path(__file__).resolve().parents[1]
    argv = ["--preset", "tiny", "--steps", "1", "--models", "tree-mean", "--no-progress", "--device", "cpu"]
    assert listops([*argv, "--out", str(tmp_path / "one")]) == 0
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]
    done = subprocess.run(
        [*cmd, "examples.tree_listops", *argv, "--out", str(tmp_path / "two")],
        cwd=root, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    one, two = (load_checkpoint(tmp_path / d / "tree-mean" / CHECKPOINT)["task"] for d in ("one", "two"))
    moments = [
        (one["optimiser"]["state"][i]["exp_avg"], two["optimiser"]["state"][i]["exp_avg"])
        for i in one["optimiser"]["state"]
    ]
    assert any(bool(a.abs().max() > 0) for a, _ in moments)
    for a, b in moments:  # float32 sums in another order: relative to each tensor's scale
        assert float((b - a).abs().max()) <= 1e-5 * float(a.abs().max()) + 1e-10


def test_more_processes_than_gpus_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """torchrun with 2 processes on a 1-GPU node and ``--device cuda``: the second process is told what to
    change, not handed CUDA's "invalid device ordinal" from inside ``set_device`` (seen on a 1-GPU H100)."""
    from training import distributed

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: pytest.fail("set_device reached"))
    with pytest.raises(UserError, match=r"process 1 of this node has no GPU.*--nproc_per_node.*--device cpu"):
        distributed.setup(torch.device("cuda"))


# ---- a resume checks what it resumes: its data and its budget; --restart starts afresh --------------------


def test_a_resume_on_other_data_is_refused_naming_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The checkpoint records the training data's fingerprint: the same run directory given other data (here the
    sources scaled by 1000, shapes alike) is refused in one line naming both; ``--restart`` starts afresh on them."""
    cfg = TINY.replace(steps=4)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    train.train(cfg, splits, tmp_path, progress=False, stop_after=2)
    other = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    scaled = type(other.train)(other.train.f * 1000, other.train.g * 1000)
    other = type(other)(scaled, other.test, other.ood)
    with pytest.raises(ConfigError) as refused:
        train.train(cfg, other, tmp_path, progress=False)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / CHECKPOINT}: it was trained on the Poisson sources of seed 0 (sources ")
    assert "not on the Poisson sources of seed 0" in message and "--restart" in message and "\n" not in message
    again = train.train(cfg, other, tmp_path, progress=False, restart=True)
    assert again.resumed_from is None and again.step == cfg.steps
    assert train.train(cfg, other, tmp_path, progress=False).resumed_from == cfg.steps  # its own data now


def test_the_budget_asked_is_the_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a resume as on a fresh run: an unfinished run is not resumed under another budget (its schedule would
    change), a run past the budget asked is not passed off as it, and a finished run may be extended."""
    out = tmp_path / "run"
    cfg = TINY.replace(steps=6)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    train.train(cfg, splits, out, progress=False, stop_after=3)
    (out / ".program").write_text("python -m examples.poisson\n")
    code, err = _cli(capsys, "--out", str(out), "--steps", "10")
    assert code == 2 and "stopped at step 3 of its 6; going on to 10 would change its schedule" in err, err
    assert len(err.strip().splitlines()) == 1
    assert main([*ARGS, "--out", str(out), "--steps", "6"]) == 0  # its own budget finishes it
    code, err = _cli(capsys, "--out", str(out), "--steps", "4")
    assert code == 2 and "has trained 6 steps, past the 4 asked" in err, err
    assert main([*ARGS, "--out", str(out), "--steps", "4", "--restart"]) == 0
    assert json.loads((out / "report.json").read_text())["steps"] == 4


def test_a_refused_run_leaves_the_directory_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every check runs before the directory is claimed: a run refused by its resume leaves no ``.program`` (which
    would lock the rightful owner out), no lock file and no directory it made."""
    from examples.tree_listops.__main__ import main as listops

    out = tmp_path / "new" / "run"
    with pytest.raises(UserError, match="refused"), RunDir(out, "python -m examples.poisson"):
        assert (out / ".program").read_text() == "python -m examples.poisson\n"  # claimed, then a check fails
        raise UserError("refused")
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="refused"), RunDir(empty, "python -m examples.poisson"):
        raise UserError("refused")
    assert list(empty.iterdir()) == []
    assert main([*ARGS, "--steps", "2", "--out", str(out)]) == 0
    (out / ".program").unlink()  # an older run, from before the owner was recorded
    assert listops(["--preset", "tiny", "--no-progress", "--models", "vector", "--out", str(out)]) == 2
    assert "holds files (" in capsys.readouterr().err and not (out / ".program").exists()
    (out / ".program").write_text("python -m examples.poisson\n")
    before = sorted(p.name for p in out.iterdir())
    code, err = _cli(capsys, "--out", str(out), "--steps", "2", "--config", "lr=0.5")  # refused by its resume
    assert code == 2 and "another config" in err and sorted(p.name for p in out.iterdir()) == before


def test_the_owner_file_is_read_as_a_small_regular_file_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for name, make in {
        "link": lambda p: p.symlink_to(secret),
        "fifo": lambda p: os.mkfifo(p),
        "directory": lambda p: p.mkdir(),
        "binary": lambda p: p.write_bytes(b"\x00\xff" * 10),
        "large": lambda p: p.write_text("python -m examples.poisson " * 100),
    }.items():
        out = tmp_path / name
        out.mkdir()
        make(out / ".program")
        code, err = _cli(capsys, "--out", str(out))
        assert code == 2 and "has a .program that is not a run's record" in err, (name, err)
        assert "root:x" not in err and "python -m examples.poisson python" not in err


def test_a_fifo_checkpoint_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / ".program").write_text("python -m examples.poisson\n")
    os.mkfifo(out / CHECKPOINT)
    code, err = _cli(capsys, "--out", str(out))
    assert code == 2 and f"{out / CHECKPOINT}: is a FIFO (a named pipe), not a checkpoint file" in err, err
    with pytest.raises(UserError, match="is a FIFO"):
        poisson.load(out)
