r"""Time as an axis: files whose arrays hold a time axis, read, trained on and scored over a horizon.

A time-dependent file holds one of two things (``--time-axis K`` says where time is stored: axis ``K`` of the
arrays, the samples' axis being 0):

* **trajectories**: one array ``(N, T, *grid[, C])`` (key ``tensor``, ``u``, ``trajectories``, ... or
  ``--input-key``). The model maps a window of ``W`` consecutive states (``--time-window``; stacked as ``W · C`` input
  channels, the oldest first) to the next: it trains on every such pair of the training trajectories (teacher
  forcing, :func:`~.rollout.windows`) and is scored by rolling out ``H`` steps (``--horizon``; default the rest of
  each test trajectory) from each test trajectory's first ``W`` states (:func:`~.rollout.rollout`).
* **an initial condition and its trajectory**: inputs ``(N, *grid[, C_in])`` and outputs ``(N, T, *grid[, C])``
  (keys ``a``/``u``, ``x``/``y``, ...; the inputs without the time axis). The model maps the one to the ``T``
  states at once, as ``T · C`` output channels (state-major), the way the FNO's authors map Burgers' initial
  condition to its solution in time.

Either way the report gives, per test file, the relative L² error of each predicted state (mean over the
trajectories) and over the whole horizon (space and time together, per trajectory: mean, median, max), beside the
least-squares linear map's (rolled out the same way), and plots the worst trajectory (:func:`plot_rollout`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from applicative.tensors import unflatten
from models.operator import OperatorModel
from operators.dataset import (
    AXIS_NAMES,
    INPUT_KEYS,
    OUTPUT_KEYS,
    TRAJECTORY_KEYS,
    WORKING_BYTES,
    Samples,
    fields_of,
    infer_dims,
    pick_key,
    samples,
)
from operators.files import ArrayInfo, contents, read
from operators.layout import Axis
from training.errors import DataError, UserError

from .linear import LinearMap
from .rollout import horizon_errors, model_step, rollout, windows
from .shape import Form, Time

#: trajectories rolled out at a time
CHUNK = 64

Predictor = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class TimeOptions:
    """The command line's time options: ``axis`` (``--time-axis``), ``window`` and ``horizon`` (``None``: the
    defaults, a window of one state and the rest of each test trajectory)."""

    axis: int
    window: int | None = None
    horizon: int | None = None


@dataclass(frozen=True)
class Keys:
    """Where a time-dependent file keeps its arrays: ``states`` (the trajectories, or the initial condition's
    trajectory) and, for an initial condition, ``initial``."""

    form: Form
    states: str
    initial: str | None = None


def keys_of(
    found: Mapping[str, ArrayInfo], path: Path, t: TimeOptions, input_key: str | None, output_key: str | None
) -> Keys:
    """The form of a time-dependent file and its keys: an initial condition and its trajectory when the file holds
    an input and an output (and no ``--time-window`` asks for trajectories), else one array of trajectories."""
    names = list(found)
    has_input = input_key in names if input_key is not None else any(k in names for k in INPUT_KEYS)
    has_output = output_key in names if output_key is not None else any(k in names for k in OUTPUT_KEYS)
    if t.window is None and has_input and has_output:
        kx = pick_key(names, input_key, INPUT_KEYS, path, "input")
        ky = pick_key(names, output_key, OUTPUT_KEYS, path, "output")
        if kx != ky:
            x, y = found[kx].shape, found[ky].shape
            if len(y) != len(x) + 1:
                raise UserError(
                    f"{path}: with --time-axis, key {ky!r} {y} must hold one axis more than key {kx!r} {x} (an initial "
                    "condition and its trajectory); for a file of trajectories name it with --input-key and give "
                    "--time-window"
                )
            if t.horizon is not None:
                raise UserError(
                    f"{path}: --horizon steps a trajectory's rollout; an initial condition is mapped to its whole "
                    f"trajectory of key {ky!r} at once: drop --horizon"
                )
            return Keys("initial", ky, kx)
    key = input_key if input_key is not None else next((k for k in TRAJECTORY_KEYS if k in names), None)
    if key is None or key not in names:
        raise DataError(
            f"{path}: no trajectories under the usual keys ({', '.join(TRAJECTORY_KEYS)}); the file holds "
            f"{', '.join(sorted(names)) or 'nothing'}: name them with --input-key"
        )
    return Keys("trajectory", key)


def _time_first(shape: Sequence[int], axis: int, path: Path, key: str) -> tuple[int, ...]:
    """``shape`` with its time axis ``axis`` moved next to the samples' (a :class:`UserError` if it has none)."""
    if not 1 <= axis < len(shape):
        raise UserError(
            f"{path}, key {key!r}: --time-axis {axis}, but shape {tuple(shape)} has axes 1..{len(shape) - 1} after "
            "the samples' (axis 0); give the axis that counts the states"
        )
    rest = [n for i, n in enumerate(shape) if i != axis]
    return (rest[0], shape[axis], *rest[1:])


def state_shape(info: ArrayInfo, axis: int, path: Path, key: str) -> tuple[int, ...]:
    """The shape of one state of every trajectory, ``(N, *grid[, C])``: the array's without its time axis."""
    s = _time_first(info.shape, axis, path, key)
    return (s[0], *s[2:])


def states_of(
    values: np.ndarray, axis: int, dims: int, channels: str, path: Path, key: str, notes: list[str]
) -> Tensor:
    """An array of trajectories with time at ``axis`` as ``(N, T, *grid, C)`` float64 (channels as the other
    arrays are read: last, or first after the time axis)."""
    a = np.moveaxis(np.asarray(values), axis, 1)
    n, steps = a.shape[:2]
    flat = fields_of(
        a.reshape(n * steps, *a.shape[2:]), dims, "first" if channels == "first" else "last", str(path), key, notes
    )
    return torch.from_numpy(flat.astype(np.float64).reshape(n, steps, *flat.shape[1:]))


@dataclass(frozen=True)
class TimeData:
    """What a time-dependent run reads: how time enters (``time``), the pairs it trains on (``train``), what the
    training history scores (``tests``: one-step pairs of each test file's trajectories, or its samples), and what
    the report rolls out (``trajectories``: each test file's ``(N, T, *grid, C)``, for the trajectory form)."""

    time: Time
    train: Samples
    tests: dict[str, Samples]
    trajectories: dict[str, Tensor] = field(default_factory=dict)


def read_states(
    path: Path, keys: Keys, t: TimeOptions, dims: int, channels: str, max_bytes: int | None, window: int
) -> tuple[Tensor, np.ndarray | None, list[str]]:
    """The trajectories ``(N, T, *grid, C)`` of the file (and, for an initial condition, its inputs as stored),
    refused before any value is read if they would not fit ``max_bytes`` with the pairs cut from them."""
    found = contents(path)
    ks = [keys.states] if keys.initial is None else [keys.initial, keys.states]
    copies = window + 1 if keys.form == "trajectory" else 2  # the pairs repeat each state once per window place
    size = sum(found[k].nbytes + math.prod(found[k].shape) * WORKING_BYTES * copies for k in ks)
    if max_bytes is not None and size > max_bytes:
        raise DataError(
            f"{path}: keys {', '.join(repr(k) for k in ks)} take about {size / 2**20:,.0f} MiB in memory once read "
            f"and cut into pairs, over the budget of {max_bytes / 2**20:,.0f} MiB; use fewer samples or raise --memory"
        )
    arrays = read(path, ks)
    notes: list[str] = []
    states = states_of(arrays[keys.states], t.axis, dims, channels, path, keys.states, notes)
    initial = None if keys.initial is None else np.asarray(arrays[keys.initial])
    return states, initial, notes


def split_off(n: int, path: Path) -> int:
    """Where the held-out last tenth of ``n`` trajectories or samples begins (a :class:`UserError` for one)."""
    if n < 2:
        raise UserError(f"{path}: one sample, and no --test file to hold out; give a --test file")
    return n - max(1, n // 10)


def pairs_of(
    states: Tensor,
    initial: np.ndarray | None,
    keys: Keys,
    window: int,
    axes: Sequence[Axis],
    where: str,
    channels: str,
    log_input: bool,
    zero_tolerance: float | None,
) -> Samples:
    """The checked pairs a model trains on or is scored with: windows of ``window`` states and the next
    (trajectories), or the initial condition and its ``T`` states as ``T · C`` channels."""
    if keys.form == "trajectory":
        return windows(
            states, window, axes, where=where, key=keys.states, log_input=log_input, zero_tolerance=zero_tolerance
        )
    assert initial is not None and keys.initial is not None
    notes: list[str] = []
    x = fields_of(initial, len(axes), "first" if channels == "first" else "last", where, keys.initial, notes)
    y = states.movedim(1, -2).flatten(-2)  # (N, *grid, T C): state-major
    s = samples(
        x, y, axes, where=where, keys=(keys.initial, keys.states), log_input=log_input, zero_tolerance=zero_tolerance
    )
    return Samples(s.inputs, s.outputs, s.axes, s.where, (*notes, *s.notes))


@dataclass(frozen=True)
class HorizonErrors:
    """The relative L² errors of one test file over the horizon: per predicted state (the mean over its
    trajectories), and over the whole horizon per trajectory (mean, median, max); the least-squares map's, rolled out
    the same way, beside them (``None`` where it was not fitted or predicts only on the training grid)."""

    file: str
    grid: tuple[int, ...]
    samples: int
    steps: int
    per_step: list[float]
    mean: float
    median: float
    max: float
    least_squares_per_step: list[float] | None = None
    least_squares_mean: float | None = None


def predicted(
    predictor: Predictor, time: Time, test: Samples | Tensor, horizon: int, axes: Sequence[Axis]
) -> tuple[Tensor, Tensor]:
    """The predicted and the exact states over the horizon, both ``(N, horizon, *grid, C)``: rolled out from each
    trajectory's first ``window`` states by ``predictor`` (a window ``(n, *grid, W C)`` to the next state), or
    ``predictor``'s outputs of the initial conditions as states."""
    if isinstance(test, Tensor):
        w = time.window
        exact = test[:, w : w + horizon]
        parts = [rollout(predictor, test[i : i + CHUNK, :w], horizon, len(axes)) for i in range(0, len(test), CHUNK)]
        return torch.cat(parts).double(), exact.double()
    with torch.no_grad():
        outputs = torch.cat([predictor(test.inputs[i : i + CHUNK]) for i in range(0, len(test), CHUNK)])

    def states(y: Tensor) -> Tensor:
        return unflatten(y, -1, (time.horizon, time.fields)).movedim(-2, 1).double()

    return states(outputs), states(test.outputs)


def horizon_report(
    model: OperatorModel,
    time: Time,
    test: Samples | Tensor,
    where: str,
    axes: Sequence[Axis],
    linear: LinearMap | None,
    plot: Path | None,
) -> HorizonErrors:
    """:class:`HorizonErrors` of ``model`` on one test file (trajectories, or initial-condition samples), the
    worst trajectory plotted to ``plot``."""
    steps = time.horizon if isinstance(test, Samples) else min(test.shape[1] - time.window, time.horizon)
    pred, exact = predicted(model_step(model), time, test, steps, axes)
    per_step, total = horizon_errors(pred, exact, axes)
    grid = tuple(exact.shape[2:-1])
    ls_step: list[float] | None = None
    ls_mean: float | None = None
    if linear is not None and linear.grid == grid:
        ls_pred, _ = predicted(linear, time, test, steps, axes)
        ls_per, ls_total = horizon_errors(ls_pred, exact, axes)
        ls_step, ls_mean = ls_per.mean(0).tolist(), float(ls_total.mean())
    if plot is not None:
        i = int(total.argmax())
        plot_rollout(pred[i], exact[i], per_step[i], axes, f"{Path(where).name}: worst trajectory {i}", plot)
    return HorizonErrors(
        where,
        grid,
        int(total.shape[0]),
        steps,
        per_step.mean(0).tolist(),
        float(total.mean()),
        float(total.median()),
        float(total.max()),
        ls_step,
        ls_mean,
    )


def plot_rollout(pred: Tensor, exact: Tensor, per_step: Tensor, axes: Sequence[Axis], title: str, path: Path) -> None:
    """One trajectory's prediction ``(H, *grid, C)`` against the exact states, first channel: on a line, truth,
    prediction and error as images over (x, t); on a square, the last state's; beside them the error per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p, e = pred[..., 0].numpy(), exact[..., 0].numpy()
    fig, panels = plt.subplots(1, 4, figsize=(15, 3.6))
    if len(axes) == 1:
        extent = (axes[0].lo, axes[0].hi, float(len(p)) + 0.5, 0.5)
        images, label = (e, p, p - e), "step"
    else:
        extent = (axes[1].lo, axes[1].hi, axes[0].hi, axes[0].lo)
        images, label = (e[-1], p[-1], p[-1] - e[-1]), AXIS_NAMES[0]
    for ax, img, name in zip(panels[:3], images, ("truth", "prediction", "error"), strict=True):
        shown = ax.imshow(img, extent=extent, aspect="auto", cmap="RdBu_r" if name == "error" else "viridis")
        ax.set_title(name if len(axes) == 1 else f"{name}, last step")
        ax.set_ylabel(label)
        ax.set_xlabel(AXIS_NAMES[len(axes) - 1])
        fig.colorbar(shown, ax=ax, fraction=0.046)
    steps = np.arange(1, len(per_step) + 1)
    panels[3].semilogy(steps, per_step.numpy(), marker=".")
    panels[3].set_xlabel("step")
    panels[3].set_title("relative L2 per step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def dims_of(
    found: Mapping[Path, Mapping[str, ArrayInfo]], keys: Mapping[Path, Keys], t: TimeOptions, dims: int | None
) -> int:
    """The grid's dimensions: declared, or from the training file's state shape (the first file), every file's
    checked to agree before any value is read."""
    counts = {}
    for p, k in keys.items():
        info = found[p][k.initial] if k.initial is not None else None
        shape = info.shape if info is not None else state_shape(found[p][k.states], t.axis, p, k.states)
        counts[p] = infer_dims(shape)
    first = next(iter(counts))
    d = dims if dims is not None else counts[first]
    for p, c in counts.items():
        if dims is None and c != d:
            raise UserError(
                f"{p}: wrong number of grid axes: its states are a grid of {c} axes, but {first}'s are a grid of "
                f"{d}; give test files on the training grid's axes (or declare --dims)"
            )
    return d
