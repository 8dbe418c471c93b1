"""How the law checker draws structures and values: the :class:`Arbitrary` protocol.

Laws quantify over structures and over values on them. A structure kind says
how to draw both -- and how two values are compared -- by an
:class:`Arbitrary`. The checker hands the arbitrary a :class:`Draw`, a small
facade over hypothesis (so that drawing shrinks), which keeps structure
modules free of hypothesis imports.

Values are tensors of ring elements; :class:`Elements` says which scalars to
draw for a ring (integer-valued floats for the exact tropical rings, so that
their laws can be checked exactly). :class:`Tolerance` is how far two sides of
an equation may be apart, ``|lhs - rhs| <= atol + rtol |rhs|`` elementwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import torch
from torch import Tensor

from .._errors import StructureError
from .._kernels import cleared
from .._structure import Structure

S = TypeVar("S", bound=Structure)
T = TypeVar("T")


#: the most values one drawn tensor may hold: a law compares a few such values, and a structure past it (a
#: ``Vector`` of size 10^12) would hold the checker for hours and all the machine's memory
MAX_VALUES = 1 << 22


class SizeError(StructureError):
    """A value the law checker was asked to draw is larger than ``MAX_VALUES``: check a smaller instance."""


def check_size(shape: tuple[int, ...]) -> None:
    """Refuse a value of ``shape`` past ``MAX_VALUES`` (a :class:`SizeError`) before anything is drawn."""
    n = math.prod(shape)
    if n > MAX_VALUES:
        raise SizeError(
            f"a value of shape {shape} holds {n:,} numbers, past the {MAX_VALUES:,} the law checker draws; the laws "
            "do not depend on the size: check a smaller instance"
        )


@dataclass(frozen=True)
class Elements:
    """Which ring elements to draw: floats in ``[lo, hi]``, optionally integral, plus ``specials``.

    ``specials`` are drawn occasionally at any position (the tropical zero ``±inf``).
    """

    lo: float = -4.0
    hi: float = 4.0
    integral: bool = False
    specials: tuple[float, ...] = ()


@dataclass(frozen=True)
class Tolerance:
    """Elementwise ``|lhs - rhs| <= atol + rtol * |rhs|``; ``EXACT`` demands equality."""

    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0.0 and self.atol == 0.0

    def __str__(self) -> str:
        return "exact" if self.exact else f"rtol={self.rtol:g}, atol={self.atol:g}"


EXACT = Tolerance(0.0, 0.0)


class Draw(Protocol):
    """What an :class:`Arbitrary` may draw from (every draw shrinks towards small/simple)."""

    def integers(self, lo: int, hi: int) -> int:
        """An integer in ``[lo, hi]`` (shrinks towards ``lo``)."""
        ...

    def floats(self, lo: float, hi: float) -> float:
        """A finite float in ``[lo, hi]``."""
        ...

    def booleans(self) -> bool:
        """``True`` or ``False`` (shrinks towards ``False``)."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options`` (shrinks towards the first)."""
        ...

    def permutation(self, n: int) -> list[int]:
        """A permutation of ``range(n)`` (shrinks towards the identity)."""
        ...

    def tensor(self, shape: tuple[int, ...], elements: Elements, dtype: torch.dtype) -> Tensor:
        """A tensor of ``shape`` with entries drawn from ``elements``."""
        ...


@dataclass(frozen=True)
class Isomorphism:
    """A structure isomorphism ``source -> target`` acting on values along one axis.

    ``apply(x, dim)`` carries a value on ``source`` (axis ``dim`` of ``x``) to the
    corresponding value on ``target``; it must commute with ``pure``, ``zip_with``
    and preserve the counit (a permutation of vector positions; a permutation of
    outcomes together with their probabilities; ``x -> -x`` on Chebyshev series).
    """

    source: Structure
    target: Structure
    apply: Callable[[Tensor, int], Tensor]
    description: str


class Arbitrary(Generic[S]):
    """How to draw structures of one kind and values on them, and how to compare values.

    Subclass it next to your structure and override :meth:`structure`; the other
    hooks have defaults that fit a structure whose values are stored at their
    positions and which pairs only with itself.
    """

    #: the structure class this arbitrary draws (how ``python -m applicative.laws MODULE:Class`` finds it)
    kind: type[Structure] | None = None

    _registry: ClassVar[dict[type[Structure], type[Arbitrary[Any]]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if isinstance(kind, type):
            Arbitrary._registry[kind] = cls

    @staticmethod
    def registered(kind: type[Structure], inherited: bool = False) -> type[Arbitrary[Any]] | None:
        """The arbitrary class declared for the structure class ``kind`` (``kind = ...``), if one was imported.

        With ``inherited``, the one declared for the nearest base class of ``kind`` that has one (a
        nominal axis ``class Modes(Chebyshev): size = 8`` is drawn by ``ChebyshevArbitrary``).
        """
        if not inherited:
            return Arbitrary._registry.get(kind)
        return next((Arbitrary._registry[c] for c in kind.__mro__ if c in Arbitrary._registry), None)

    def structure(self, draw: Draw) -> S:
        """Draw one structure (with its per-example data, if it carries any)."""
        raise NotImplementedError(f"{type(self).__name__} must implement structure(draw)")

    def partner(self, s: S, draw: Draw) -> Structure:
        """Draw a structure that a value on ``s`` may be paired with (``s`` itself by default).

        Trees return any tree with the same batch shape (pairing takes the
        common refinement).
        """
        return s

    def unit(self, s: S, draw: Draw) -> Structure:
        """The structure ``pure`` builds in the unit laws, ``pair (pure x) b`` with ``b`` on ``s``.

        ``s`` itself by default (a representable structure: ``pure`` is a
        constant on the same index set). A tree returns the one-leaf tree (with
        ``s``'s batch shape); the design source's zip distribution returns its
        one-outcome distribution -- which is exactly why it is unlawful.
        """
        return s

    def batch_shape(self, s: S) -> tuple[int, ...]:
        """Leading batch shape of values drawn on ``s`` (must broadcast with per-example data)."""
        return (2,)

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        """Draw the tensor of a value with typed ``axes`` (some yours, some vectors) after ``batch``.

        Shape ``(*batch, *(a.size for a in axes))``, dtype float64. ``degree``
        bounds how many values the law multiplies together pointwise (``1``:
        the law is linear in this value; ``None``: arbitrary nonlinear functions
        are applied). A structure whose products are truncated (a series) draws
        from the subspace on which the law is exact for that degree and says so
        in :meth:`subspace`. The default ignores ``degree``.
        """
        shape = (*batch, *(a.size for a in axes))
        return draw.tensor(shape, elements, torch.float64)

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        """Describe the subspace :meth:`value` draws from for ``degree`` (``None``: everything)."""
        return None

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        """What equality compares for a value of ``s`` along axis ``dim`` (default: the tensor with its positions
        of weight zero -- padding, impossible outcomes -- set to ``0``, as the derived kernels select them out).

        Called for every axis of a compared value; return ``x`` unchanged for
        structures that are not yours. Other unobservable positions should
        be mapped to a canonical value here.
        """
        return cleared(s, x, dim)

    def isomorphism(self, s: S, draw: Draw) -> Isomorphism | None:
        """Draw an isomorphism out of ``s`` for the attention-equivariance laws (``None``: none known).

        Without one those laws report n/a. Declare the symmetries your structure has; for a
        periodic grid, a cyclic shift (it keeps the measure, so attention commutes with it)::

            def isomorphism(self, s, draw):
                k = draw.integers(0, s.size - 1)
                return Isomorphism(s, s, lambda x, dim: torch.roll(x, k, dim), f"shift by {k}")

        ``apply(x, dim)`` moves a value along axis ``dim``; ``source`` and ``target`` may differ
        (a permutation of outcomes carries their probabilities to a new distribution).
        """
        return None

    def tolerance(self, s: Structure, default: Tolerance) -> Tolerance:
        """The tolerance for laws on ``s`` (default: the ring's; loosen it for a truncated basis)."""
        return default

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, repr=False)
class Fixed(Arbitrary[Structure]):
    """The arbitrary of one given structure object: always that structure, pairing only with itself."""

    fixed: Structure

    def structure(self, draw: Draw) -> Structure:
        return self.fixed

    def __repr__(self) -> str:
        return f"Fixed({self.fixed!r})"


class Pinned(Arbitrary[Structure]):
    """A registered arbitrary with its structure pinned to one object: ``check_laws(Chebyshev(7))``.

    Every hook but :meth:`structure` is the registered arbitrary's: how values are drawn (the exact
    subspace of a truncated series), compared, paired, moved by an isomorphism, and the tolerance.
    """

    def __init__(self, inner: Arbitrary[Any], fixed: Structure) -> None:
        self.inner = inner
        self.fixed = fixed

    def structure(self, draw: Draw) -> Structure:
        return self.fixed

    def partner(self, s: Structure, draw: Draw) -> Structure:
        return self.inner.partner(s, draw)

    def unit(self, s: Structure, draw: Draw) -> Structure:
        return self.inner.unit(s, draw)

    def batch_shape(self, s: Structure) -> tuple[int, ...]:
        return self.inner.batch_shape(s)

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        return self.inner.value(axes, draw, batch, elements, degree)

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        return self.inner.subspace(s, degree)

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        return self.inner.observe(s, x, dim)

    def isomorphism(self, s: Structure, draw: Draw) -> Isomorphism | None:
        return self.inner.isomorphism(s, draw)

    def tolerance(self, s: Structure, default: Tolerance) -> Tolerance:
        return self.inner.tolerance(s, default)

    def __repr__(self) -> str:
        return f"{self.inner!r} at {self.fixed!r}"


def elements_for(ring_exact: bool, zero: float) -> Elements:
    """Default elements: integral floats (plus an infinite zero) for exact rings, ``[-4, 4]`` otherwise."""
    if ring_exact:
        return Elements(-8.0, 8.0, integral=True, specials=(zero,) if math.isinf(zero) else ())
    return Elements()
