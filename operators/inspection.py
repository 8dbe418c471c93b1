"""What a data file says about its grid, as a report to decide the layout from -- never a guess.

:func:`report` lists every array (key, shape, dtype, range, root-mean-square), the keys training would take as
inputs and outputs, and per grid axis the evidence each layout is read from:

* the stored ends against zero, as root-mean-squares over the field's, beside the data's own roughness at the
  grid's scale (:func:`~operators.layout.roughness`): ends within it are zero as far as the data can tell;
* the last sample against the first (a periodic axis stored with its end twice repeats it);
* coordinates stored in the file (1-D arrays as long as the axis), and the extent each layout would give them
  (:func:`extents`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from applicative import DataError

from .dataset import AXIS_NAMES, INPUT_KEYS, OUTPUT_KEYS, TRAJECTORY_KEYS, infer_dims
from .files import contents, read
from .layout import LAYOUTS, NOISE_FACTOR, ZERO_TOLERANCE, roughness

#: coordinates count as placed by a layout when they are within this fraction of the extent of its points
FIT_TOLERANCE = 1e-5


def extents(c: np.ndarray) -> dict[str, tuple[float, float]]:
    """The layouts whose points ``lo + (hi - lo) unit(P)`` are the coordinates ``c`` (increasing), with ``(lo, hi)``
    fitted by least squares; an evenly spaced ``c`` fits ``nodes``, ``periodic`` and ``centres``, each with its own
    extent."""
    c = np.asarray(c, dtype=np.float64).ravel()
    out: dict[str, tuple[float, float]] = {}
    if len(c) < 2 or not np.all(np.diff(c) > 0):
        return out
    for name, layout in LAYOUTS.items():
        s = layout.unit(len(c)).numpy()
        a = np.stack([1 - s, s], 1)  # c = lo (1 - s) + hi s
        (lo, hi), *_ = np.linalg.lstsq(a, c, rcond=None)
        if hi > lo and float(np.abs(a @ np.array([lo, hi]) - c).max()) <= FIT_TOLERANCE * (hi - lo):
            step = 10.0 ** math.floor(math.log10(FIT_TOLERANCE * (hi - lo)))  # the fit's own precision
            out[name] = (round(lo / step) * step + 0.0, round(hi / step) * step + 0.0)
    return out


#: the keys of an axis's stored coordinates (``{}``: the axis's name), as the public collections name them
COORDINATE_KEYS = ("{}-coordinate", "{}_coordinate", "grid/{}", "coordinates/{}")


def coordinate_key(found: Sequence[str], name: str) -> str | None:
    """The key of axis ``name``'s stored coordinates among the keys ``found``, if any."""
    return next((k.format(name) for k in COORDINATE_KEYS if k.format(name) in found), None)


def _round(v: float, span: float) -> bool:
    """``v`` is a round number at the axis's scale (a multiple of a thousandth of the span's power of ten)."""
    step = 10.0 ** (math.floor(math.log10(span)) - 3)
    return abs(v / step - round(v / step)) < 1e-6


def layout_from(c: np.ndarray, declared: str | None, where: str) -> tuple[str, float, float]:
    """The layout and extent ``(name, lo, hi)`` stored coordinates ``c`` give an axis: the ``declared`` layout's
    extent (a :class:`~applicative.DataError` if ``c`` are not its points); undeclared, the one layout whose points
    they are, or of several (evenly spaced points) the one whose extent ends on round numbers -- else a
    :class:`~applicative.DataError` listing each and asking for ``--layout``."""
    fitted = extents(c)
    shown = "; ".join(f"{n} on [{lo:.6g}, {hi:.6g}]" for n, (lo, hi) in fitted.items()) or "no layout's"
    if declared is not None:
        if declared not in fitted:
            raise DataError(f"{where}: the stored coordinates are the points of {shown}, not of layout {declared}")
        return declared, *fitted[declared]
    round_ends = [n for n, (lo, hi) in fitted.items() if _round(lo, hi - lo) and _round(hi, hi - lo)]
    if len(fitted) == 1 or len(round_ends) == 1:
        name = next(iter(fitted)) if len(fitted) == 1 else round_ends[0]
        return name, *fitted[name]
    raise DataError(f"{where}: the stored coordinates are the points of {shown}; declare which with --layout")


def _rms(x: np.ndarray) -> float:
    return math.sqrt(float(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def _flat(a: np.ndarray) -> np.ndarray | None:
    """A 1-D array (MATLAB's ``(1, P)`` and ``(P, 1)`` included), else ``None``."""
    return a.ravel() if a.ndim == 1 or (a.ndim == 2 and 1 in a.shape) else None


def report(path: str | Path) -> list[str]:
    """The lines of the report on the file ``path`` (a :class:`~applicative.DataError` if it cannot be read)."""
    path = Path(path)
    found = contents(path)
    values = read(path, list(found))
    lines = [f"{path}: {len(found)} array(s)"]
    for key, info in found.items():
        v = values[key]
        numeric = v.dtype == np.bool_ or np.issubdtype(v.dtype, np.number)
        summary = f"min {float(v.min()):.4g}  max {float(v.max()):.4g}  rms {_rms(v):.4g}" if numeric and v.size else ""
        lines.append(f"  {key}: shape {info.shape}  {info.dtype}  {summary}".rstrip())
    kx = next((k for k in INPUT_KEYS if k in found), None)
    ky = next((k for k in OUTPUT_KEYS if k in found), None)
    lines.append(
        f"inputs: key {kx!r}" if kx else f"inputs: none of the usual keys ({', '.join(INPUT_KEYS)}): --input-key"
    )
    lines.append(
        f"outputs: key {ky!r}" if ky else f"outputs: none of the usual keys ({', '.join(OUTPUT_KEYS)}): --output-key"
    )
    field = ky if ky is not None else kx
    if field is None:
        field = next((k for k in TRAJECTORY_KEYS if k in found and len(found[k].shape) >= 3), None)
        if field is None:
            return lines
        lines.append(f"trajectories: key {field!r}? (--time-axis K names the axis that counts the states)")
    v = values[field].astype(np.float64)
    t_key = coordinate_key(list(found), "t")
    times = None if t_key is None else _flat(values[t_key])
    steps = [] if times is None else [i for i in range(1, v.ndim) if len(times) in (v.shape[i], v.shape[i] + 1)]
    if t_key is not None and times is not None:
        said = " or ".join(f"axis {i} ({v.shape[i]} states)" for i in steps) or "no axis"
        lines.append(
            f"time: key {t_key!r} holds {len(times)} times ({float(times[0]):.4g} .. {float(times[-1]):.4g}), as "
            f"many as (or one more than, edges) {said} of key {field!r}"
            + (f": --time-axis {steps[0]}" if len(steps) == 1 else "")
        )
    if kx is not None and ky is not None and v.ndim == len(found[kx].shape) + 1:
        extra = [i for i in range(1, v.ndim) if (*v.shape[:i], *v.shape[i + 1 :]) == found[kx].shape]
        lines.append(
            f"time: key {ky!r} {v.shape} holds one axis more than key {kx!r} {found[kx].shape}: an initial condition "
            f"and its trajectory, the states along "
            + (" or ".join(f"axis {i}" for i in extra) or "an axis (the other shapes differ)")
            + (f": --time-axis {extra[0]}" if len(extra) == 1 else "")
        )
        steps = steps if steps else extra
    if len(steps) == 1:  # the grid of one state
        v = np.take(v, 0, axis=steps[0])
        lines.append(f"grid of one state: key {field!r} without axis {steps[0]}")
    dims = infer_dims(v.shape)
    if v.ndim < 2:
        raise DataError(f"{path}, key {field!r}: shape {v.shape} has no grid axis after the samples")
    noun = "axis" if dims == 1 else "axes"
    lines.append(f"grid: {dims} {noun} from key {field!r}'s shape {v.shape} (samples first; --dims to say otherwise)")
    scale = _rms(v)
    skip = (kx, ky, field, t_key)
    flats = {k: f for k in found if (f := _flat(values[k])) is not None and f.size > 1 and k not in skip}
    for i in range(dims):
        lines += _axis(v, 1 + i, AXIS_NAMES[i], scale, flats, field)
    return lines


def _axis(v: np.ndarray, dim: int, name: str, scale: float, flats: dict[str, np.ndarray], key: str) -> list[str]:
    p = v.shape[dim]
    out = [f"axis {name}: {p} samples"]
    if scale > 0:
        first = _rms(np.take(v, 0, axis=dim)) / scale
        last = _rms(np.take(v, p - 1, axis=dim)) / scale
        repeat = _rms(np.take(v, p - 1, axis=dim) - np.take(v, 0, axis=dim)) / scale
        rough = roughness(v, dim)
        tolerance = max(ZERO_TOLERANCE, NOISE_FACTOR * rough)
        zero = [k for k, r in (("first", first), ("last", last)) if r <= tolerance]
        out.append(
            f"  ends of {key!r} (root-mean-square over the field's): first {first:.2e}, last {last:.2e}; the data's "
            f"roughness {rough:.2e}, so ends up to {tolerance:.2e} count as zero: "
            + ({0: "neither is zero", 1: f"only the {zero[0] if zero else ''} is zero", 2: "both are zero"}[len(zero)])
        )
        out.append(
            f"  last sample against the first: differ by {repeat:.2e} of the field"
            + (" -- the end stored twice (nodes i/(P-1) of a periodic function)" if repeat <= 1e-9 else "")
        )
        evidence = {
            ("first", "last"): "both stored ends zero: the layouts that store both (nodes, lobatto) with boundary zero",
            ("first",): "the first end zero, the last not: periodic (i/P, the end at 1 absent) with boundary zero",
            ("last",): "the last end zero, the first not: check the first node",
            (): "no stored end zero: boundary free (periodic for a periodic function), or a layout storing no end",
        }
        out.append(f"  evidence: {evidence[tuple(zero)]}")
    for k, c in flats.items():
        if len(c) != p:
            continue
        fitted = extents(c)
        said = "; ".join(f"{n} on [{lo:.6g}, {hi:.6g}]" for n, (lo, hi) in fitted.items())
        out.append(
            f"  coordinates {k!r} ({c[0]:.6g} .. {c[-1]:.6g}): "
            + (f"the points of {said}" if fitted else "the points of no layout (not increasing, or unevenly placed)")
        )
    return out
