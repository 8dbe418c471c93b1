"""The operator task end to end: data in every layout from exact solutions, trained through the Python API and the
command line, loaded back, and evaluated anywhere against the exact functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import training
from examples.operator.__main__ import main
from operators.dataset import samples
from tests.operator_cases import Case, antiderivative, periodic_inverse, poisson
from training.config import MAX_STEPS
from training.tasks.operator import PRESETS, InputError, OperatorModel, predict, train
from training.tasks.operator.program import parse_time

TINY = PRESETS["tiny"]


pytestmark = pytest.mark.usefixtures("one_thread")


def _relative(pred: np.ndarray, exact: np.ndarray) -> float:
    n = len(exact)
    return float(np.mean(np.sqrt(((pred - exact) ** 2).reshape(n, -1).sum(1) / (exact**2).reshape(n, -1).sum(1))))


def _elsewhere(model: OperatorModel, case: Case, inputs: torch.Tensor, seed: int) -> float:
    """The relative error of ``predict`` at random coordinates (a tensor grid) against the exact outputs."""
    gen = torch.Generator().manual_seed(7)
    coords = [a.lo + (a.hi - a.lo) * torch.rand(19, generator=gen, dtype=torch.float64) for a in case.axes]
    pred = predict(model, inputs, at=coords)[..., 0].numpy()
    c = case.draw(np.random.default_rng(seed), len(inputs))
    return _relative(pred, case.outputs(c, tuple(x.numpy() for x in coords)))


CASES = [
    (poisson("nodes"), 17, 150),
    (poisson("periodic"), 16, 150),  # Dirichlet data stored i/P: declared, not misread
    (poisson("centres"), 16, 150),
    (periodic_inverse(), 32, 400),  # a Fourier series along the circle
    (antiderivative("chebyshev"), 16, 150),
]


@pytest.mark.parametrize(("case", "points", "steps"), CASES, ids=lambda c: getattr(c, "name", None))
def test_the_model_learns_each_layout_and_predicts_anywhere(case: Case, points: int, steps: int) -> None:
    tr = samples(*case.sample(200, points, 0), case.axes)
    coarse = samples(*case.sample(20, points, 1), case.axes)
    fine = samples(*case.sample(20, 2 * points, 1), case.axes)  # the same functions, twice the resolution
    run = train(TINY.replace(steps=steps), tr, {"coarse": coarse, "fine": fine}, None, progress=False)
    errs = {k: float(v.mean()) for k, v in run.task.errors().items()}
    assert errs["coarse"] < 0.35, errs  # predicting zero is 1.0
    assert errs["fine"] <= 1.5 * errs["coarse"] + 0.02, errs
    # off the grid: the prediction is a function, as accurate between the samples as on them
    elsewhere = _elsewhere(run.trained.model, case, coarse.inputs, 1)
    assert elsewhere <= 1.2 * errs["coarse"] + 0.02, (elsewhere, errs)


def _write(path: Path, case: Case, count: int, points: int, seed: int) -> None:
    a, u = case.sample(count, points, seed)
    np.savez(path, a=a, u=u)


def test_the_command_line_trains_a_run_that_loads_and_predicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = poisson("periodic")
    _write(tmp_path / "train.npz", case, 200, 16, 0)
    _write(tmp_path / "test.npz", case, 20, 16, 1)
    _write(tmp_path / "fine.npz", case, 20, 32, 1)
    out = tmp_path / "run"
    args = [
        "--train",
        str(tmp_path / "train.npz"),
        "--test",
        str(tmp_path / "test.npz"),
        "--test",
        str(tmp_path / "fine.npz"),
    ]
    args += ["--layout", "periodic", "--boundary", "zero", "--preset", "tiny", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "axis x: periodic (i/P) on [0, 1], boundary zero" in printed
    report = json.loads((out / "report.json").read_text())
    assert set(report["tests"]) == {"test", "fine"} and report["tests"]["fine"]["grid"] == [32, 32]
    assert set(report["linear"]["tests"]) == {"test"}  # the baseline is fitted on, and predicts on, the 16x16 grid
    assert "| least squares" in printed
    assert (out / "worst-test.png").is_file()
    model = training.load(out)
    assert isinstance(model, OperatorModel) and not model.training
    inputs = torch.from_numpy(case.sample(20, 16, 1)[0])
    assert _elsewhere(model, case, inputs, 1) <= 1.2 * report["tests"]["test"]["mean"] + 0.02
    # rerun: the finished run is resumed, not retrained
    assert main(args) == 0
    assert json.loads((out / "report.json").read_text())["resumed_from_step"] == report["steps"]


def test_a_misread_grid_is_refused_before_training_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dirichlet data stored at ``i/P`` read as ``i/(P-1)`` with ``u = 0`` imposed trained silently to a 16% floor; now
    the ends are checked and the layout named."""
    _write(tmp_path / "train.npz", poisson("periodic"), 20, 16, 0)
    args = [
        "--train",
        str(tmp_path / "train.npz"),
        "--boundary",
        "zero",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nodes are likely i/P" in err and "declare layout periodic for axis" in err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_predict_checks_its_arguments() -> None:
    case = antiderivative("nodes")
    tr = samples(*case.sample(8, 12, 0), case.axes)
    model = train(TINY.replace(steps=1, modes=6), tr, {}, None, progress=False).trained.model
    x = tr.inputs
    for bad, match in (
        (lambda: predict(model, [1.0]), "inputs must be a tensor"),  # type: ignore[arg-type]
        (lambda: predict(model, x[:0]), "empty batch"),
        (lambda: predict(model, x[..., None]), "expected \\(batch, x, 1\\)"),
        (lambda: predict(model, x.long()), "expected floats"),
        (lambda: predict(model, x, chunk=0), "chunk must be an int >= 1"),
        (lambda: predict(model, x, at=(torch.tensor([1.5], dtype=torch.float64),)), "outside the axis's extent"),
        (lambda: predict(model, x, at=torch.zeros(3, 2)), "expected \\(M, 1\\)"),
    ):
        with pytest.raises(InputError, match=match):
            bad()
    # scattered points and a tensor grid agree
    t = torch.linspace(0, 1, 7, dtype=torch.float64)
    torch.testing.assert_close(predict(model, x, at=t[:, None]), predict(model, x, at=(t,)))


def test_a_time_is_a_duration() -> None:
    assert parse_time("1.5h") == 5400.0 and parse_time("90s") == 90.0 and parse_time("10m") == 600.0
    for bad in ("0s", "3000", "ten minutes", "-5m", "1e9"):
        with pytest.raises(training.UserError, match="--time"):
            parse_time(bad)


def test_the_old_budget_option_says_what_replaced_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "train.npz", antiderivative("nodes"), 16, 12, 0)
    assert main(["--train", str(tmp_path / "train.npz"), "--budget", "3000", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--steps N" in err and "--time 10m" in err and "--memory GIB" in err


def test_a_time_budget_is_a_deadline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--time``: the checkpoint keeps the clock of that budget, the steps are uncapped unless ``--steps`` caps
    them, and a resume under another budget is refused in one line."""
    _write(tmp_path / "train.npz", antiderivative("nodes"), 16, 12, 0)
    out = tmp_path / "run"
    args = ["--train", str(tmp_path / "train.npz"), "--preset", "tiny", "--config", "modes=6", "--no-progress"]
    assert main([*args, "--time", "10s", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    saved = training.load_checkpoint(out / "checkpoint.pt")
    steps = json.loads((out / "report.json").read_text())["steps"]
    assert saved["clock"]["seconds"] == 10.0 and saved["clock"]["spent"] > 0 and steps == saved["step"] >= 1
    assert saved["config"]["steps"] == MAX_STEPS and "time 10s: training stops before a step" in said
    assert main([*args, "--time", "11s", "--out", str(out)]) == 2
    assert "a time budget of 10s, not 11s" in capsys.readouterr().err
    assert main([*args, "--time", "60s", "--steps", "3", "--out", str(tmp_path / "capped")]) == 0
    assert training.load_checkpoint(tmp_path / "capped" / "checkpoint.pt")["step"] == 3


def _rewrite(out: Path, **fields: object) -> None:
    """Edit the run's checkpoint's config as an earlier release wrote it: a field set, or absent where ``None``."""
    path = out / "checkpoint.pt"
    blob = training.load_checkpoint(path)
    for k, v in fields.items():
        if v is None:
            del blob["config"][k]
        else:
            blob["config"][k] = v
    training.checkpoint.save_checkpoint(path, blob)


def test_a_run_of_an_earlier_release_resumes_under_the_config_that_builds_its_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checkpoints written before the ``convolution`` and ``decoder`` fields, or with ``decoder = -1`` recorded, are
    compared as the models they built: a bounded run resumes under today's defaults (they build the same model
    there), a periodic one is refused in one line naming the fields whose defaults now build another, and resumes
    when they are given. One written before the ``norms`` field had them, which today's default does not."""
    _write(tmp_path / "nodes.npz", antiderivative("nodes"), 16, 12, 0)
    _write(tmp_path / "circle.npz", periodic_inverse(), 16, 12, 0)
    base = ["--preset", "tiny", "--no-progress"]

    def run(data: str, out: Path, config: str = "modes=6", steps: int = 2) -> int:
        extra = ["--layout", "periodic"] if data == "circle" else []
        fields = [a for field in config.split(",") for a in ("--config", field)]
        args = ["--train", str(tmp_path / f"{data}.npz"), *extra, *base, *fields, "--out", str(out)]
        return main([*args, "--steps", str(steps)])

    def resumed(out: Path) -> object:
        return json.loads((out / "report.json").read_text())["resumed_from_step"]

    bounded = tmp_path / "bounded"
    assert run("nodes", bounded) == 0
    _rewrite(bounded, convolution=None, decoder=None)
    assert run("nodes", bounded, steps=3) == 0 and resumed(bounded) == 2

    periodic = tmp_path / "periodic"
    old = "modes=6,convolution=false,decoder=0"
    assert run("circle", periodic, old) == 0
    _rewrite(periodic, convolution=None, decoder=None)
    capsys.readouterr()
    assert run("circle", periodic, steps=3) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "convolution: False -> True" in err and "decoder: 0 -> 64" in err
    assert run("circle", periodic, old, steps=3) == 0 and resumed(periodic) == 2

    last = tmp_path / "last"  # the previous release recorded the decoder's -1, not the width it chose
    assert run("circle", last) == 0
    _rewrite(last, decoder=-1)
    assert run("circle", last, steps=3) == 0 and resumed(last) == 2

    normed = tmp_path / "normed"  # written before the norms field: its layers had them
    assert run("nodes", normed, "modes=6,norms=true") == 0
    _rewrite(normed, norms=None)
    capsys.readouterr()
    assert run("nodes", normed, steps=3) == 2
    assert "norms: True -> False" in capsys.readouterr().err
    assert run("nodes", normed, "modes=6,norms=true", steps=3) == 0 and resumed(normed) == 2


def test_a_run_of_the_earlier_defaults_is_refused_by_name_and_resumes_with_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default model grew from three layers of 40 channels with layer norms to six of 28 without, and the
    gradients are no longer clipped at norm 1: a run written with the earlier defaults is not resumed into another
    model or another optimisation; the one-line refusal names each field's old and new value, and the run resumes when
    they are given."""
    _write(tmp_path / "circle.npz", periodic_inverse(), 16, 12, 0)
    out = tmp_path / "run"
    earlier = [f for v in ("depth=3", "width=40", "hidden=120", "norms=true", "clip=1") for f in ("--config", v)]

    def run(*extra: str, steps: int) -> int:
        args = ["--train", str(tmp_path / "circle.npz"), "--layout", "periodic", "--no-progress"]
        return main([*args, "--config", "modes=6", *extra, "--out", str(out), "--steps", str(steps)])

    assert run(*earlier, steps=2) == 0
    capsys.readouterr()
    assert run(steps=3) == 2
    err = capsys.readouterr().err.strip()
    changed = ("depth: 3 -> 6", "width: 40 -> 28", "hidden: 120 -> 84", "norms: True -> False", "clip: 1.0 -> 0.0")
    assert err.count("\n") == 0 and all(f in err for f in changed), err
    assert run(*earlier, steps=3) == 0
    assert json.loads((out / "report.json").read_text())["resumed_from_step"] == 2


def test_the_fno_peer_trains_on_the_same_batches(tmp_path: Path) -> None:
    pytest.importorskip("neuralop")
    from training.tasks.operator import fno

    case = poisson("nodes")
    tr = samples(*case.sample(24, 17, 0), case.axes)
    te = samples(*case.sample(6, 17, 1), case.axes)
    peer = fno.train_fno(TINY.replace(steps=20, augment="square"), tr, {"t": te}, 20000, torch.device("cpu"))
    assert abs(peer.parameters / 20000 - 1) < 0.25 and peer.errors["t"].shape == (6,)
    assert torch.isfinite(peer.errors["t"]).all()
