r"""The data checks of a grid's axes: samples that contradict the layout or boundary declared for them.

An axis is an :class:`~instances.axes.Axis` (a layout from :mod:`instances.layouts`, an extent, a boundary:
re-exported here). Checks (:func:`check_layout`) catch the misreadings that train silently: a periodic layout whose
last sample repeats the first (the end stored twice: the nodes are ``i/(P - 1)``), and a ``"zero"`` boundary whose
stored ends are not zero -- with the layout the data more likely have in the message.
"""

from __future__ import annotations

import math

import numpy as np
from torch import Tensor

from instances.axes import BOUNDARIES, FREE, LAYOUTS, PERIODIC, ZERO, Axis, Boundary, LayoutError, parse_extent
from instances.layouts import Centres, ChebyshevNodes, Layout, LobattoNodes, Nodes, PeriodicNodes

__all__ = [
    "BOUNDARIES",
    "FREE",
    "LAYOUTS",
    "NOISE_FACTOR",
    "PERIODIC",
    "REPEAT_TOLERANCE",
    "ZERO",
    "ZERO_TOLERANCE",
    "Axis",
    "Boundary",
    "Centres",
    "ChebyshevNodes",
    "Layout",
    "LayoutError",
    "LobattoNodes",
    "Nodes",
    "PeriodicNodes",
    "axes_of",
    "check_layout",
    "check_option",
    "parse_extent",
    "per_axis",
    "roughness",
    "zero_tolerance",
]

#: a stored end counts as zero when its root-mean-square is below this fraction of the field's (at least)
ZERO_TOLERANCE = 1e-3
#: ... or below this many times the data's roughness at the grid's scale (:func:`roughness`)
NOISE_FACTOR = 3.0
#: a periodic axis whose last sample equals its first to this fraction of the field repeats its end
REPEAT_TOLERANCE = 1e-9


def per_axis(text: str | None, dims: int, option: str) -> list[str | None]:
    """A per-axis option's values: ``None`` for each axis when not given, one value for every axis (``"zero"``) or
    one per axis separated by commas (``"zero,free"``); an empty value is an error (:class:`LayoutError`)."""
    if text is None:
        return [None] * dims
    parts = _parts(text, option)
    if len(parts) == 1:
        return [parts[0]] * dims
    if len(parts) != dims:
        raise LayoutError(f"{option} {text!r}: give one value for every axis or one per axis ({dims} here)")
    return [*parts]


def _parts(text: str, option: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts):
        raise LayoutError(f"{option} {text!r}: an empty value; give one value for every axis, or one per axis (x,y)")
    if len(parts) > 2:
        raise LayoutError(f"{option} {text!r}: {len(parts)} values, but a grid has one or two axes")
    return parts


def check_option(option: str, text: str) -> str:
    """``text`` if it is a valid value of the per-axis option ``option`` (``--layout``, ``--boundary`` or
    ``--extent``: one value, or two separated by a comma), else a :class:`LayoutError` naming the bad value."""
    choices: dict[str, tuple[str, ...]] = {"--layout": tuple(LAYOUTS), "--boundary": tuple(BOUNDARIES)}
    for part in _parts(text, option):
        if option == "--extent":
            parse_extent(part, option)
        elif part not in choices[option]:
            raise LayoutError(f"{option} {part!r}: must be one of {', '.join(choices[option])}")
    return text


def axes_of(dims: int, layout: str | None, boundary: str | None, extent: str | None) -> tuple[Axis, ...]:
    """A grid's axes from the text of ``--layout``, ``--boundary`` and ``--extent`` (each: one value for every axis,
    one per axis separated by commas, or ``None`` for the defaults: nodes on ``[0, 1]``, the layout's boundary)."""
    layouts = per_axis(layout, dims, "--layout")
    boundaries = per_axis(boundary, dims, "--boundary")
    extents = per_axis(extent, dims, "--extent")
    axes = []
    for i in range(dims):
        for option, value in (("--layout", layouts[i]), ("--boundary", boundaries[i])):
            if value is not None:
                check_option(option, value)
        lo, hi = (0.0, 1.0) if extents[i] is None else parse_extent(extents[i] or "")
        try:
            axes.append(Axis(layouts[i] or Nodes, lo, hi, boundaries[i]))
        except LayoutError as e:
            raise LayoutError(f"axis {'xy'[i]}: {e}") from None
    return tuple(axes)


def _above(x: float) -> float:
    """``x`` rounded up to two significant digits."""
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step * (1 - 1e-12)) * step


def _edge(values: np.ndarray, dim: int, which: int) -> np.ndarray:
    return np.take(values, [which], axis=dim)


def _rms(x: np.ndarray) -> float:
    flat = x.astype(np.float64, copy=False).ravel()  # a view of contiguous float64 values: no copy
    return math.sqrt(float(np.vdot(flat, flat)) / flat.size) if flat.size else 0.0


def roughness(values: np.ndarray | Tensor, dim: int) -> float:
    r"""The data's variation at the grid's scale along ``dim``, as a fraction of their root-mean-square: the third
    differences' root-mean-square over :math:`\sqrt{20}` (white noise of deviation :math:`\sigma` gives
    :math:`\sigma`; a smooth function :math:`O(h^3)`), ``0`` on fewer than four samples."""
    v = values.detach().cpu().numpy() if isinstance(values, Tensor) else np.asarray(values)
    p = v.shape[dim]
    scale = _rms(v)
    if p < 4 or scale == 0:
        return 0.0
    return _rms(np.diff(v, n=3, axis=dim)) / math.sqrt(20) / scale


def zero_tolerance(values: np.ndarray | Tensor, dim: int) -> float:
    """How large stored ends may be and count as zero along ``dim``, as a fraction of the field's root-mean-square:
    :data:`ZERO_TOLERANCE`, or :data:`NOISE_FACTOR` times the data's :func:`roughness` where that is larger (ends
    within the data's own noise pass)."""
    return max(ZERO_TOLERANCE, NOISE_FACTOR * roughness(values, dim))


def check_layout(
    values: np.ndarray | Tensor,
    axis: Axis,
    dim: int,
    name: str,
    where: str,
    *,
    ends: bool = True,
    zero_tolerance: float | None = None,
) -> None:
    """Raise :class:`LayoutError` when the samples ``values`` contradict ``axis`` along ``dim``.

    ``name`` names the axis (``"x"``) and ``where`` the array (``"train.pt, key 'u'"``) in the message. Checked:

    * a layout storing its first end and not its last (periodic, ``i/P``) whose last sample repeats the first
      (``|u_last - u_first| ≤ 1e-9 ‖u‖`` over every sample): the file stores the end twice, so its nodes are
      ``i/(P - 1)``;
    * a boundary that :attr:`~instances.axes.Boundary.vanishes` whose stored :attr:`~instances.layouts.Layout.ends`
      (nodes, Lobatto: both; periodic: the first) are not zero (root-mean-square above ``1e-3`` of the field's):
      with the other end zero and this one not, the nodes are likely ``i/P`` (the periodic layout); with neither
      zero, the boundary is not zero. Only with ``ends`` (an input function need not vanish where the output does).
    """
    v = values.detach().cpu().numpy() if isinstance(values, Tensor) else np.asarray(values)
    p = v.shape[dim]
    if p < axis.smallest():
        raise LayoutError(
            f"{where}: axis {name} has {p} sample(s), too few for layout {axis.layout.name}; check the array's shape"
        )
    scale = _rms(v)
    if scale == 0:
        return
    first, last = _edge(v, dim, 0), _edge(v, dim, p - 1)
    stored_first, stored_last = axis.layout.ends
    if stored_first and not stored_last and p > 1 and _rms(last - first) <= REPEAT_TOLERANCE * scale:
        raise LayoutError(
            f"{where}: axis {name} is declared {axis.layout.name} ({axis.layout.placement}) but its last sample "
            f"repeats its first in every sample: the file stores the end twice; declare layout {Nodes.name} "
            f"({Nodes.placement}) for it, or drop the last sample"
        )
    if not ends or not axis.boundary.vanishes:
        return
    sizes = {
        k: _rms(e) / scale for k, e, stored in (("first", first, stored_first), ("last", last, stored_last)) if stored
    }
    tolerance = ZERO_TOLERANCE if zero_tolerance is None else zero_tolerance
    bad = [k for k, r in sizes.items() if r > tolerance]
    if not bad:
        return
    shown = ", ".join(f"{k} {sizes[k]:.1e}" for k in bad)
    if axis.layout is Nodes and bad == ["last"]:
        fix = (
            f"the first end is zero and the last is not: the nodes are likely {PeriodicNodes.placement}, the end "
            f"absent; declare layout {PeriodicNodes.name} for axis {name} (boundary {axis.boundary.name} stays)"
        )
    elif axis.layout is Nodes and bad == ["first"]:
        fix = f"the last end is zero and the first is not: the first end may be absent; check axis {name}'s nodes"
    else:
        fix = (
            f"the data do not vanish there; declare boundary {FREE.name} for axis {name} (learned) if that is the "
            "problem"
        )
    most = max(sizes[k] for k in bad)
    raise LayoutError(
        f"{where}: axis {name} has boundary {axis.boundary.name} imposed, but its stored ends are not zero "
        f"(root-mean-square over the field's: {shown}, over the tolerance {tolerance:.1e}); {fix}; to impose zero "
        f"on ends this large anyway: --zero-tolerance {_above(most):g}"
    )
