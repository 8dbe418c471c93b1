r"""An axis of a grid as a value: where its samples sit (a :mod:`~instances.layouts` layout), its extent, and its
boundary -- what a model assumes at the ends, and so which series holds its functions.

A :class:`Boundary` is declared by the user, never guessed:

| boundary | series of the axis's functions | imposed |
|---|---|---|
| :data:`PERIODIC` (``"periodic"``) | :class:`~instances.Fourier` (odd length) | nothing: the series is periodic |
| :data:`ZERO` (``"zero"``) | :class:`~instances.Chebyshev`, times ``1 - t²`` | ``u = 0`` at both ends, exactly |
| :data:`FREE` (``"free"``) | :class:`~instances.Chebyshev` | nothing: the ends are learned |

An :class:`Axis` holds a layout class, an extent ``[lo, hi]`` and a boundary (by default periodic for the periodic
layout, else free). A Dirichlet problem stored periodic-style (``i/P``, the ``x = 1`` end absent) is
``Axis(PeriodicNodes, boundary=ZERO)``.

Names (the command line's words, and what a checkpoint records) are looked up here and only here:
:data:`LAYOUTS`, :data:`BOUNDARIES`, :func:`layout_named`, :func:`boundary_named`, :meth:`Axis.record` and
:meth:`Axis.from_record`. Everything else asks the values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from applicative import DataError

from ._chebtransform import bubble, vandermonde
from .chebyshev import Chebyshev
from .fourier import Fourier, basis_at
from .layouts import Centres, ChebyshevNodes, Circle, Layout, LobattoNodes, Nodes, PeriodicNodes


class LayoutError(DataError):
    """A layout, boundary or extent that cannot be, or a grid whose samples contradict the one declared for them (one
    line: what, where, the fix)."""


class X(Chebyshev):
    """The first axis of a domain, on a bounded interval."""


class Y(Chebyshev):
    """The second axis of a domain, on a bounded interval."""


class PeriodicX(Fourier):
    """The first axis of a domain, on a period."""


class PeriodicY(Fourier):
    """The second axis of a domain, on a period."""


@dataclass(frozen=True)
class Boundary:
    """What a model assumes at an axis's ends: the series its functions are, and what that series imposes.

    Abstract; the three boundaries are :data:`PERIODIC`, :data:`ZERO` and :data:`FREE`.
    """

    #: the boundary's name (the command line's and a checkpoint's word for it)
    name: ClassVar[str] = ""
    #: the functions are periodic: a Fourier series, the samples on a circle
    periodic: ClassVar[bool] = False
    #: ``u = 0`` at both ends, imposed by the series (stored ends of the data must be zero)
    vanishes: ClassVar[bool] = False
    #: terms the imposition adds to the network's series
    imposed: ClassVar[int] = 0

    def length(self, modes: int) -> int:
        """The network's series length along the axis for ``modes`` (the rule, in one place): ``modes`` Chebyshev
        terms, or the odd ``modes + 1 - modes % 2`` Fourier terms on a periodic axis."""
        return modes + 1 - modes % 2 if self.periodic else modes

    def coefficients(self, modes: int) -> int:
        """The output series' length along the axis: :meth:`length` and the :attr:`imposed` terms."""
        return self.length(modes) + self.imposed

    def series(self, modes: int, first: bool = True) -> Chebyshev | Fourier:
        """The structure of the network's series along the axis (``first``: the domain's first axis)."""
        n = self.length(modes)
        if self.periodic:
            return PeriodicX(n) if first else PeriodicY(n)
        return X(n) if first else Y(n)

    def basis(self, size: int, t: Tensor) -> Tensor:
        """The output series' ``size`` basis functions at coordinates ``t``: ``(*t.shape, size)``."""
        return basis_at(t, size) if self.periodic else vandermonde(t, size)

    def frequency(self, size: int, dtype: torch.dtype, device: torch.device | None = None) -> Tensor:
        """Each of ``size`` coefficients' frequency scaled to ``[0, 1]``: ``k / (n - 1)`` (Chebyshev), ``⌈i/2⌉ / K``
        (Fourier, ``K = (n - 1) // 2``)."""
        i = torch.arange(size, dtype=dtype, device=device)
        if self.periodic:
            return torch.ceil(i / 2) / max((size - 1) // 2, 1)
        return i / max(size - 1, 1)

    def imposition(self, size: int) -> Tensor | None:
        """The map from the network's ``size`` coefficients to the output's ``(size + imposed, size)``, float64, or
        ``None`` where nothing is imposed."""
        return None

    def line(self, layout: type[Layout], points: int) -> Layout:
        """The ``points`` samples of ``layout`` as a structure on this boundary's axis (a circle where periodic)."""
        return layout(points)

    def refuses(self, layout: type[Layout]) -> str | None:
        """Why this boundary cannot sit on ``layout`` (``None``: it can)."""
        return None


@dataclass(frozen=True)
class Periodic(Boundary):
    """The functions are periodic: a Fourier series, sampled at ``i/P`` of a period."""

    name: ClassVar[str] = "periodic"
    periodic: ClassVar[bool] = True

    def line(self, layout: type[Layout], points: int) -> Layout:
        return Circle(points)

    def refuses(self, layout: type[Layout]) -> str | None:
        if issubclass(layout, PeriodicNodes):
            return None
        return (
            f"boundary periodic with layout {layout.name}: a periodic axis is sampled at i/P (its end is its start); "
            "declare layout periodic, or boundary free or zero"
        )


@dataclass(frozen=True)
class Zero(Boundary):
    """``u = 0`` at both ends: a Chebyshev series multiplied by ``1 - t²`` (two more terms), exactly."""

    name: ClassVar[str] = "zero"
    vanishes: ClassVar[bool] = True
    imposed: ClassVar[int] = 2

    def imposition(self, size: int) -> Tensor | None:
        """``B`` ``(size + 2, size)``: ``(1 - t²) Σ v_k T_k`` in coefficients (:func:`~instances.chebyshev.bubble`)."""
        return bubble(size)


@dataclass(frozen=True)
class Free(Boundary):
    """Nothing assumed at the ends: a Chebyshev series, its end values learned."""

    name: ClassVar[str] = "free"


#: the periodic boundary: a Fourier series
PERIODIC = Periodic()
#: the zero boundary: a Chebyshev series times ``1 - t²``, ``u = 0`` imposed at both ends
ZERO = Zero()
#: the free boundary: a Chebyshev series, the ends learned
FREE = Free()

#: the largest size an axis's end may have: past it, coordinates squared or divided overflow a float32 model
EXTENT_LIMIT = 1e30
#: the shortest an axis may be, absolutely and relative to its ends' size (its nodes must stay apart in float64)
EXTENT_SHORTEST, EXTENT_RESOLUTION = 1e-30, 1e-12

#: the layouts by name: the command line's words and what a checkpoint records
LAYOUTS: Mapping[str, type[Layout]] = {k.name: k for k in (Nodes, PeriodicNodes, Centres, ChebyshevNodes, LobattoNodes)}
#: the boundaries by name
BOUNDARIES: Mapping[str, Boundary] = {b.name: b for b in (PERIODIC, ZERO, FREE)}


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


def layout_named(name: object) -> type[Layout]:
    """The layout called ``name`` (a :class:`LayoutError` listing the names otherwise)."""
    found = LAYOUTS.get(name) if isinstance(name, str) else None
    if found is None:
        raise LayoutError(f"layout {name!r:.40}: must be one of {', '.join(LAYOUTS)}")
    return found


def boundary_named(name: object) -> Boundary:
    """The boundary called ``name`` (a :class:`LayoutError` listing the names otherwise)."""
    found = BOUNDARIES.get(name) if isinstance(name, str) else None
    if found is None:
        raise LayoutError(f"boundary {name!r:.40}: must be one of {', '.join(BOUNDARIES)}")
    return found


def _layout(value: object) -> type[Layout]:
    if isinstance(value, type) and issubclass(value, Layout) and value.name:
        return value
    return layout_named(value)


def _boundary(value: object, layout: type[Layout]) -> Boundary:
    if value is None:
        return PERIODIC if issubclass(layout, PeriodicNodes) else FREE
    return value if isinstance(value, Boundary) and value.name else boundary_named(value)


@dataclass(frozen=True, init=False)
class Axis:
    """One axis of a grid: where its samples sit, its extent ``[lo, hi]`` and its boundary.

    Attributes:
        layout: the samples' placement (a :class:`~instances.layouts.Layout` class).
        lo, hi: the axis's extent in the data's units (``lo < hi``); a periodic axis has period ``hi - lo``.
        boundary: what the model assumes at the ends.

    ``Axis(layout=Nodes, lo=0.0, hi=1.0, boundary=None)``: the layout and boundary as values or by name
    (``Axis("periodic", boundary="zero")``); no boundary: :data:`PERIODIC` for the periodic layout, else
    :data:`FREE`.

    Raises:
        LayoutError: an unknown name, an empty or infinite extent, or a boundary that cannot sit on the layout.
    """

    layout: type[Layout]
    lo: float
    hi: float
    boundary: Boundary

    def __init__(
        self,
        layout: type[Layout] | str = Nodes,
        lo: float = 0.0,
        hi: float = 1.0,
        boundary: Boundary | str | None = None,
    ) -> None:
        kind = _layout(layout)
        if (
            isinstance(lo, bool)
            or isinstance(hi, bool)
            or not isinstance(lo, int | float)
            or not isinstance(hi, int | float)
        ):
            raise LayoutError(f"extent [{lo!r:.20}, {hi!r:.20}]: need two numbers lo < hi")
        problem = extent_problem(lo, hi)
        if problem is not None:
            raise LayoutError(f"extent [{lo:g}, {hi:g}]: {problem}")
        bc = _boundary(boundary, kind)
        why = bc.refuses(kind)
        if why is not None:
            raise LayoutError(why)
        for name, value in (("layout", kind), ("lo", float(lo)), ("hi", float(hi)), ("boundary", bc)):
            object.__setattr__(self, name, value)

    @property
    def periodic(self) -> bool:
        """Whether the axis's functions are periodic (its boundary's)."""
        return self.boundary.periodic

    def describe(self) -> str:
        """``nodes (i/(P-1)) on [0, 1], boundary zero``."""
        return (
            f"{self.layout.name} ({self.layout.placement}) on [{self.lo:g}, {self.hi:g}], boundary {self.boundary.name}"
        )

    def smallest(self) -> int:
        """The fewest samples the layout can place (2 with both ends stored, else 1)."""
        return self.layout.least()

    def t(self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The samples' model coordinates ``t ∈ [-1, 1]`` (increasing): ``(points,)``."""
        return self.layout.t(points, dtype, device)

    def coordinates(
        self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> Tensor:
        """The samples' coordinates in the data's units, ``lo + (hi - lo) s``: ``(points,)``."""
        return (self.lo + (self.hi - self.lo) * self.layout.unit(points, device)).to(dtype)

    def to_t(self, x: Tensor) -> Tensor:
        """Coordinates in the data's units -> model coordinates ``t`` (not clipped: a periodic axis wraps)."""
        return -1 + 2 * (x - self.lo) / (self.hi - self.lo)

    def weights(
        self, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> Tensor:
        """Quadrature weights for ``∫_{-1}^{1} f(t) dt`` at :meth:`t`: ``(points,)``, summing to 2."""
        return self.layout.weights(points, dtype, device)

    def line(self, points: int) -> Layout:
        """The axis's ``points`` samples as a structure: positions at :meth:`t`, the layout's quadrature as its
        measure (attention over them is an integral, the same at any ``points``), periodic when the axis is."""
        return self.boundary.line(self.layout, points)

    def record(self) -> dict[str, Any]:
        """The axis as plain data (a checkpoint's record): ``{"layout", "lo", "hi", "boundary"}``, names as strings."""
        return {"layout": self.layout.name, "lo": self.lo, "hi": self.hi, "boundary": self.boundary.name}

    @classmethod
    def from_record(cls, record: object) -> Axis:
        """The inverse of :meth:`record` (a :class:`LayoutError` naming what is wrong)."""
        if not isinstance(record, Mapping) or set(record) != {"layout", "lo", "hi", "boundary"}:
            raise LayoutError(f"an axis record is {{layout, lo, hi, boundary}}, got {record!r:.80}")
        return cls(layout_named(record["layout"]), record["lo"], record["hi"], boundary_named(record["boundary"]))
