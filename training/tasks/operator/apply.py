"""A trained operator run applied to a file of inputs: the prediction written to a file of the same format.

:func:`predict_file` reads the inputs under the key a training file would use (:data:`~operators.dataset.INPUT_KEYS`,
or the one named), checks them as training checks its inputs (:func:`~operators.dataset.inputs_of`), evaluates
:func:`~.prediction.predict` on the inputs' own grid or on a tensor grid of coordinates (:func:`grid_of`), and
writes the outputs in the inputs' own arrangement (no channel axis if they had none, channels first if they were
so) under the key paired with the input's (``x`` → ``y``, ``a`` → ``u``, ``coeff`` → ``sol``), with the
coordinates beside them as ``x-coordinate`` and ``y-coordinate`` (``x_coordinate`` in a ``.mat`` file) when they
were asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from applicative.tensors import unflatten
from models.operator import OperatorModel
from operators.dataset import AXIS_NAMES, INPUT_KEYS, OUTPUT_KEYS, TRAJECTORY_KEYS, Channels, inputs_of, pick_key
from operators.files import SUFFIXES, contents, read, write
from operators.layout import parse_extent
from training.budget import Budget
from training.checkpoint import load_checkpoint, run_path
from training.errors import InputError, UserError
from training.registry import checkpoint_in

from .model import shape_of
from .prediction import predict
from .rollout import rollout
from .shape import Time
from .time_axis import CHUNK, states_of

#: the most points per axis ``--at`` asks for
MAX_POINTS = 1 << 16


@dataclass(frozen=True)
class Written:
    """What :func:`predict_file` wrote: the file, the outputs' key and shape, and the notes on reading the inputs."""

    path: Path
    key: str
    shape: tuple[int, ...]
    notes: tuple[str, ...]


def grid_of(text: str, dims: int) -> list[Tensor]:
    """``--at``'s coordinates: ``LO:HI:COUNT`` per axis (one for every axis, or one per axis separated by commas),
    ``COUNT`` evenly spaced points from ``LO`` to ``HI`` inclusive; a :class:`UserError` naming what is wrong."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        parts = parts * dims
    if len(parts) != dims:
        raise UserError(f"--at {text!r}: give LO:HI:COUNT for every axis or one per axis ({dims} here)")
    out = []
    for part in parts:
        lo_hi, _, count = part.rpartition(":")
        try:
            lo, hi = parse_extent(lo_hi, "--at")
            n = int(count)
        except ValueError:
            raise UserError(f"--at {part!r}: LO:HI:COUNT, such as 0:1:101") from None
        if not 1 <= n <= MAX_POINTS:
            raise UserError(f"--at {part!r}: a count of points in 1..{MAX_POINTS}")
        out.append(torch.linspace(lo, hi, n, dtype=torch.float64))
    return out


def output_key(input_key: str, named: str | None) -> str:
    """The outputs' key: ``named``, else the one paired with the input's in the public files' keys, else
    ``"outputs"``."""
    if named is not None:
        return named
    return dict(zip(INPUT_KEYS, OUTPUT_KEYS, strict=True)).get(input_key, "outputs")


def predict_file(
    model: OperatorModel,
    source: Path,
    target: Path,
    *,
    input_key: str | None = None,
    output_key_name: str | None = None,
    channels: Channels = "last",
    at: Sequence[Tensor] | None = None,
    budget: Budget | None = None,
) -> Written:
    """Predict the outputs of the inputs in ``source`` with ``model`` and write them to ``target`` (its suffix names
    the format); returns what was written. ``at``: one 1-D tensor of coordinates per axis (default: the inputs' own
    grid). Every problem is one line (:class:`~training.UserError`)."""
    _check_target(source, target)
    found = contents(source)
    key = pick_key(list(found), input_key, (*INPUT_KEYS, "array"), source, "input")
    x, notes = _inputs(model, source, key, channels)
    try:
        pred = predict(model, x, at=None if at is None else list(at), budget=budget)
    except InputError as e:
        raise UserError(str(e)) from None
    shape = found[key].shape
    if len(shape) == model.dims + 1 and model.out_channels == 1:
        pred = pred[..., 0]  # the inputs had no channel axis: nor have the outputs
    elif channels == "first":
        pred = pred.movedim(-1, 1)
    return _write(target, output_key(key, output_key_name), pred, at, notes)


def _inputs(model: OperatorModel, source: Path, key: str, channels: Channels) -> tuple[Tensor, tuple[str, ...]]:
    """The inputs under ``key`` of ``source``, checked as training checks them, and the notes on reading them."""
    values = read(source, [key])[key]
    where = str(source)
    return inputs_of(
        values, model.axes, model.in_channels, channels=channels, log_input=model.log_input, where=where, key=key
    )


def _check_target(source: Path, target: Path) -> None:
    if target.suffix.lower() not in SUFFIXES:
        raise UserError(f"{target}: unknown file type {target.suffix or '(none)'!r}; use one of {', '.join(SUFFIXES)}")
    if target.resolve() == source.resolve():
        raise UserError(f"{target}: is the input file; name another file for the outputs")


def _write(target: Path, key: str, pred: Tensor, at: Sequence[Tensor] | None, notes: Sequence[str]) -> Written:
    """``pred`` written to ``target`` under ``key``, with the coordinates ``at`` beside it (not in a ``.npy``)."""
    arrays = {key: pred.numpy()}
    if at is not None and target.suffix.lower() != ".npy":
        joint = "_" if target.suffix.lower() == ".mat" else "-"  # a MATLAB name has no hyphen
        arrays |= {f"{AXIS_NAMES[i]}{joint}coordinate": np.asarray(c.numpy()) for i, c in enumerate(at)}
    write(target, arrays)
    return Written(target, key, tuple(pred.shape), tuple(notes))


def recorded_time(run_dir: Path) -> Time | None:
    """How time enters the run in ``run_dir`` (its checkpoint's record of the data), or ``None``."""
    blob = load_checkpoint(checkpoint_in(run_path(run_dir, "applicative-transformers train")))
    try:
        return shape_of(blob["config"]).time
    except ValueError as e:
        raise UserError(f"{run_dir}: {e}") from None


def predict_time_file(
    model: OperatorModel,
    time: Time,
    source: Path,
    target: Path,
    *,
    input_key: str | None = None,
    output_key_name: str | None = None,
    channels: Channels = "last",
    horizon: int | None = None,
    at: Sequence[Tensor] | None = None,
    budget: Budget | None = None,
) -> Written:
    """:func:`predict_file` for a run with a time axis (``time``): the states predicted, written with time at the
    axis the training files held it.

    * trajectories: the last ``time.window`` states of each trajectory in ``source`` (time at ``time.axis``), rolled
      out ``horizon`` steps (default the run's horizon), on the inputs' own grid;
    * an initial condition: its ``time.horizon`` states, on the inputs' grid or at ``at``.
    """
    _check_target(source, target)
    found = contents(source)
    notes: list[str] = []
    if time.form == "initial":
        if horizon is not None:
            raise UserError(f"--horizon: this run maps an initial condition to its {time.horizon} states at once")
        key = pick_key(list(found), input_key, INPUT_KEYS, source, "input")
        x, read_notes = _inputs(model, source, key, channels)
        notes += read_notes
        try:
            out = predict(model, x, at=None if at is None else list(at), budget=budget)
        except InputError as e:
            raise UserError(str(e)) from None
        states = unflatten(out, -1, (time.horizon, time.fields)).movedim(-2, 1)  # (N, T, *grid, C)
        had_channels = len(found[key].shape) == model.dims + 2
        out_key = output_key(key, output_key_name)
    else:
        if at is not None:
            raise UserError("--at: a rollout steps on its inputs' own grid; give inputs on the grid you want")
        steps = horizon if horizon is not None else time.horizon
        key = pick_key(list(found), input_key, (*TRAJECTORY_KEYS, *INPUT_KEYS), source, "input")
        shape = found[key].shape
        if not 1 <= time.axis < len(shape):
            raise UserError(f"{source}, key {key!r}: shape {shape} has no axis {time.axis}, where the run keeps time")
        trajectories = states_of(read(source, [key])[key], time.axis, model.dims, channels, source, key, notes)
        if trajectories.shape[1] < time.window or trajectories.shape[-1] != time.fields:
            raise UserError(
                f"{source}, key {key!r}: {trajectories.shape[1]} states of {trajectories.shape[-1]} field(s) each; "
                f"the run steps from {time.window} states of {time.fields} field(s): give at least {time.window}"
            )
        history = trajectories[:, -time.window :]
        window = history.movedim(1, -2).flatten(-2)  # (N, *grid, W C), as the model reads it
        inputs_of(window, model.axes, model.in_channels, log_input=model.log_input, where=str(source), key=key)
        states = torch.cat(
            [rollout(model, history[i : i + CHUNK], steps, model.dims) for i in range(0, len(history), CHUNK)]
        )
        had_channels = len(shape) == model.dims + 3
        out_key = output_key_name or key
    if not had_channels and time.fields == 1:
        states = states[..., 0]
    elif channels == "first":
        states = states.movedim(-1, 2)
    return _write(target, out_key, states.double().movedim(1, time.axis), at, notes)
