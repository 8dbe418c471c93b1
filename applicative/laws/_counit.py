"""Laws of ``Counit``: the counit is a linear functional, normalised by ``pure``, and Fubini holds::

    additivity      counit (a + b)      = counit a + counit b
    homogeneity     counit (c · a)      = c · counit a
    pure            counit (pure x)     = counit (pure 1) · x
    Fubini          counit (counit x)   = counit (fmap counit x)       x : S (V a), V (S a), S (S a)

``+`` and ``·`` are the ring's. For nested values ``S (S a)`` the inner
structure is ``s.unsqueeze_batch(-1)`` (its per-example data broadcasts over
the outer axis).
"""

from __future__ import annotations

from .._algebra import add, counit, fmap, mul, pure, scale
from .._data import unsqueeze_batch
from .._structure import Structure
from ._law import Case, Equation, Law


def _additivity(case: Case) -> Equation:
    axes = (case.s, case.vec(case.size("p")))
    a, b = case.value("a", axes), case.value("b", axes)
    return Equation(counit(add(a, b)), add(counit(a), counit(b)))


def _homogeneity(case: Case) -> Equation:
    a = case.value("a", (case.s, case.vec(case.size("p"))))
    c = case.scalar("c")
    return Equation(counit(scale(c, a)), scale(c, counit(a)))


def _pure(case: Case) -> Equation:
    x = case.inner("x", case.size("p"))
    one = x.with_tensor(case.ring.one(x.tensor))
    return Equation(counit(pure(case.s, x)), mul(counit(pure(case.s, one)), x))


def _fubini(case: Case, outer: Structure, inner: Structure) -> Equation:
    x = case.value("x", (outer, inner))
    return Equation(counit(counit(x)), counit(fmap(counit, x)))


def _fubini_sv(case: Case) -> Equation:
    return _fubini(case, case.s, case.vec(case.size("k")))


def _fubini_vs(case: Case) -> Equation:
    return _fubini(case, case.vec(case.size("k")), unsqueeze_batch(case.s, -1))


def _fubini_ss(case: Case) -> Equation:
    return _fubini(case, case.s, unsqueeze_batch(case.s, -1))


COUNIT_LAWS = (
    Law("Counit", "additivity", "counit (a + b) = counit a + counit b", _additivity),
    Law("Counit", "homogeneity", "counit (c · a) = c · counit a", _homogeneity),
    Law("Counit", "pure", "counit (pure x) = counit (pure 1) · x", _pure),
    Law("Counit", "Fubini S∘V", "counit (counit x) = counit (fmap counit x), x : S (V a)", _fubini_sv),
    Law("Counit", "Fubini V∘S", "counit (counit x) = counit (fmap counit x), x : V (S a)", _fubini_vs),
    Law("Counit", "Fubini S∘S", "counit (counit x) = counit (fmap counit x), x : S (S a)", _fubini_ss),
)
