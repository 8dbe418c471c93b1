"""What ``python -m examples.operator`` does, as library functions: grids from options, time budgets, reports.

* :func:`axes_from` -- the grid's axes from ``--layout``, ``--boundary`` and ``--extent`` (one value for every
  axis, or one per axis separated by commas);
* :func:`parse_time` -- ``--time``: a duration (``90s``, ``10m``, ``1.5h``), the deadline of a
  :class:`~training.deadline.Clock` that starts with the program (the steps, a cap; a step count is ``--steps``);
* :func:`report` -- the errors per test file (mean, median, max; each at its own resolution), and
  :func:`linear_baseline` -- the least-squares linear map's, on the test files on the training grid;
* :func:`plot_worst` -- the worst test sample of a file: input, truth, prediction and error;
* :func:`load_time_data` -- a time-dependent file's trajectories (``--time-axis``; :mod:`~.time_axis`);
* :func:`execute` -- the whole program, returning a :class:`Report` (written to ``report.json`` as well).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from models.operator import OperatorModel, sizes
from operators.dataset import AXIS_NAMES, INPUT_KEYS, Channels, Samples, from_file, infer_dims, pick_key
from operators.files import ArrayInfo, contents, read
from operators.inspection import coordinate_key, layout_from
from operators.layout import LAYOUTS, Axis, LayoutError, axes_of, per_axis
from operators.streams import PairStream
from training.budget import Budget
from training.deadline import Clock
from training.errors import InputError, UserError
from training.threads import use_threads

from . import fno
from .config import Config
from .linear import LinearMap, least_squares
from .model import SPEC, record, recorded
from .shape import Shape, Time
from .task import build_model, check_fit
from .task import errors as sample_errors
from .task import train as train_model
from .time_axis import (
    HorizonErrors,
    Keys,
    TimeData,
    TimeOptions,
    dims_of,
    horizon_report,
    keys_of,
    pairs_of,
    read_states,
    split_off,
    state_shape,
)


def axes_from(dims: int, layout: str | None, boundary: str | None, extent: str | None) -> tuple[Axis, ...]:
    """The grid's axes from the command line's text (each option: one value for all axes, or one per axis), or a
    :class:`~training.UserError` naming the option and what is wrong (:func:`operators.layout.axes_of`)."""
    try:
        return axes_of(dims, layout, boundary, extent)
    except LayoutError as e:
        raise UserError(str(e)) from None


def parse_time(text: str) -> float:
    """``--time``: seconds, from ``90s``, ``10m``, ``1.5h`` (between 1s and 720h)."""
    t = text.strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h)", t)
    if not m:
        raise UserError(f"--time {text!r}: a duration such as 90s, 10m or 1.5h (a step count is --steps N)")
    seconds = float(m.group(1)) * {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    if not 1 <= seconds <= 30 * 86400:
        raise UserError(f"--time {text}: a time between 1s and 720h")
    return seconds


@dataclass(frozen=True)
class Errors:
    """The relative L² errors on one test set: where it came from, its grid and size, and their mean, median, max."""

    file: str
    grid: tuple[int, ...]
    samples: int
    mean: float
    median: float
    max: float

    @classmethod
    def of(cls, errs: Tensor, s: Samples) -> Errors:
        """The summary of per-sample errors ``errs`` on ``s``."""
        return cls(s.where, s.grid, len(s), float(errs.mean()), float(errs.median()), float(errs.max()))


def report(errors: Mapping[str, Tensor], tests: Mapping[str, Samples]) -> dict[str, Errors]:
    """Per test set: its file, grid, sample count and the relative L² errors' mean, median and max."""
    return {name: Errors.of(e, tests[name]) for name, e in errors.items()}


@dataclass(frozen=True)
class LinearBaseline:
    """The least-squares linear map's errors on the test sets on the training grid (``ridge`` its chosen ridge), or
    why it was not fitted (``skipped``)."""

    ridge: float | None = None
    tests: dict[str, Errors] = field(default_factory=dict)
    skipped: str | None = None
    fit: LinearMap | None = field(default=None, repr=False, compare=False)


def linear_baseline(train: Samples, tests: Mapping[str, Samples]) -> LinearBaseline:
    """The least-squares linear map's errors (:func:`~training.tasks.operator.linear.least_squares`) on the test
    sets on the training grid -- the baseline the model's figures are read beside -- or why it was not fitted."""
    try:
        fit = least_squares(train)
    except InputError as e:
        return LinearBaseline(skipped=str(e))
    errs = {name: fit.errors(s) for name, s in tests.items() if s.grid == train.grid}
    return LinearBaseline(fit.ridge, report(errs, tests), fit=fit)


@dataclass(frozen=True)
class Peer:
    """The FNO trained beside the model: its recipe, size, time, curve, errors and the model's ratio to them."""

    recipe: fno.Recipe
    hidden: int
    parameters: int
    train_seconds: float
    curve: list[tuple[int, float, float]]
    tests: dict[str, Errors]
    ratio: dict[str, float]


@dataclass(frozen=True)
class Report:
    """What :func:`execute` returns (and writes to ``report.json``: :meth:`to_json`).

    Attributes:
        config: the run's record (the config's fields and the data's shape, as the checkpoint holds them).
        torch: torch's version.
        parameters: the model's parameter count.
        train_seconds, steps, resumed_from_step: the training run (``resumed_from_step``: ``None`` unless resumed).
        tests: the errors per test set.
        history: the held-out errors along the run (one record per evaluation).
        linear: the least-squares baseline.
        fno: the peer (``--baseline fno``), or ``None``.
        horizon: per test set, the errors over the time horizon (a time-dependent run's; ``tests`` are then the
            one-step errors of trajectories' windows, or the whole trajectory's of initial conditions).
    """

    config: dict[str, Any]
    torch: str
    parameters: int
    train_seconds: float
    steps: int
    resumed_from_step: int | None
    tests: dict[str, Errors]
    history: list[dict[str, float]]
    linear: LinearBaseline
    fno: Peer | None = None
    horizon: dict[str, HorizonErrors] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain data: the fields, a skipped baseline as ``{"skipped": why}``, no ``fno`` key without the peer, no
        ``horizon`` key without a time axis."""
        out = dataclasses.asdict(dataclasses.replace(self, linear=dataclasses.replace(self.linear, fit=None)))
        out["linear"].pop("fit")
        out["linear"] = (
            {"skipped": self.linear.skipped}
            if self.linear.skipped is not None
            else {"ridge": self.linear.ridge, "tests": out["linear"]["tests"]}
        )
        if self.fno is None:
            out.pop("fno")
        if not self.horizon:
            out.pop("horizon")
        return out


def plot_worst(model: OperatorModel, s: Samples, errs: Tensor, path: Path) -> None:
    """The worst sample of ``s`` (largest error): input, truth, prediction and error, first channels, at the file's
    grid; a 1D grid as curves, a 2D one as images. Written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    i = int(errs.argmax())
    from .prediction import predict

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
    """What the command line says beside the config: the files, how to read them, the time budget and the peer.

    ``time``: the seconds the program may take (``--time``), counted from its start -- reading the data, training to
    the deadline (the config's ``steps`` a cap), the report -- and again for a ``baseline`` peer, on a clock of
    its own; ``None``: the config's ``steps``. ``memory``: the memory budget (``--memory``). ``restart``: start
    afresh in ``out``, whatever checkpoint it holds (``--restart``). ``started``: the seconds the command had
    run before :func:`execute` (its start and imports, :func:`training.deadline.process_age`), which ``time``
    counts. ``zero_tolerance``: how large a zero boundary's stored ends may be (``--zero-tolerance``; default:
    the data's own roughness). ``workers``: loader processes per rank reading a stream; ``stream``: read the
    files as streams (``--stream``: :mod:`~.streamed_run`). ``fit_modes``: lower the config's ``modes`` to the
    most the training grid determines (the command line does when ``modes`` is not given). ``time_axis``: the
    files hold a time axis (``--time-axis``, ``--time-window``, ``--horizon``; :mod:`~.time_axis`).
    """

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
    time: float | None = None
    baseline: str | None = None
    device: str = "cpu"
    threads: int | None = None
    progress: bool = True
    memory: Budget = field(default_factory=Budget)
    restart: bool = False
    program: str = "python -m examples.operator"
    started: float = 0.0
    zero_tolerance: float | None = None
    fit_modes: bool = False
    time_axis: TimeOptions | None = None
    workers: int = 2
    stream: bool = False

    @property
    def main(self) -> bool:
        """Whether this process speaks for the run: the only one, or rank 0 under ``torchrun``."""
        return int(os.environ.get("RANK", "0")) == 0


def load_data(config: Config, o: Options, say: Callable[[str], None] = print) -> tuple[Samples, dict[str, Samples]]:
    """The checked training samples and test sets (by name); without a test file, the training file's last tenth
    is held out. Every file's keys and shapes are read (and its grid axes counted) before any values. A problem with
    the files is a :class:`~training.DataError` (one line); what reading changed is said in one line each."""
    found = {p: contents(p) for p in (o.train, *o.tests)}
    key = pick_key(list(found[o.train]), o.input_key, INPUT_KEYS, o.train, "input")
    shape = found[o.train][key].shape
    dims = o.dims if o.dims is not None else infer_dims(shape)
    for p in o.tests if o.dims is None else ():
        k = pick_key(list(found[p]), o.input_key, INPUT_KEYS, p, "input")
        if infer_dims(found[p][k].shape) != dims:
            raise UserError(
                f"{p}, key {k!r}: wrong number of grid axes: shape {found[p][k].shape} is a grid of "
                f"{infer_dims(found[p][k].shape)} axes, but {o.train}'s {shape} is a grid of {dims}; give test files "
                "on the training grid's axes (or declare --dims)"
            )
    axes = stored_axes(o, found[o.train], dims, shape, say)

    def one(path: Path) -> Samples:
        s = from_file(
            path,
            axes,
            input_key=o.input_key,
            output_key=o.output_key,
            dims=dims,
            channels=o.channel_axis,
            log_input=config.log_input,
            max_bytes=o.memory.max_bytes,
            zero_tolerance=o.zero_tolerance,
        )
        for note in s.notes:
            say(f"note: {note}")
        return s

    train = one(o.train)
    tests = {name: one(p) for name, p in zip(test_names(o.tests), o.tests, strict=True)}
    if not tests:
        if len(train) < 2:
            raise UserError(f"{o.train}: one sample, and no --test file to hold out; give a --test file")
        cut = len(train) - max(1, len(train) // 10)
        tests = {"held-out": Samples(train.inputs[cut:], train.outputs[cut:], axes, f"{o.train} (last tenth)")}
        train = Samples(train.inputs[:cut], train.outputs[:cut], axes, str(o.train))
    same_channels(train, tests.values())
    return train, tests


def same_channels(train: Samples | PairStream, tests: Iterable[Samples | PairStream]) -> None:
    """A :class:`~training.UserError` naming the first test set whose channels differ from the training set's."""
    for s in tests:
        if s.channels != train.channels:
            raise UserError(
                f"{s.where}: {s.channels[0]} input and {s.channels[1]} output channels, but {train.where} has "
                f"{train.channels[0]} and {train.channels[1]}; the test sets need the training set's channels"
            )


def load_time_data(config: Config, o: Options, say: Callable[[str], None] = print) -> TimeData:
    """A time-dependent run's data (``o.time_axis``): the form and keys of each file (:func:`~.time_axis.keys_of`,
    every file of one form), the grid's axes counted and declared from the states' shape before any value is read,
    then the pairs the model trains on and the test files' trajectories; without a test file the training file's
    last tenth of trajectories is held out."""
    assert o.time_axis is not None
    t = o.time_axis
    paths = (o.train, *o.tests)
    found = {p: contents(p) for p in paths}
    keys = {p: keys_of(found[p], p, t, o.input_key, o.output_key) for p in paths}
    form = keys[o.train].form
    for p in o.tests:
        if keys[p].form != form:
            raise UserError(f"{p}: holds {_form_words(keys[p])}, but {o.train} holds {_form_words(keys[o.train])}")
    dims = dims_of(found, keys, t, o.dims)
    k = keys[o.train]
    shape = state_shape(found[o.train][k.states], t.axis, o.train, k.states)
    axes = stored_axes(o, found[o.train], dims, shape, say)
    window = (t.window or 1) if form == "trajectory" else 0
    read_ = {p: read_states(p, keys[p], t, dims, o.channel_axis, o.memory.max_bytes, window) for p in paths}
    for p, (s, _, notes) in read_.items():
        for note in notes:
            say(f"note: {note}")
        if form == "trajectory" and s.shape[1] <= window:
            raise UserError(
                f"{p}, key {keys[p].states!r}: {s.shape[1]} states per trajectory, not more than the window of "
                f"{window}; give a shorter --time-window"
            )
    states, initial, _ = read_[o.train]
    tests = {name: read_[p] for name, p in zip(test_names(o.tests), o.tests, strict=True)}
    wheres = {name: str(p) for name, p in zip(test_names(o.tests), o.tests, strict=True)}
    if not tests:
        cut = split_off(len(states), o.train)
        tests = {"held-out": (states[cut:], None if initial is None else initial[cut:], [])}
        wheres = {"held-out": f"{o.train} (last tenth)"}
        states, initial = states[:cut], None if initial is None else initial[:cut]
    fields = int(states.shape[-1])
    if form == "trajectory":
        shortest = min(int(s.shape[1]) for s, _, _ in tests.values())
        horizon = t.horizon if t.horizon is not None else shortest - window
        if not 1 <= horizon <= shortest - window:
            raise UserError(
                f"--horizon {horizon}: a test file's trajectories hold {shortest} states, so a rollout from a window "
                f"of {window} predicts at most {shortest - window}; give --horizon 1..{shortest - window}"
            )
    else:
        horizon = int(states.shape[1])
    time = Time(form, t.axis, window, horizon, fields)

    def pairs(s: Tensor, x: Any, where: str) -> Samples:
        return pairs_of(s, x, k, window, axes, where, o.channel_axis, config.log_input, o.zero_tolerance)

    train = pairs(states, initial, str(o.train))
    scored = {name: pairs(s, x, wheres[name]) for name, (s, x, _) in tests.items()}
    same_channels(train, scored.values())
    rolled = {name: s for name, (s, _, _) in tests.items()} if form == "trajectory" else {}
    what = (
        f"windows of {window} state(s) to the next, rolled out {horizon} steps"
        if form == "trajectory"
        else (f"an initial condition to its {horizon} states")
    )
    say(f"time: axis {t.axis} of key {k.states!r}, {what}")
    return TimeData(time, train, scored, rolled)


def _form_words(k: Keys) -> str:
    return (
        f"trajectories (key {k.states!r})"
        if k.initial is None
        else (f"an initial condition (key {k.initial!r}) and its trajectory (key {k.states!r})")
    )


def stored_axes(
    o: Options, found: Mapping[str, ArrayInfo], dims: int, shape: Sequence[int], say: Callable[[str], None]
) -> tuple[Axis, ...]:
    """The grid's axes from the options, where the training file stores an axis's coordinates (1-D arrays such as
    ``x-coordinate``, :data:`~operators.inspection.COORDINATE_KEYS`) its layout and extent read from them
    (:func:`~operators.inspection.layout_from`), checked against any declared; each said in one line."""
    declared = axes_from(dims, o.layout, o.boundary, o.extent)
    layouts = per_axis(o.layout, dims, "--layout")
    axes = []
    for i, axis in enumerate(declared):
        key = coordinate_key(list(found), AXIS_NAMES[i])
        points = shape[1 + i] if len(shape) > 1 + i else 0
        if key is None or math.prod(found[key].shape) != points:
            axes.append(axis)
            continue
        where = f"{o.train}, key {key!r}"
        name, lo, hi = layout_from(read(o.train, [key])[key], layouts[i], where)
        if o.extent is not None and not (
            math.isclose(lo, axis.lo, abs_tol=1e-6 * (hi - lo)) and math.isclose(hi, axis.hi, abs_tol=1e-6 * (hi - lo))
        ):
            raise UserError(
                f"{where}: the coordinates give extent {lo:g}:{hi:g}, but --extent says {axis.lo:g}:{axis.hi:g}"
            )
        boundary = axis.boundary if o.boundary is not None else None
        axes.append(Axis(LAYOUTS[name], lo, hi, boundary))
        say(f"axis {AXIS_NAMES[i]}: layout {name} on [{lo:g}, {hi:g}], from the coordinates in key {key!r}")
    return tuple(axes)


def fitted_modes(config: Config, axes: Sequence[Axis], grid: Sequence[int]) -> Config:
    """``config`` with ``modes`` lowered, if need be, to the most a grid of ``grid`` samples on ``axes``
    determines: on each axis no more coefficients than samples (:func:`~.task.check_fit`)."""
    modes = config.modes
    while modes > 2 and any(p < m for p, m in zip(grid, sizes(axes, modes), strict=True)):
        modes -= 1
    return config if modes == config.modes else config.replace(modes=modes)


def execute(config: Config, o: Options, say: Callable[[str], None] = print) -> Report:
    """The whole program: read and check the data, fit the least-squares baseline, train (or resume) to the
    steps or the deadline, report and plot, then train the peer if asked, on the same budget, and report again.
    Writes ``o.out/report.json`` (first without the peer: an interrupted peer leaves the model's report),
    ``o.out/checkpoint.pt`` and ``o.out/worst-NAME.png``; returns the :class:`Report`."""
    from training import RunDir, fingerprint

    if o.baseline is not None:
        fno.check_available()
    device = torch.device(o.device)
    clock = None if o.time is None else Clock(o.time)
    with RunDir(o.out, o.program):
        if clock is not None:
            clock.start(o.started)  # the command ends in its time: its start and reading the data count
        t0 = time.perf_counter()
        timed = load_time_data(config, o, say) if o.time_axis is not None else None
        train_set, tests = (timed.train, timed.tests) if timed is not None else load_data(config, o, say)
        shape = dataclasses.replace(Shape.of(train_set), time=None if timed is None else timed.time)
        config = modes_for(config, o, train_set, say)
        check_fit(config, train_set)
        SPEC.admit(record(config, shape), budget=o.memory, training=True)  # fits in memory: before it is built
        describe_data(train_set, tests, "", say)
        say(f"  read and checked in {time.perf_counter() - t0:.1f}s")
        seen = fingerprint(str(o.train), inputs=train_set.inputs, outputs=train_set.outputs)
        resumed = resume_point(o, config, shape, seen)
        linear = linear_baseline(train_set, tests)
        say(f"config: {config}")
        if clock is not None:
            clock.ends["evaluation"], clock.tail = rehearse(config, train_set, tests, device, o.threads, timed)
            if resumed is None:
                check_room(clock)
            say(
                f"time {o.time:g}s: training stops before a step that would not end in it, {clock.reserve:.1f}s kept "
                f"for the final evaluation and {clock.tail:.1f}s for the report (at most {config.steps} steps)"
            )
        run = train_model(
            config,
            train_set,
            tests,
            o.out,
            device,
            progress=o.progress,
            threads=o.threads,
            budget=o.memory,
            data=seen,
            restart=o.restart,
            deadline=clock,
            shape=shape,
        )
        model, errs = run.trained.model, run.task.errors()
        params = sum(p.numel() for p in model.parameters())
        for name, e in errs.items():
            plot_worst(model, tests[name], e, o.out / f"worst-{name}.png")
        horizon = {} if timed is None else horizons(model, timed, linear.fit, o.out)
        result = Report(
            record(config, shape),
            torch.__version__,
            params,
            run.trained.elapsed,
            run.trained.step,
            run.trained.resumed_from,
            report(errs, tests),
            run.trained.history,
            linear,
            horizon=horizon,
        )
        write_report(result, o.out)
        if o.baseline == "fno":
            recipe = fno.DARCY if len(train_set.axes) == 2 else fno.BURGERS  # its authors' 2D and 1D recipes
            say(f"FNO peer: training{'' if clock is None else f' for {o.time:g}s, on a clock of its own'}")
            trained = fno.train_fno(
                config,
                train_set,
                tests,
                params,
                device,
                recipe,
                clock=None if clock is None else clock.fresh(),
                threads=o.threads,
                progress=o.progress,
            )
            ratio = {name: float(errs[name].mean() / trained.errors[name].mean()) for name in errs}
            peer = Peer(
                recipe,
                trained.hidden,
                trained.parameters,
                trained.seconds,
                trained.curve,
                report(trained.errors, tests),
                ratio,
            )
            result = dataclasses.replace(result, fno=peer)
            write_report(result, o.out)
    return result


def modes_for(config: Config, o: Options, s: Samples | PairStream, say: Callable[[str], None]) -> Config:
    """``config`` with the modes the training grid determines when the command line did not set them
    (``o.fit_modes``; :func:`fitted_modes`), said in one line when they change."""
    if not o.fit_modes:
        return config
    fitted = fitted_modes(config, s.axes, s.grid)
    if fitted.modes != config.modes:
        grid = "x".join(map(str, s.grid))
        say(f"modes {fitted.modes}: the most a {grid} grid determines (not {config.modes}; --modes N sets it)")
    return fitted


def describe_data(
    train: Samples | PairStream, tests: Mapping[str, Samples | PairStream], how: str, say: Callable[[str], None]
) -> None:
    """The lines saying what a run trains and is scored on: the training samples, each axis, each test set."""
    say(f"data: {len(train)} training samples on {'x'.join(map(str, train.grid))}{how} ({train.where})")
    for i, a in enumerate(train.axes):
        say(f"  axis {AXIS_NAMES[i]}: {a.describe()}")
    for name, s in tests.items():
        say(f"  test {name}: {len(s)} samples on {'x'.join(map(str, s.grid))} ({s.where})")


def resume_point(o: Options, config: Config, shape: Shape, seen: Mapping[str, Any]) -> dict[str, Any] | None:
    """The checkpoint in ``o.out`` to resume, if there is one, checked against this run: its model (recorded as
    built, :func:`~.model.record`; an earlier release's read by :func:`~.model.recorded`), the memory budget, the
    data's fingerprint ``seen`` and the deadline (:func:`~training.check_resume`); ``None`` for a fresh run."""
    from training import check_resume

    return check_resume(
        o.out,
        record(config, shape),
        SPEC.meta(),
        o.memory,
        data=seen,
        restart=o.restart,
        deadline=o.time,
        reads=recorded,
    )


def check_room(clock: Clock) -> None:
    """A :class:`~training.UserError` when a fresh run's ``clock`` has no time left to train: its start, reading
    the data and the report's rehearsal (:func:`rehearse`) took the budget."""
    clock.sync()
    if clock.spent + clock.reserve + clock.tail >= clock.seconds:
        raise UserError(
            f"--time {clock.seconds:g}s: {clock.spent:.1f}s went before training could start (starting Python, "
            f"reading the data) and {clock.reserve + clock.tail:.1f}s are needed for the evaluation and the report "
            f"after it, under a load of {os.getloadavg()[0]:.1f}; give a longer --time"
        )


def horizons(model: OperatorModel, timed: TimeData, linear: LinearMap | None, out: Path) -> dict[str, HorizonErrors]:
    """Per test set, the errors over the time horizon (:func:`~.time_axis.horizon_report`), the worst trajectory
    plotted to ``out/rollout-NAME.png``."""
    return {
        name: horizon_report(
            model, timed.time, timed.trajectories.get(name, s), s.where, s.axes, linear, out / f"rollout-{name}.png"
        )
        for name, s in timed.tests.items()
    }


def rehearse(
    config: Config,
    train: Samples,
    tests: Mapping[str, Samples],
    device: torch.device,
    threads: int | None,
    timed: TimeData | None = None,
) -> tuple[float, float]:
    """The seconds of an evaluation (the errors on each test set) and of the report after training (those errors,
    the plot of each set's worst sample and, with a time axis, the rollouts), timed once on the untrained model
    (the plotting library imported before the timing, as it will be by then): the room a deadline keeps for the
    final evaluation and for the report."""
    before = torch.get_num_threads()
    try:
        with (
            torch.random.fork_rng(devices=[device] if device.type == "cuda" else []),
            tempfile.TemporaryDirectory() as d,
        ):
            model = build_model(config, train).to(device)
            use_threads(threads, sum(p.numel() for p in model.parameters()))
            import matplotlib  # imported once, before the timing: the report will not import it again

            matplotlib.use("Agg")
            import matplotlib.pyplot

            t0 = time.perf_counter()
            errs = {name: sample_errors(model, s) for name, s in tests.items()}
            evaluation = time.perf_counter() - t0
            for name, s in tests.items():
                plot_worst(model, s, errs[name], Path(d) / f"{name}.png")
            if timed is not None:
                horizons(model, timed, None, Path(d))
            return evaluation, time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)


def write_report(result: Report, out: Path) -> None:
    """``out/report.json``: :meth:`Report.to_json`, replaced whole (a reader never sees half a file)."""
    path = out / "report.json"
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(result.to_json(), indent=1))
    part.replace(path)
