"""Pairs of functions on a grid -- input functions and the output functions an operator maps them to -- checked.

:class:`Samples` holds ``inputs`` ``(N, *grid, C_in)`` and ``outputs`` ``(N, *grid, C_out)`` (float64, channels
last) on a grid of one or two axes, each an :class:`~operators.layout.Axis` (layout, extent, boundary).
:func:`samples` builds one from arrays as a user has them -- ``(N, *grid)`` for one channel, channels last or
first -- and checks, before anything is trained, every assumption a model would otherwise make silently
(:func:`check`): matching sample counts and grids, finite values, positive values where a log is taken, the
layout against the data's ends (:func:`~operators.layout.check_layout`). :func:`from_file` reads the arrays
from a file (:mod:`operators.files`) under the keys the user names, or the first of the keys public data sets
use (:data:`INPUT_KEYS`, :data:`OUTPUT_KEYS`).

Every problem is a :class:`~applicative.DataError`: one line naming the file, the key and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from applicative import DataError

from . import layout
from .files import contents, read
from .layout import Axis, LayoutError, check_layout

Channels = Literal["last", "first"]
#: input keys tried in order when none is named: neuraloperator's ``.pt`` files, the FNO paper's ``.mat`` files
#: (Darcy ``coeff``, Burgers ``a``), generic names
INPUT_KEYS = ("x", "a", "coeff", "input", "inputs")
#: output keys tried in order when none is named
OUTPUT_KEYS = ("y", "u", "sol", "output", "outputs")
AXIS_NAMES = ("x", "y")
#: the keys a file of trajectories ``(N, T, *grid)`` is found under, in order, when none is named (PDEBench's
#: ``tensor`` first)
TRAJECTORY_KEYS = ("tensor", "u", "trajectories", "trajectory", "sol", "data")
#: the sizes data may have (an output sample's largest value, any input's): a float32 model squares them
SMALLEST, LARGEST = 1e-15, 1e15
#: bytes in memory per value read, beyond the file's own dtype: the float64 copy and the checks' masks
WORKING_BYTES = 10


@dataclass(frozen=True)
class Samples:
    """Input and output functions sampled on one grid.

    Attributes:
        inputs: ``(N, *grid, C_in)``, float64.
        outputs: ``(N, *grid, C_out)``, float64.
        axes: one :class:`~operators.layout.Axis` per grid axis (one or two).
        where: where the samples came from (a file's name), for messages.
        notes: what reading them changed, one line each (a field of booleans read as numbers).
    """

    inputs: Tensor
    outputs: Tensor
    axes: tuple[Axis, ...]
    where: str = "arrays"
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def grid(self) -> tuple[int, ...]:
        """Samples per axis."""
        return tuple(self.inputs.shape[1:-1])

    @property
    def channels(self) -> tuple[int, int]:
        """``(C_in, C_out)``."""
        return int(self.inputs.shape[-1]), int(self.outputs.shape[-1])


def _as_array(a: np.ndarray | Tensor, where: str, key: str, notes: list[str]) -> np.ndarray:
    """The values as a numpy array of real numbers; booleans and integers are read as numbers (``False``, ``True``
    as 0, 1), said in ``notes``."""
    x = a.detach().cpu().numpy() if isinstance(a, Tensor) else np.asarray(a)
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        what = "booleans, read as 0 and 1" if x.dtype == np.bool_ else f"integers ({x.dtype}), read as numbers"
        notes.append(f"{where}, key {key!r}: {what}")
        return x.astype(np.float64)
    if not np.issubdtype(x.dtype, np.floating):
        raise DataError(f"{where}, key {key!r}: values of dtype {x.dtype}, expected real numbers; convert them")
    return x


def _channels_last(x: np.ndarray, dims: int, channels: Channels, where: str, key: str) -> np.ndarray:
    """``(N, *grid)`` or ``(N, *grid, C)`` (``(N, C, *grid)`` with ``channels="first"``) -> ``(N, *grid, C)``."""
    if x.ndim == dims + 1:
        return x[..., None]
    if x.ndim == dims + 2:
        return np.moveaxis(x, 1, -1) if channels == "first" else x
    shape = tuple(x.shape)
    raise DataError(
        f"{where}, key {key!r}: wrong number of grid axes: shape {shape} is not (samples, "
        f"{', '.join(AXIS_NAMES[:dims])}) or with a channel axis for a grid of {dims} dimension(s); declare the "
        "grid's dimensions (dims=1 or 2) or reshape the array"
    )


def fields_of(
    values: np.ndarray | Tensor, dims: int, channels: Channels, where: str, key: str, notes: list[str]
) -> np.ndarray:
    """An array as a user has it, ``(N, *grid)``, ``(N, *grid, C)`` or (``channels="first"``) ``(N, C, *grid)``, as
    real numbers ``(N, *grid, C)`` (booleans and integers read as numbers, said in ``notes``)."""
    return _channels_last(_as_array(values, where, key, notes), dims, channels, where, key)


def infer_dims(shape: Sequence[int]) -> int:
    """The grid's dimensions when none is declared: ``(N, P)`` is 1D; ``(N, P, Q)`` and ``(N, P, Q, C)`` are 2D."""
    return 1 if len(shape) <= 2 else 2


def samples(
    inputs: np.ndarray | Tensor,
    outputs: np.ndarray | Tensor,
    axes: Sequence[Axis] | None = None,
    *,
    dims: int | None = None,
    channels: Channels = "last",
    log_input: bool = False,
    where: str = "arrays",
    keys: tuple[str, str] = ("inputs", "outputs"),
    zero_tolerance: float | None = None,
) -> Samples:
    """Checked :class:`Samples` from arrays as a user has them.

    Args:
        inputs, outputs: ``(N, *grid)`` (one channel) or ``(N, *grid, C)`` (``(N, C, *grid)`` with
            ``channels="first"``); the same ``N`` and grid.
        axes: one :class:`~operators.layout.Axis` per grid axis (default: ``Axis()``, nodes ``i/(P-1)`` on
            ``[0, 1]`` with a free boundary, each).
        dims: the grid's dimensions (default: ``len(axes)``, else :func:`infer_dims`).
        log_input: the model reads ``log inputs``: every input must be positive.
        where, keys: named in messages (the file and its keys).
        zero_tolerance: how large a ``"zero"`` boundary's stored ends may be, as a fraction of the field's
            root-mean-square (default: the data's own roughness, :func:`~operators.layout.check_layout`).

    Booleans and integers are read as numbers, said in the result's ``notes``.

    Raises:
        DataError: the first assumption the arrays break (:func:`check`).
    """
    notes: list[str] = []
    a_in = _as_array(inputs, where, keys[0], notes)
    a_out = _as_array(outputs, where, keys[1], notes)
    d = dims if dims is not None else (len(axes) if axes else infer_dims(a_in.shape))
    if d not in (1, 2):
        raise DataError(f"{where}: a grid of {d} dimensions; the operator task takes 1 or 2")
    axes = tuple(axes) if axes else tuple(Axis() for _ in range(d))
    if len(axes) != d:
        raise DataError(f"{where}: {len(axes)} axes declared for a grid of {d} dimension(s); declare one per axis")
    x = _channels_last(a_in, d, channels, where, keys[0])
    y = _channels_last(a_out, d, channels, where, keys[1])
    out = Samples(
        torch.from_numpy(x.astype(np.float64)), torch.from_numpy(y.astype(np.float64)), axes, where, tuple(notes)
    )
    check(out, log_input=log_input, keys=keys, zero_tolerance=zero_tolerance)
    return out


def inputs_of(
    values: np.ndarray | Tensor,
    axes: Sequence[Axis],
    in_channels: int,
    *,
    channels: Channels = "last",
    log_input: bool = False,
    where: str = "arrays",
    key: str = "inputs",
) -> tuple[Tensor, tuple[str, ...]]:
    """Input functions alone ``(N, *grid, C_in)`` float64, checked as :func:`samples` checks a training set's inputs
    (the number of grid axes and channels, finite values within scale, positive for a log, each axis's layout); and
    the notes on what reading them changed."""
    notes: list[str] = []
    a = _as_array(values, where, key, notes)
    dims = len(axes)
    shape = tuple(a.shape)
    grid_axes = len(shape) - 1 - (len(shape) == dims + 2 and shape[1 if channels == "first" else -1] == in_channels)
    if grid_axes != dims:
        raise DataError(
            f"{where}, key {key!r}: wrong number of grid axes: shape {shape} holds {grid_axes} grid axes of "
            f"{in_channels} channel(s), but the model's grid has {dims} ({', '.join(AXIS_NAMES[:dims])}); give "
            "inputs sampled on the model's axes"
        )
    x = torch.from_numpy(_channels_last(a, dims, channels, where, key).astype(np.float64))
    if len(x) == 0:
        raise DataError(f"{where}, key {key!r}: no samples; the first axis counts samples")
    _finite(x, where, key)
    if not log_input and float(_peaks(x).max()) > 0:
        _within(where, key, "inputs", _peaks(x), each=False)
    if log_input:
        _positive(x, where, key)
    for i, axis in enumerate(axes):
        try:
            check_layout(x, axis, 1 + i, AXIS_NAMES[i], f"{where}, key {key!r}", ends=False)
        except LayoutError as e:
            raise DataError(str(e)) from None
    return x, tuple(notes)


def _finite(tensor: Tensor, where: str, key: str) -> None:
    """Every value finite, else a :class:`DataError` with their count and the first bad sample."""
    least, most = torch.aminmax(tensor)  # NaN propagates: finite extremes mean finite values (and no copy is made)
    if not (math.isfinite(float(least)) and math.isfinite(float(most))):
        bad = ~torch.isfinite(tensor)
        first = int(bad.flatten(1).any(1).nonzero()[0])
        raise DataError(
            f"{where}, key {key!r}: {int(bad.sum())} values are NaN or infinite (the first in sample {first}); "
            "remove those samples or fix them"
        )


def _positive(inputs: Tensor, where: str, key: str) -> None:
    """Every input positive (a log is taken of them), else a :class:`DataError` with the count and the smallest."""
    if bool((inputs <= 0).any()):
        count, low = int((inputs <= 0).sum()), float(inputs.min())
        raise DataError(
            f"{where}, key {key!r}: {count} input values are <= 0 (the smallest {low:g}), but the model reads "
            "log inputs (log_input=true); set log_input=false for data that are not positive"
        )


def check(
    s: Samples,
    *,
    log_input: bool = False,
    keys: tuple[str, str] = ("inputs", "outputs"),
    zero_tolerance: float | None = None,
) -> None:
    """Raise :class:`~applicative.DataError` for the first assumption ``s`` breaks.

    In order: at least one sample; equal sample counts and grids; finite values (the count and the first bad
    sample named); positive inputs if ``log_input``; each axis's layout and boundary against the samples
    (:func:`~operators.layout.check_layout`: outputs for a ``"zero"`` boundary, both for a repeated periodic end).
    """
    where = s.where
    n_in, n_out = len(s.inputs), len(s.outputs)
    if n_in == 0:
        raise DataError(f"{where}, key {keys[0]!r}: no samples; the first axis counts samples")
    if n_in != n_out:
        raise DataError(
            f"{where}: {n_in} input samples (key {keys[0]!r}) but {n_out} outputs (key {keys[1]!r}); "
            "every input needs its output"
        )
    if s.inputs.shape[1:-1] != s.outputs.shape[1:-1]:
        raise DataError(
            f"{where}: inputs on a grid of {tuple(s.inputs.shape[1:-1])} (key {keys[0]!r}) but outputs on "
            f"{tuple(s.outputs.shape[1:-1])} (key {keys[1]!r}); sample both on the same grid"
        )
    for tensor, key in ((s.inputs, keys[0]), (s.outputs, keys[1])):
        if tensor.numel() == 0:
            raise DataError(f"{where}, key {key!r}: shape {tuple(tensor.shape)} holds no values; check the array")
        _finite(tensor, where, key)
    _check_scales(s, keys, log_input)
    if log_input:
        _positive(s.inputs, where, keys[0])
    for i, axis in enumerate(s.axes):
        name = AXIS_NAMES[i]
        try:
            tolerance = zero_tolerance if zero_tolerance is not None else layout.zero_tolerance(s.outputs, 1 + i)
            check_layout(s.outputs, axis, 1 + i, name, f"{where}, key {keys[1]!r}", zero_tolerance=tolerance)
            check_layout(s.inputs, axis, 1 + i, name, f"{where}, key {keys[0]!r}", ends=False)
        except LayoutError as e:
            raise DataError(str(e)) from None


def _check_scales(s: Samples, keys: tuple[str, str], log_input: bool) -> None:
    """Every output sample measurable (its relative error ``‖u - û‖ / ‖û‖`` needs ``‖û‖ > 0``), and values whose
    squares a float32 model can form: each output sample's largest value, and the inputs' largest (unless a log is
    taken of them), within ``[1e-15, 1e15]`` (:data:`SMALLEST`, :data:`LARGEST`)."""
    peak = _peaks(s.outputs)
    zero = (peak == 0).nonzero().flatten()
    if len(zero):
        more = f" (and {len(zero) - 1} more)" if len(zero) > 1 else ""
        raise DataError(
            f"{s.where}, key {keys[1]!r}: sample {int(zero[0])}{more} has outputs all zero: its relative error is "
            "0/0, so it can be neither trained on nor measured; remove those samples"
        )
    _within(s.where, keys[1], "outputs", peak)
    inputs = _peaks(s.inputs)
    if not log_input and float(inputs.max()) > 0:
        _within(s.where, keys[0], "inputs", inputs, each=False)


def _peaks(values: Tensor) -> Tensor:
    """Each sample's largest size ``max |v|``, ``(N,)`` (from its extremes: no copy of the values is made)."""
    flat = values.flatten(1)
    return torch.maximum(flat.amax(1), -flat.amin(1))


def _within(where: str, key: str, what: str, peak: Tensor, each: bool = True) -> None:
    """``peak`` (each sample's largest value) within ``[SMALLEST, LARGEST]`` -- the smallest bound per sample
    (``each``) or for the whole array -- else a :class:`DataError` naming a sample past it and the remedy."""
    top = int(peak.argmax())
    low = int(peak.argmin()) if each else top
    bad = top if float(peak[top]) > LARGEST else low if float(peak[low]) < SMALLEST else None
    if bad is None:
        return
    size = float(peak[bad])
    raise DataError(
        f"{where}, key {key!r}: sample {bad}'s {what} reach {size:.3g}, outside [{SMALLEST:g}, {LARGEST:g}]: a float32 "
        f"model cannot form their squares; divide the {what} by a scale such as {size:.0e} (the relative error does "
        "not change)"
    )


def pick_key(found: Sequence[str], named: str | None, candidates: Sequence[str], path: Path, what: str) -> str:
    """The key ``named``, or the first of ``candidates`` present in a file holding ``found`` (one line if none)."""
    if named is not None:
        if named not in found:
            raise DataError(f"{path}: no key {named!r}; the file holds {', '.join(sorted(found)) or 'nothing'}")
        return named
    for key in candidates:
        if key in found:
            return key
    raise DataError(
        f"{path}: none of the usual {what} keys ({', '.join(candidates)}) is there; the file holds "
        f"{', '.join(sorted(found)) or 'nothing'}: name the {what} with --{what}-key"
    )


def from_file(
    path: str | Path,
    axes: Sequence[Axis] | None = None,
    *,
    input_key: str | None = None,
    output_key: str | None = None,
    dims: int | None = None,
    channels: Channels = "last",
    log_input: bool = False,
    max_bytes: int | None = None,
    zero_tolerance: float | None = None,
) -> Samples:
    """Checked :class:`Samples` from a file (:mod:`operators.files`), keys named or the usual ones.

    ``max_bytes`` bounds what the two arrays may take in memory, checked from the file's shapes before any value
    is read; ``zero_tolerance`` is :func:`samples`'s.
    """
    p = Path(path)
    found = contents(p)
    kx = pick_key(list(found), input_key, INPUT_KEYS, p, "input")
    ky = pick_key(list(found), output_key, OUTPUT_KEYS, p, "output")
    if kx == ky:
        raise DataError(f"{p}: the input and the output are both key {kx!r}; name them apart")
    # as read (decompressed: the shape times the dtype's size, whatever the file stores), then as float64 samples
    size = sum(found[k].nbytes + math.prod(found[k].shape) * WORKING_BYTES for k in (kx, ky))
    if max_bytes is not None and size > max_bytes:
        raise DataError(
            f"{p}: keys {kx!r} {found[kx].shape} ({found[kx].dtype}) and {ky!r} {found[ky].shape} "
            f"({found[ky].dtype}) take about {size / 2**20:,.0f} MiB in memory once read, over the budget of "
            f"{max_bytes / 2**20:,.0f} MiB; read them as a stream (operators.streams; --stream on the command "
            "line), use fewer samples or raise the memory budget"
        )
    arrays = read(p, [kx, ky])
    return samples(
        arrays[kx],
        arrays[ky],
        axes,
        dims=dims,
        channels=channels,
        log_input=log_input,
        where=str(p),
        keys=(kx, ky),
        zero_tolerance=zero_tolerance,
    )
