"""Laws of ``Functor`` and ``Applicative`` (monoidal form), with ``pair`` as concatenation.

A value of type ``a`` is a field with inner axis ``Vector(p)``; ``a × b`` is
``R^(p+q)`` and ``pair a b = zip_with (++) a b``, so the associator and the
unitors are identities and both sides compare directly::

    identity        fmap id x                      = x
    composition     fmap (g . f) x                 = fmap g (fmap f x)
    homomorphism    fmap f (pure x)                = pure (f x)
    naturality      pair (fmap f a) (fmap g b)     = fmap (f × g) (pair a b)
    left unit       pair (pure x) b                = fmap (x,·) b
    right unit      pair a (pure x)                = fmap (·,x) a
    associativity   pair (pair a b) c              = pair a (pair b c)
    symmetry        pair a b                       = fmap swap (pair b a)     (commutative structures)

``b`` and ``c`` are on a *partner* structure drawn by the arbitrary, so
pairing exercises ``join``; in the unit laws ``pure`` builds the arbitrary's
*unit* structure (``s`` itself for representable structures, the one-leaf
tree for trees).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .._algebra import fmap, pure, zip_with
from .._field import Field
from .._tensor import broadcast_shape
from ._law import AnyField, Case, Equation, Law, compose_degree


def _cat(u: Tensor, v: Tensor) -> Tensor:
    shape = broadcast_shape(u.shape[:-1], v.shape[:-1])
    return torch.cat([u.expand(*shape, u.shape[-1]), v.expand(*shape, v.shape[-1])], -1)


def pair(case: Case, a: AnyField, b: AnyField) -> AnyField:
    """``pair a b`` for values with inner axes ``Vector(p)``, ``Vector(q)``: ``Vector(p + q)`` inside."""
    p, q = a.structures[-1].size, b.structures[-1].size
    inner = (case.vec(p + q),)
    return zip_with(lambda u, v: Field(_cat(u.tensor, v.tensor), inner, u.ring), a, b)


def _lift(case: Case, fn: Callable[[Tensor], Tensor], p: int) -> Callable[[AnyField], AnyField]:
    inner = (case.vec(p),)
    return lambda u: Field(fn(u.tensor), inner, u.ring)


def _identity(case: Case) -> Equation:
    x = case.value("x", (case.s, case.vec(case.size("p"))))
    return Equation(fmap(lambda u: u, x), x)


def _composition(case: Case) -> Equation:
    f, g = case.function("f"), case.function("g")
    p = case.size("p")
    x = case.value("x", (case.s, case.vec(p)), compose_degree(f.degree, g.degree))
    lhs = fmap(lambda u: g.on(f.on(u)), x)
    rhs = fmap(g.on, fmap(f.on, x))
    return Equation(lhs, rhs)


def _homomorphism(case: Case) -> Equation:
    f = case.function("f")
    x = case.inner("x", case.size("p"), f.degree)
    return Equation(fmap(f.on, pure(case.s, x)), pure(case.s, f.on(x)))


def _naturality(case: Case) -> Equation:
    f, g = case.function("f"), case.function("g")
    p, q = case.size("p"), case.size("q")
    a = case.value("a", (case.s, case.vec(p)), f.degree)
    b = case.value("b", (case.partner(), case.vec(q)), g.degree)
    lhs = pair(case, fmap(f.on, a), fmap(g.on, b))
    fg = _lift(case, lambda t: _cat(f.fn(t[..., :p]), g.fn(t[..., p:])), p + q)
    return Equation(lhs, fmap(fg, pair(case, a, b)))


def _left_unit(case: Case) -> Equation:
    p, q = case.size("p"), case.size("q")
    x = case.inner("x", p)
    t = case.unit()
    b = case.value("b", (case.s, case.vec(q)))
    x_row = x.tensor.unsqueeze(-2)  # (*batch, 1, p): broadcasts over b's outer positions
    return Equation(pair(case, pure(t, x), b), fmap(_lift(case, lambda v: _cat(x_row, v), p + q), b))


def _right_unit(case: Case) -> Equation:
    p, q = case.size("p"), case.size("q")
    a = case.value("a", (case.s, case.vec(p)))
    x = case.inner("x", q)
    t = case.unit()
    x_row = x.tensor.unsqueeze(-2)
    return Equation(pair(case, a, pure(t, x)), fmap(_lift(case, lambda v: _cat(v, x_row), p + q), a))


def _associativity(case: Case) -> Equation:
    p, q, r = case.size("p"), case.size("q"), case.size("r")
    a = case.value("a", (case.s, case.vec(p)))
    b = case.value("b", (case.partner(), case.vec(q)))
    c = case.value("c", (case.partner(), case.vec(r)))
    return Equation(pair(case, pair(case, a, b), c), pair(case, a, pair(case, b, c)))


def _symmetry(case: Case) -> Equation:
    p, q = case.size("p"), case.size("q")
    a = case.value("a", (case.s, case.vec(p)))
    b = case.value("b", (case.partner(), case.vec(q)))
    swap = _lift(case, lambda t: _cat(t[..., q:], t[..., :q]), p + q)
    return Equation(pair(case, a, b), fmap(swap, pair(case, b, a)))


def _commutative(case: Case) -> str | None:
    return None if case.commutative else "declared non-commutative (commutative=False)"


FUNCTOR_LAWS = (
    Law("Functor", "identity", "fmap id x = x", _identity),
    Law("Functor", "composition", "fmap (g . f) x = fmap g (fmap f x)", _composition),
)

APPLICATIVE_LAWS = (
    Law("Applicative", "homomorphism", "fmap f (pure x) = pure (f x)", _homomorphism),
    Law("Applicative", "naturality", "pair (fmap f a) (fmap g b) = fmap (f × g) (pair a b)", _naturality),
    Law("Applicative", "left unit", "pair (pure x) b = fmap (x,·) b", _left_unit),
    Law("Applicative", "right unit", "pair a (pure x) = fmap (·,x) a", _right_unit),
    Law("Applicative", "associativity", "pair (pair a b) c = pair a (pair b c)", _associativity),
    Law("Applicative", "symmetry", "pair a b = fmap swap (pair b a)", _symmetry, _commutative),
)
