"""How the law checker draws products of structures (:class:`PairsArbitrary`).

A drawn structure is ``Pairs(a, b)`` with ``a`` drawn by one factor's arbitrary
and ``b`` by the other's. Values are drawn on the factors' axes side by side
(``(..., |a|, |b|, ...)``, so each factor restricts them to its exact subspace,
e.g. a Chebyshev factor's degree) and flattened. Equality observes each factor
(padding made canonical); the isomorphism for the attention laws is the product
of the factors' isomorphisms (``(i, j) ↦ (σ(i), τ(j))``).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from .._kernels import batch_shape
from .._pairs import Pairs
from .._structure import Structure
from .._tensor import unflatten
from ._arbitrary import Arbitrary, Draw, Elements, Isomorphism, Tolerance

_ONES = Elements(1.0, 1.0)


def _expand(axes: tuple[Structure, ...]) -> tuple[Structure, ...]:
    return tuple(f for s in axes for f in ((s.a, s.b) if isinstance(s, Pairs) else (s,)))


def _flatten(t: Tensor, axes: tuple[Structure, ...]) -> Tensor:
    """``t`` with typed ``_expand(axes)`` last -> each pair of factor axes flattened into one."""
    d = t.ndim - len(_expand(axes))
    for s in axes:
        if isinstance(s, Pairs):
            t = t.flatten(d, d + 1)
        d += 1
    return t


class PairsArbitrary(Arbitrary[Pairs]):
    """Draws ``Pairs(a, b)`` with ``a`` from ``first`` and ``b`` from ``second`` (default: ``first`` again)."""

    def __init__(self, first: Arbitrary[Any], second: Arbitrary[Any] | None = None) -> None:
        self.first, self.second = first, second if second is not None else first

    def structure(self, draw: Draw) -> Pairs:
        return Pairs(self.first.structure(draw), self.second.structure(draw))

    def batch_shape(self, s: Pairs) -> tuple[int, ...]:
        return self.first.batch_shape(s.a) if batch_shape(s.a) else self.second.batch_shape(s.b)

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        wide = _expand(axes)
        t = self.first.value(wide, draw, batch, elements, degree)
        if self.second is not self.first:  # the second factor's subspace as a mask of ones
            t = t * (self.second.value(wide, draw, batch, _ONES, degree) != 0)
        return _flatten(t, axes)

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        if not isinstance(s, Pairs):
            return self.first.subspace(s, degree)
        parts = [self.first.subspace(s.a, degree), self.second.subspace(s.b, degree)]
        said = [p for p in parts if p]
        return "; ".join(said) if said else None

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, Pairs):
            return x
        d = dim % x.ndim
        t = unflatten(x, d, (s.a.size, s.b.size))
        t = self.second.observe(s.b, self.first.observe(s.a, t, d), d + 1)
        return t.flatten(d, d + 1)

    def isomorphism(self, s: Pairs, draw: Draw) -> Isomorphism | None:
        ia, ib = self.first.isomorphism(s.a, draw), self.second.isomorphism(s.b, draw)
        if ia is None and ib is None:
            return None

        def apply(x: Tensor, dim: int) -> Tensor:
            d = dim % x.ndim
            t = unflatten(x, d, (s.a.size, s.b.size))
            if ia is not None:
                t = ia.apply(t, d)
            if ib is not None:
                t = ib.apply(t, d + 1)
            return t.flatten(d, d + 1)

        target = Pairs(s.a if ia is None else ia.target, s.b if ib is None else ib.target)
        said = " × ".join(i.description for i in (ia, ib) if i is not None)
        return Isomorphism(s, target, apply, f"factor by factor: {said}")

    def tolerance(self, s: Structure, default: Tolerance) -> Tolerance:
        if not isinstance(s, Pairs):
            return default
        return self.first.tolerance(s.a, self.second.tolerance(s.b, default))

    def __repr__(self) -> str:
        return f"PairsArbitrary({self.first!r}, {self.second!r})"
