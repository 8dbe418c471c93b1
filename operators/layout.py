r"""Where a grid's samples sit on each axis, what the model assumes at its ends, and their quadrature.

A function sampled on a grid is a field over a structure whose positions are the grid's nodes.
Public operator data use a handful of placements of ``P`` samples on an axis ``[lo, hi]``, written here for
``[0, 1]``:

| layout | nodes | ends stored | quadrature (on ``t ∈ [-1, 1]``) |
|---|---|---|---|
| ``"nodes"`` | ``i / (P - 1)`` | both | trapezoid: ``h/2, h, ..., h, h/2``, ``h = 2/(P - 1)`` |
| ``"periodic"`` | ``i / P`` | the left one | periodic trapezoid: ``2/P`` each |
| ``"centres"`` | ``(i + ½) / P`` | none | midpoint: ``2/P`` each |
| ``"chebyshev"`` | ``(1 - cos(π(2i + 1)/(2P))) / 2`` (first kind) | none | Fejér's first rule |
| ``"lobatto"`` | ``(1 - cos(π i/(P - 1))) / 2`` (second kind) | both | Clenshaw--Curtis |

The layout only places the samples. What the model assumes at the ends is the axis's **boundary**, declared by the
user and never guessed: ``"periodic"`` (a :class:`~instances.Fourier` series), ``"zero"`` (a
:class:`~instances.Chebyshev` series multiplied by ``1 - t²``: ``u = 0`` at both ends, imposed) or ``"free"`` (a
Chebyshev series, the ends learned). The default is ``"periodic"`` for the periodic layout and ``"free"`` for the
others. A Dirichlet problem stored periodic-style (``i/P``, the ``x = 1`` end absent) is ``layout="periodic",
boundary="zero"``.

Checks (:func:`check_layout`) catch the misreadings that train silently: a periodic layout whose last sample
repeats the first (the end stored twice: the nodes are ``i/(P - 1)``), and a ``"zero"`` boundary whose stored ends
are not zero -- with the layout the data more likely have in the message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch
from torch import Tensor

from applicative.tensors import constant
from instances import Vector

Layout = Literal["nodes", "periodic", "centres", "chebyshev", "lobatto"]
Boundary = Literal["periodic", "zero", "free"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)
#: a stored end counts as zero when its root-mean-square is below this fraction of the field's
ZERO_TOLERANCE = 1e-3
#: a periodic axis whose last sample equals its first to this fraction of the field repeats its end
REPEAT_TOLERANCE = 1e-9
#: the largest size an axis's end may have: past it, coordinates squared or divided overflow a float32 model
EXTENT_LIMIT = 1e30
#: the shortest an axis may be, absolutely and relative to its ends' size (its nodes must stay apart in float64)
EXTENT_SHORTEST, EXTENT_RESOLUTION = 1e-30, 1e-12


class LayoutError(ValueError):
    """A grid whose samples contradict the layout or boundary declared for them (one line: what, where, the fix)."""


@dataclass(frozen=True)
class Axis:
    """One axis of a grid: where its samples sit (``layout``), its extent ``[lo, hi]`` and its ``boundary``.

    Attributes:
        layout: the samples' placement (the module's table).
        lo, hi: the axis's extent in the data's units (``lo < hi``); a periodic axis has period ``hi - lo``.
        boundary: what the model assumes at the ends; ``None``: ``"periodic"`` for the periodic layout, else
            ``"free"``.
    """

    layout: Layout = "nodes"
    lo: float = 0.0
    hi: float = 1.0
    boundary: Boundary | None = None

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise LayoutError(f"layout {self.layout!r}: must be one of {', '.join(LAYOUTS)}")
        if self.boundary is not None and self.boundary not in BOUNDARIES:
            raise LayoutError(f"boundary {self.boundary!r}: must be one of {', '.join(BOUNDARIES)}")
        problem = extent_problem(self.lo, self.hi)
        if problem is not None:
            raise LayoutError(f"extent [{self.lo:g}, {self.hi:g}]: {problem}")
        if self.bc == "periodic" and self.layout != "periodic":
            raise LayoutError(
                f"boundary periodic with layout {self.layout}: a periodic axis is sampled at i/P (its end is its "
                "start); declare layout periodic, or boundary free or zero"
            )

    @property
    def bc(self) -> Boundary:
        """The boundary, its default applied."""
        if self.boundary is not None:
            return self.boundary
        return "periodic" if self.layout == "periodic" else "free"

    @property
    def periodic(self) -> bool:
        return self.bc == "periodic"

    def describe(self) -> str:
        """``nodes i/(P-1) on [0, 1], boundary zero``."""
        where = {
            "nodes": "i/(P-1)",
            "periodic": "i/P",
            "centres": "(i+1/2)/P",
            "chebyshev": "first-kind Chebyshev points",
            "lobatto": "second-kind Chebyshev points",
        }
        return f"{self.layout} ({where[self.layout]}) on [{self.lo:g}, {self.hi:g}], boundary {self.bc}"

    def smallest(self) -> int:
        """The fewest samples the layout can place (2 with both ends stored, else 1)."""
        return 2 if self.layout in ("nodes", "lobatto") else 1

    def t(self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The samples' model coordinates ``t ∈ [-1, 1]`` (increasing): ``(points,)``."""
        return (_unit(self.layout, points, device) * 2 - 1).to(dtype)

    def coordinates(
        self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> Tensor:
        """The samples' coordinates in the data's units, ``lo + (hi - lo) s``: ``(points,)``."""
        return (self.lo + (self.hi - self.lo) * _unit(self.layout, points, device)).to(dtype)

    def to_t(self, x: Tensor) -> Tensor:
        """Coordinates in the data's units -> model coordinates ``t`` (not clipped: a periodic axis wraps)."""
        return -1 + 2 * (x - self.lo) / (self.hi - self.lo)

    def weights(
        self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> Tensor:
        """Quadrature weights for ``∫_{-1}^{1} f(t) dt`` at :meth:`t`: ``(points,)``, summing to 2."""
        return _weights(self.layout, points, device).to(dtype)


def extent_problem(lo: float, hi: float) -> str | None:
    """What is wrong with an axis's extent ``[lo, hi]`` (``None``: nothing): finite ``lo < hi``, both within
    ``±1e30``, and a length of at least ``1e-30`` and ``1e-12`` of the larger end's size."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return "need finite lo < hi"
    if max(abs(lo), abs(hi)) > EXTENT_LIMIT:
        return f"its ends must lie within ±{EXTENT_LIMIT:g}; rescale the coordinates (the model sees only [-1, 1])"
    if hi - lo < max(EXTENT_SHORTEST, EXTENT_RESOLUTION * max(abs(lo), abs(hi))):
        return (
            f"its length {hi - lo:.3g} is too short to tell its nodes apart (at least {EXTENT_SHORTEST:g}, and "
            f"{EXTENT_RESOLUTION:g} of its ends' size); rescale the coordinates"
        )
    return None


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


def parse_extent(text: str, option: str = "--extent") -> tuple[float, float]:
    """``"LO:HI"`` as ``(lo, hi)``, checked (:func:`extent_problem`); a :class:`LayoutError` says what is wrong."""
    lo, sep, hi = text.strip().partition(":")
    try:
        if not sep or ":" in hi:
            raise ValueError
        a, b = float(lo), float(hi)
    except ValueError:
        raise LayoutError(f"{option} {text!r}: expected LO:HI, e.g. 0:1, -1:1 or 0:6.2832") from None
    problem = extent_problem(a, b)
    if problem is not None:
        raise LayoutError(f"{option} {text!r}: {problem}")
    return a, b


def check_option(option: str, text: str) -> str:
    """``text`` if it is a valid value of the per-axis option ``option`` (``--layout``, ``--boundary`` or
    ``--extent``: one value, or two separated by a comma), else a :class:`LayoutError` naming the bad value."""
    choices: dict[str, tuple[str, ...]] = {"--layout": LAYOUTS, "--boundary": BOUNDARIES}
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
            axes.append(Axis(layouts[i] or "nodes", lo, hi, boundaries[i]))  # type: ignore[arg-type]
        except LayoutError as e:
            raise LayoutError(f"axis {'xy'[i]}: {e}") from None
    return tuple(axes)


def _unit(layout: Layout, p: int, device: torch.device | str | None = None) -> Tensor:
    """The layout's ``p`` samples on ``[0, 1]``, increasing, float64: ``(p,)``."""
    i = torch.arange(p, dtype=torch.float64, device=device)
    if layout == "nodes":
        return i / (p - 1) if p > 1 else torch.zeros_like(i)
    if layout == "periodic":
        return i / p
    if layout == "centres":
        return (i + 0.5) / p
    if layout == "chebyshev":
        return (1 - torch.cos(math.pi * (2 * i + 1) / (2 * p))) / 2
    return (1 - torch.cos(math.pi * i / (p - 1))) / 2 if p > 1 else torch.zeros_like(i)


def _weights(layout: Layout, p: int, device: torch.device | str | None = None) -> Tensor:
    """Quadrature weights on ``t ∈ [-1, 1]`` for the layout's ``p`` samples (sum 2), float64: ``(p,)``."""
    if layout in ("periodic", "centres"):
        return torch.full((p,), 2.0 / p, dtype=torch.float64, device=device)
    if layout == "nodes":
        w = torch.full((p,), 2.0 / max(p - 1, 1) if p > 1 else 2.0, dtype=torch.float64, device=device)
        if p > 1:
            w[0] /= 2  # element by element: an index list would be a CPU tensor (meta and compiled graphs)
            w[-1] /= 2
        return w
    # interpolatory rules on Chebyshev points: the weights integrate T_k exactly for k < p
    theta = torch.arccos((_unit(layout, p, device) * 2 - 1).clamp(-1, 1))
    k = torch.arange(p, dtype=torch.float64, device=device)
    moments = torch.where(k % 2 == 0, 2.0 / (1.0 - k * k), torch.zeros_like(k))
    weights: Tensor = torch.linalg.solve(torch.cos(k[:, None] * theta[None, :]), moments)
    return weights


@constant
def _cached(layout: Layout, p: int, what: str, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        if what == "t":
            return (_unit(layout, p, device) * 2 - 1).to(dtype)
        return _weights(layout, p, device).log().to(dtype)


def _edge(values: np.ndarray, dim: int, which: int) -> np.ndarray:
    return np.take(values, [which], axis=dim)


def _rms(x: np.ndarray) -> float:
    flat = x.astype(np.float64, copy=False).ravel()  # a view of contiguous float64 values: no copy
    return math.sqrt(float(np.vdot(flat, flat)) / flat.size) if flat.size else 0.0


def check_layout(
    values: np.ndarray | Tensor, axis: Axis, dim: int, name: str, where: str, *, ends: bool = True
) -> None:
    """Raise :class:`LayoutError` when the samples ``values`` contradict ``axis`` along ``dim``.

    ``name`` names the axis (``"x"``) and ``where`` the array (``"train.pt, key 'u'"``) in the message. Checked:

    * a periodic layout whose last sample repeats the first (``|u_last - u_first| ≤ 1e-9 ‖u‖`` over every sample):
      the file stores the end twice, so its nodes are ``i/(P - 1)``;
    * a ``"zero"`` boundary whose stored ends (``"nodes"``, ``"lobatto"``: both; ``"periodic"``: the left) are
      not zero (root-mean-square above ``1e-3`` of the field's): with the other end zero and this one not, the
      nodes are likely ``i/P`` (``layout="periodic"``); with neither zero, the boundary is not zero. Only with
      ``ends`` (an input function need not vanish where the output does).
    """
    v = values.detach().cpu().numpy() if isinstance(values, Tensor) else np.asarray(values)
    p = v.shape[dim]
    if p < axis.smallest():
        raise LayoutError(
            f"{where}: axis {name} has {p} sample(s), too few for layout {axis.layout}; check the array's shape"
        )
    scale = _rms(v)
    if scale == 0:
        return
    first, last = _edge(v, dim, 0), _edge(v, dim, p - 1)
    if axis.layout == "periodic" and p > 1 and _rms(last - first) <= REPEAT_TOLERANCE * scale:
        raise LayoutError(
            f"{where}: axis {name} is declared periodic (i/P) but its last sample repeats its first in every sample: "
            "the file stores the end twice; declare layout nodes (i/(P-1)) for it, or drop the last sample"
        )
    if not ends or axis.bc != "zero" or axis.layout in ("centres", "chebyshev"):
        return
    sizes = {"first": _rms(first) / scale, "last": _rms(last) / scale}
    if axis.layout == "periodic":
        sizes.pop("last")
    bad = [k for k, r in sizes.items() if r > ZERO_TOLERANCE]
    if not bad:
        return
    shown = ", ".join(f"{k} {sizes[k]:.1e}" for k in bad)
    if axis.layout == "nodes" and bad == ["last"]:
        fix = (
            "the first end is zero and the last is not: the nodes are likely i/P, the end absent; declare "
            f"layout periodic for axis {name} (boundary zero stays)"
        )
    elif axis.layout == "nodes" and bad == ["first"]:
        fix = f"the last end is zero and the first is not: the first end may be absent; check axis {name}'s nodes"
    else:
        fix = f"the data do not vanish there; declare boundary free for axis {name} (learned) if that is the problem"
    raise LayoutError(
        f"{where}: axis {name} has boundary zero imposed, but its stored ends are not zero (root-mean-square over the "
        f"field's: {shown}); {fix}"
    )


def line(axis: Axis, points: int) -> Vector:
    """The axis's ``points`` samples as a structure: positions at :meth:`Axis.t`, the layout's quadrature as its
    measure (so attention over them is an integral, the same at any ``points``), :attr:`Axis.periodic` when the
    axis is."""
    return _line_class(axis.layout, axis.periodic)(points)


_LINES: dict[tuple[Layout, bool], type[Vector]] = {}


def _line_class(layout: Layout, periodic: bool) -> type[Vector]:
    key = (layout, periodic)
    if key not in _LINES:
        _LINES[key] = type(f"{layout.capitalize()}Line", (_Line,), {"layout": layout, "periodic": periodic})
    return _LINES[key]


class _Line(Vector):
    """Samples of one axis in one layout (subclassed per layout by :func:`line`)."""

    layout: Layout = "nodes"

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log w_i``: the layout's quadrature weights on ``t ∈ [-1, 1]``."""
        return _cached(self.layout, self.size, "log w", dtype, torch.device(device))

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """The samples' ``t`` (the grid's nodes: its positions are its samples, ``points`` ignored)."""
        return _cached(self.layout, self.size, "t", dtype, torch.device(device if device is not None else "cpu"))
