"""What ``python -m examples.operator`` does, as library functions: grids from options, budgets, reports, plots.

* :func:`axes_from` -- the grid's axes from ``--layout``, ``--boundary`` and ``--extent`` (one value for every
  axis, or one per axis separated by commas);
* :func:`parse_budget` / :func:`steps_for` -- ``--budget``: a step count (``3000``) or a time (``90s``, ``10m``,
  ``1.5h``), turned into steps by timing a few steps of the real model on the real data first;
* :func:`report` -- the errors per test file (mean, median, max; each at its own resolution), and
  :func:`linear_baseline` -- the least-squares linear map's, on the test files on the training grid;
* :func:`plot_worst` -- the worst test sample of a file: input, truth, prediction and error.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from operators.dataset import AXIS_NAMES, INPUT_KEYS, Channels, Samples, from_file, infer_dims, pick_key
from operators.files import DataError, contents
from operators.layout import BOUNDARIES, LAYOUTS, Axis, LayoutError
from training.budget import Budget
from training.denormals import flush_denormals
from training.errors import InputError, UserError
from training.threads import use_threads

from . import fno
from .config import Config
from .linear import least_squares
from .model import OperatorModel
from .train import OperatorTask, check_fit

#: the fewest steps a time budget may buy (fewer cannot warm up and anneal a one-cycle schedule)
LEAST_STEPS = 10


def _per_axis(text: str | None, dims: int, option: str) -> list[str | None]:
    if text is None:
        return [None] * dims
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        return [parts[0]] * dims
    if len(parts) != dims:
        raise UserError(f"{option} {text!r}: give one value for every axis or one per axis ({dims} here)")
    return [*parts]


def axes_from(dims: int, layout: str | None, boundary: str | None, extent: str | None) -> tuple[Axis, ...]:
    """The grid's axes from the command line's text (each option: one value for all axes, or one per axis)."""
    layouts = _per_axis(layout, dims, "--layout")
    boundaries = _per_axis(boundary, dims, "--boundary")
    extents = _per_axis(extent, dims, "--extent")
    axes = []
    for i in range(dims):
        lay = layouts[i] or "nodes"
        if lay not in LAYOUTS:
            raise UserError(f"--layout {lay!r}: must be one of {', '.join(LAYOUTS)}")
        bc = boundaries[i]
        if bc is not None and bc not in BOUNDARIES:
            raise UserError(f"--boundary {bc!r}: must be one of {', '.join(BOUNDARIES)}")
        lo, hi = 0.0, 1.0
        if extents[i] is not None:
            m = re.fullmatch(r"\s*([^:]+):([^:]+)\s*", extents[i] or "")
            try:
                lo, hi = (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)
            except ValueError:
                lo = hi = math.nan
            if not m or math.isnan(lo) or math.isnan(hi):
                raise UserError(f"--extent {extents[i]!r}: expected LO:HI, e.g. 0:1 or 0:6.2832")
        try:
            axes.append(Axis(lay, lo, hi, bc))  # checked against the choices above
        except LayoutError as e:
            raise UserError(f"axis {AXIS_NAMES[i]}: {e}") from None
    return tuple(axes)


def parse_budget(text: str) -> tuple[str, float]:
    """``--budget``: ``("steps", n)`` for an integer, ``("seconds", s)`` for ``90s``, ``10m``, ``1.5h``."""
    t = text.strip().lower()
    if re.fullmatch(r"\d+", t):
        n = int(t)
        if not 1 <= n <= 10**8:
            raise UserError(f"--budget {text}: a step count in 1..100000000")
        return "steps", float(n)
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h)", t)
    if not m:
        raise UserError(f"--budget {text!r}: a step count (3000) or a time (90s, 10m, 1.5h)")
    seconds = float(m.group(1)) * {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    if not 1 <= seconds <= 30 * 86400:
        raise UserError(f"--budget {text}: a time between 1s and 720h")
    return "seconds", seconds


def seconds_per_step(config: Config, train: Samples, device: torch.device, threads: int | None) -> float:
    """The measured training step of ``config`` on ``train``: two warm-up steps, then the mean of eight
    (a throwaway model: the run itself starts afresh from its seed)."""
    before = torch.get_num_threads()
    restore = flush_denormals()
    try:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            task = OperatorTask(config.replace(steps=10**6), train, {}, device)
            use_threads(threads, sum(p.numel() for p in task.model.parameters()))
            for _ in range(2):
                task.train_step()

            def sync() -> None:
                if device.type == "cuda":
                    torch.cuda.synchronize(device)

            sync()
            t0 = time.perf_counter()
            for _ in range(8):
                task.train_step()
            sync()
            return (time.perf_counter() - t0) / 8
    finally:
        restore()
        torch.set_num_threads(before)


def steps_for(seconds: float, per_step: float) -> int:
    """The steps that fit ``seconds`` at ``per_step`` each (at least :data:`LEAST_STEPS`)."""
    return max(LEAST_STEPS, int(seconds / per_step))


def summary(errs: Tensor) -> dict[str, float]:
    return {"mean": float(errs.mean()), "median": float(errs.median()), "max": float(errs.max())}


def report(errors: Mapping[str, Tensor], tests: Mapping[str, Samples]) -> dict[str, Any]:
    """Per test set: its file, grid, sample count and the relative L² errors' mean, median and max."""
    return {
        name: {"file": tests[name].where, "grid": list(tests[name].grid), "samples": len(tests[name]), **summary(e)}
        for name, e in errors.items()
    }


def linear_baseline(train: Samples, tests: Mapping[str, Samples]) -> dict[str, Any]:
    """The least-squares linear map's errors (:func:`~training.tasks.operator.linear.least_squares`) on the test
    sets on the training grid -- the baseline the model's figures are read beside -- or why it was not fitted."""
    try:
        fit = least_squares(train)
    except InputError as e:
        return {"skipped": str(e)}
    errs = {name: fit.errors(s) for name, s in tests.items() if s.grid == train.grid}
    return {"ridge": fit.ridge, "tests": report(errs, tests)}


def plot_worst(model: OperatorModel, s: Samples, errs: Tensor, path: Path) -> None:
    """The worst sample of ``s`` (largest error): input, truth, prediction and error, first channels, at the file's
    grid; a 1D grid as curves, a 2D one as images. Written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    i = int(errs.argmax())
    from .predict import predict

    pred = predict(model, s.inputs[i : i + 1])[0, ..., 0]
    truth, inp = s.outputs[i, ..., 0], s.inputs[i, ..., 0]
    title = f"{Path(s.where).name}: worst sample {i}, relative L2 {float(errs[i]):.2e}"
    if len(s.axes) == 1:
        x = s.axes[0].coordinates(s.grid[0])
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        top.plot(x, inp, color="0.5")
        top.set_ylabel("input")
        bottom.plot(x, truth, label="truth")
        bottom.plot(x, pred, "--", label="prediction")
        bottom.plot(x, pred - truth, ":", label="error")
        bottom.legend()
        bottom.set_xlabel("x")
    else:
        fig, panels = plt.subplots(1, 4, figsize=(14, 3.4))
        extent = (s.axes[1].lo, s.axes[1].hi, s.axes[0].hi, s.axes[0].lo)
        for ax, img, name in zip(
            panels, (inp, truth, pred, pred - truth), ("input", "truth", "prediction", "error"), strict=True
        ):
            shown = ax.imshow(img.numpy(), extent=extent, cmap="RdBu_r" if name == "error" else "viridis")
            ax.set_title(name)
            fig.colorbar(shown, ax=ax, fraction=0.046)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def test_names(paths: Sequence[Path]) -> list[str]:
    """A short unique name per test file (its stem, numbered when two share one)."""
    names: list[str] = []
    for p in paths:
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", p.stem) or "test"
        name, k = stem, 2
        while name in names:
            name, k = f"{stem}-{k}", k + 1
        names.append(name)
    return names


@dataclass(frozen=True)
class Options:
    """What the command line says beside the config: the files, how to read them, the budget and the peer."""

    train: Path
    tests: tuple[Path, ...] = ()
    out: Path = Path("runs/operator")
    input_key: str | None = None
    output_key: str | None = None
    dims: int | None = None
    channel_axis: Channels = "last"
    layout: str | None = None
    boundary: str | None = None
    extent: str | None = None
    budget: str | None = None
    baseline: str | None = None
    device: str = "cpu"
    threads: int | None = None
    progress: bool = True
    memory: Budget = field(default_factory=Budget)
    program: str = "python -m examples.operator"


def load_data(config: Config, o: Options) -> tuple[Samples, dict[str, Samples]]:
    """The checked training samples and test sets (by name); without a test file, the training file's last tenth
    is held out. A problem with the files is a :class:`~training.UserError` (one line)."""
    try:
        return _load_data(config, o)
    except (DataError, LayoutError) as e:
        raise UserError(str(e)) from None


def _load_data(config: Config, o: Options) -> tuple[Samples, dict[str, Samples]]:
    found = contents(o.train)
    key = pick_key(list(found), o.input_key, INPUT_KEYS, o.train, "input")
    dims = o.dims if o.dims is not None else infer_dims(found[key].shape)
    axes = axes_from(dims, o.layout, o.boundary, o.extent)

    def one(path: Path) -> Samples:
        return from_file(
            path,
            axes,
            input_key=o.input_key,
            output_key=o.output_key,
            dims=dims,
            channels=o.channel_axis,
            log_input=config.log_input,
            max_bytes=o.memory.max_bytes,
        )

    train = one(o.train)
    tests = {name: one(p) for name, p in zip(test_names(o.tests), o.tests, strict=True)}
    if not tests:
        if len(train) < 2:
            raise UserError(f"{o.train}: one sample, and no --test file to hold out; give a --test file")
        cut = len(train) - max(1, len(train) // 10)
        tests = {"held-out": Samples(train.inputs[cut:], train.outputs[cut:], axes, f"{o.train} (last tenth)")}
        train = Samples(train.inputs[:cut], train.outputs[:cut], axes, str(o.train))
    for s in tests.values():
        if s.channels != train.channels:
            raise UserError(
                f"{s.where}: {s.channels[0]} input and {s.channels[1]} output channels, but {o.train} has "
                f"{train.channels[0]} and {train.channels[1]}; the test sets need the training set's channels"
            )
    return train, tests


def execute(config: Config, o: Options, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole program: read and check the data, fix the budget, train (or resume), report, plot, and train
    the peer if asked. Writes ``o.out/report.json``, ``o.out/checkpoint.pt`` and ``o.out/worst-NAME.png``;
    returns the report."""
    from training import RunDir, check_resume

    from .model import SPEC
    from .train import record, shape_of
    from .train import train as train_model

    if o.baseline is not None:
        fno.check_available()
    device = torch.device(o.device)
    with RunDir(o.out, o.program):
        t0 = time.perf_counter()
        train_set, tests = load_data(config, o)
        shape = shape_of(train_set)
        check_fit(config, train_set)
        SPEC.admit(record(config, shape), budget=o.memory, training=True)  # fits in memory: before it is built
        say(f"data: {len(train_set)} training samples on {'x'.join(map(str, train_set.grid))} ({train_set.where})")
        for i, a in enumerate(train_set.axes):
            say(f"  axis {AXIS_NAMES[i]}: {a.describe()}")
        for name, s in tests.items():
            say(f"  test {name}: {len(s)} samples on {'x'.join(map(str, s.grid))} ({s.where})")
        say(f"  read and checked in {time.perf_counter() - t0:.1f}s")
        resumed = check_resume(o.out, record(config, shape), SPEC.meta(), o.memory)
        if resumed is not None:
            config = config.replace(steps=max(config.steps, int(resumed["config"]["steps"])))
        elif o.budget is not None:
            kind, amount = parse_budget(o.budget)
            if kind == "steps":
                config = config.replace(steps=int(amount))
            else:
                per = seconds_per_step(config, train_set, device, o.threads)
                config = config.replace(steps=steps_for(amount, per))
                say(f"budget {o.budget}: {per * 1e3:.0f} ms a step here, so {config.steps} steps")
        say(f"config: {config}")
        run = train_model(
            config, train_set, tests, o.out, device, progress=o.progress, threads=o.threads, budget=o.memory
        )
        model, errs = run.trained.model, run.task.errors()
        params = sum(p.numel() for p in model.parameters())
        result: dict[str, Any] = {
            "config": record(config, shape),
            "torch": torch.__version__,
            "parameters": params,
            "train_seconds": run.trained.elapsed,
            "steps": run.trained.step,
            "resumed_from_step": run.trained.resumed_from,
            "tests": report(errs, tests),
            "history": run.trained.history,
            "linear": linear_baseline(train_set, tests),
        }
        for name, e in errs.items():
            plot_worst(model, tests[name], e, o.out / f"worst-{name}.png")
        if o.baseline == "fno":
            recipe = fno.DARCY if len(train_set.axes) == 2 else fno.BURGERS  # its authors' 2D and 1D recipes
            peer = fno.train_fno(config, train_set, tests, params, device, recipe)
            result["fno"] = {
                "recipe": recipe.__dict__,
                "hidden": peer.hidden,
                "parameters": peer.parameters,
                "train_seconds": peer.seconds,
                "curve": peer.curve,
                "tests": report(peer.errors, tests),
                "ratio": {name: float(errs[name].mean() / peer.errors[name].mean()) for name in errs},
            }
        (o.out / "report.json").write_text(json.dumps(result, indent=1))
    return result
