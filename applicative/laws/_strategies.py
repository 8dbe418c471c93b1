"""Hypothesis strategies for structures, ring elements and :class:`~applicative.Field` values.

:class:`HypothesisDraw` implements the :class:`~applicative.laws.Draw` facade
over a hypothesis ``draw`` function; the exported strategies build on it, so a
structure's :class:`~applicative.laws.Arbitrary` is all a user writes to get
shrinking strategies for its values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import torch
from hypothesis import strategies as st
from torch import Tensor

from .._field import Field
from .._ring import REAL, Ring
from .._structure import Structure
from ._arbitrary import Arbitrary, Elements, Fixed, Pinned, check_size, elements_for

T = TypeVar("T")
DrawFn = Callable[[st.SearchStrategy[Any]], Any]


def element_strategy(elements: Elements) -> st.SearchStrategy[float]:
    """Scalars described by ``elements`` (specials drawn about one time in eight)."""
    base: st.SearchStrategy[float]
    if elements.integral:
        base = st.integers(math.ceil(elements.lo), math.floor(elements.hi)).map(float)
    else:
        base = st.floats(elements.lo, elements.hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    if not elements.specials:
        return base
    specials = st.sampled_from(elements.specials)
    return st.integers(0, 7).flatmap(lambda k: specials if k == 7 else base)


class HypothesisDraw:
    """The :class:`~applicative.laws.Draw` facade over a hypothesis ``draw`` function."""

    def __init__(self, draw: DrawFn) -> None:
        self._draw = draw

    def integers(self, lo: int, hi: int) -> int:
        return int(self._draw(st.integers(lo, hi)))

    def floats(self, lo: float, hi: float) -> float:
        return float(self._draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)))

    def booleans(self) -> bool:
        return bool(self._draw(st.booleans()))

    def choice(self, options: Sequence[T]) -> T:
        return self._draw(st.sampled_from(options))  # type: ignore[no-any-return]

    def permutation(self, n: int) -> list[int]:
        return list(self._draw(st.permutations(range(n))))

    def tensor(self, shape: tuple[int, ...], elements: Elements, dtype: torch.dtype) -> Tensor:
        check_size(shape)
        n = math.prod(shape)
        raw = self._draw(st.binary(min_size=n, max_size=n))  # one draw per tensor: fast, still shrinks
        return decode(raw, elements).to(dtype).reshape(shape)


def decode(raw: bytes, elements: Elements) -> Tensor:
    """Bytes to ring elements, so that a whole tensor is one hypothesis draw.

    Byte ``b`` maps, zig-zag, to ``0, +δ, -δ, +2δ, ...`` clamped to ``[lo, hi]``
    (so shrinking the bytes shrinks the values towards 0), with ``δ = 1`` for
    integral elements and ``(hi - lo) / 255`` otherwise; bytes ``>= 248`` are
    the ``specials`` when there are any.
    """
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.float64)
    k = np.where(b % 2 == 1, (b + 1) / 2, -b / 2)  # zig-zag: 0, 1, -1, 2, -2, ...
    step = 1.0 if elements.integral else (elements.hi - elements.lo) / 255
    v = np.clip(k * step, elements.lo, elements.hi) + 0.0  # + 0.0: no -0.0 in counterexamples
    if elements.specials:
        pick = np.array(elements.specials, dtype=np.float64)[(b.astype(np.int64) - 248) % len(elements.specials)]
        v = np.where(b >= 248, pick, v)
    return torch.from_numpy(v)


def arbitrary_of(target: object) -> Arbitrary[Any]:
    """The :class:`Arbitrary` the law checker uses for ``target`` (the one rule for code and command line).

    * an :class:`Arbitrary` object is used as it is; an :class:`Arbitrary` class is constructed;
    * a structure class with a registered arbitrary (an :class:`Arbitrary` subclass declaring
      ``kind = ThatClass``, imported) is drawn by it, and so is a structure *object* whose class or
      one of its bases has one, with the structure pinned to that object (:class:`Pinned`);
    * otherwise a sized structure stored at its positions with the counting measure (``Vector`` and
      its axes, object or class) is drawn at its size, and any other structure object is used as
      it is (:class:`Fixed`), its values drawn with the defaults.
    """
    from ._vector import VectorArbitrary

    if isinstance(target, Arbitrary):
        return target
    if isinstance(target, type) and issubclass(target, Arbitrary):
        return target()
    if isinstance(target, type) and issubclass(target, Structure):
        registered = Arbitrary.registered(target)
        if registered is not None:
            return _construct(registered, target)
    elif isinstance(target, Structure):
        registered = Arbitrary.registered(type(target), inherited=True)
        if registered is not None:
            return Pinned(_construct(registered, type(target)), target)
    vector_arbitrary = VectorArbitrary.of(target)
    if vector_arbitrary is not None:
        return vector_arbitrary
    if isinstance(target, Structure):
        return Fixed(target)
    raise TypeError(
        f"cannot check laws of {target!r}: pass a Structure object, a Vector subclass with a size, "
        "or an applicative.laws.Arbitrary"
    )


def _construct(registered: type[Arbitrary[Any]], kind: type[Structure]) -> Arbitrary[Any]:
    try:
        return registered()
    except TypeError as e:
        raise TypeError(
            f"the Arbitrary registered for {kind.__name__}, {registered.__name__}, needs constructor arguments "
            f"({e}); pass one: check_laws({registered.__name__}(...))"
        ) from None


def ring_elements(ring: Ring) -> Elements:
    """Default scalars for ``ring``: integer-valued floats (and its infinite zero) if the ring is exact."""
    zero = float(ring.zero(torch.zeros((), dtype=torch.float64)).item())
    return elements_for(ring.exact, zero)


def structures(target: object) -> st.SearchStrategy[Structure]:
    """Structures drawn by ``target``'s arbitrary (see :func:`arbitrary_of`)."""
    arb = arbitrary_of(target)
    return st.composite(lambda draw: arb.structure(HypothesisDraw(draw)))()


def fields(
    target: object,
    inner: tuple[Structure, ...] = (),
    ring: Ring = REAL,
    elements: Elements | None = None,
    degree: int | None = None,
) -> st.SearchStrategy[Field[*tuple[Any, ...]]]:
    """Values ``Field[S, *inner]`` on structures ``S`` drawn by ``target``'s arbitrary.

    Args:
        target: a structure object, a ``Vector`` subclass, or an :class:`Arbitrary`.
        inner: structures of the inner axes (``(Vector(3),)`` for a vector-valued field).
        ring: the field's scalars; ``elements`` defaults to :func:`ring_elements`.
        degree: passed to :meth:`Arbitrary.value` (``None``: no subspace restriction).
    """
    arb = arbitrary_of(target)
    els = elements if elements is not None else ring_elements(ring)

    @st.composite
    def draw_field(draw: DrawFn) -> Field[*tuple[Any, ...]]:
        d = HypothesisDraw(draw)
        s = arb.structure(d)
        axes = (s, *inner)
        t = arb.value(axes, d, arb.batch_shape(s), els, degree)
        return Field(t, axes, ring)

    return draw_field()
