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

from models.operator import OperatorModel
from operators.dataset import AXIS_NAMES, INPUT_KEYS, OUTPUT_KEYS, Channels, inputs_of, pick_key
from operators.files import SUFFIXES, contents, read, write
from operators.layout import parse_extent
from training.budget import Budget
from training.errors import InputError, UserError

from .prediction import predict

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
    if target.suffix.lower() not in SUFFIXES:
        raise UserError(f"{target}: unknown file type {target.suffix or '(none)'!r}; use one of {', '.join(SUFFIXES)}")
    if target.resolve() == source.resolve():
        raise UserError(f"{target}: is the input file; name another file for the outputs")
    found = contents(source)
    key = pick_key(list(found), input_key, (*INPUT_KEYS, "array"), source, "input")
    x, notes = inputs_of(
        read(source, [key])[key],
        model.axes,
        model.in_channels,
        channels=channels,
        log_input=model.log_input,
        where=str(source),
        key=key,
    )
    try:
        pred = predict(model, x, at=None if at is None else list(at), budget=budget)
    except InputError as e:
        raise UserError(str(e)) from None
    shape = found[key].shape
    if len(shape) == model.dims + 1 and model.out_channels == 1:
        pred = pred[..., 0]  # the inputs had no channel axis: nor have the outputs
    elif channels == "first":
        pred = pred.movedim(-1, 1)
    out_key = output_key(key, output_key_name)
    arrays = {out_key: pred.numpy()}
    if at is not None and target.suffix.lower() != ".npy":
        joint = "_" if target.suffix.lower() == ".mat" else "-"  # a MATLAB name has no hyphen
        arrays |= {f"{AXIS_NAMES[i]}{joint}coordinate": np.asarray(c.numpy()) for i, c in enumerate(at)}
    write(target, arrays)
    return Written(target, out_key, tuple(pred.shape), notes)
