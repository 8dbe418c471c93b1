"""Laws of the derived algebra: every kernel equals its generic definition, and linear algebra::

    pure/fmap/zip_with/counit   an override  = the derived kernel (from positions + measure)
    contract            s.contract(a, b)        = counit (zip_with mul a b)
    affine              s.affine(x, W, b)       = counit (zip_with mul x w) + b, for each row w
    softmax             softmax(s, x)           = fmap exp x / counit (fmap exp x)      (real ring)
    layer_norm          layer_norm(s, x, w, b)  = its definition by counit, pure, zip_with (real ring)
    mass                mass(s, x)              = counit (pure 1)
    factor              (a L)(b L)ᵀ             = contract(a, bᵀ)                      (real ring)
    mul_mm associative  (a b) c                 = a (b c)
    mul_mv/mul_mm       mul_mv (mul_mm a b) v   = mul_mv a (mul_mv b v)
    mul (pointwise)     (a * b) * c = a * (b * c),   a * (b + c) = a * b + a * c
    dot bilinear        dot (a + b) c = dot a c + dot b c,   dot (k · a) b = k · dot a b
    dot symmetric       dot a b                 = dot b a                          (commutative rings)

The kernels a structure runs -- derived from its contract in
:mod:`applicative._kernels`, or its own overrides of the methods ``pure``,
``fmap``, ``zip_with``, ``counit``, ``contract`` and ``affine`` (``softmax``,
``layer_norm`` and ``mass`` are free functions built on them) -- are compared with the
generic definitions written from ``pure``, ``zip_with``, ``fmap`` and
``counit`` alone, so a mistake in a derived kernel fails these laws for every
structure. Values that the laws multiply pointwise are drawn with ``degree`` =
the number of factors (a truncated series is checked on the subspace where
products are exact).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import _kernels as kernels
from .._algebra import add, dot, mul, mul_mm, mul_mv, scale
from .._field import Field
from .._ring import REAL
from .._structure import Structure
from .._tensor import broadcast_shape
from ._law import Case, Equation, Law, real_only


def _overridden(name: str) -> Callable[[Case], str | None]:
    def applies(case: Case) -> str | None:
        if getattr(type(case.s), name) is getattr(Structure, name):
            return f"{type(case.s).__name__} does not override {name} (the derived kernel is used)"
        return None

    return applies


def _pure(case: Case) -> Equation:
    x = case.inner("x", case.size("p"))
    t = case.s.pure(x.tensor, -2)
    axes = (case.s, case.vec(x.structures[0].size))
    return Equation(Field(t, axes, case.ring), Field(kernels.pure(case.s, x.tensor, -2), axes, case.ring))


def _fmap(case: Case) -> Equation:
    f = case.function("f")
    x = case.value("x", (case.s, case.vec(case.size("p"))), f.degree)
    lhs, rhs = case.s.fmap(f.fn, x.tensor, -2), kernels.fmap(case.s, f.fn, x.tensor, -2)
    return Equation(x.with_tensor(lhs), x.with_tensor(rhs))


def _zip_with(case: Case) -> Equation:
    axes = (case.s, case.vec(case.size("p")))
    a, b = case.value("a", axes, 2), case.value("b", axes, 2)
    mul_ = case.ring.mul
    return Equation(
        a.with_tensor(case.s.zip_with(mul_, a.tensor, b.tensor, -2)),
        a.with_tensor(kernels.zip_with(case.s, mul_, a.tensor, b.tensor, -2)),
    )


def _counit(case: Case) -> Equation:
    x = case.value("x", (case.s, case.vec(case.size("p"))))
    inner = x.axes[1:]
    return Equation(
        Field(case.s.counit(x.tensor, -2, case.ring), inner, case.ring),
        Field(kernels.counit(case.s, x.tensor, -2, case.ring), inner, case.ring),
    )


def _contract(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.s, case.vec(k)), 2)
    fused = case.s.contract(a.tensor, b.tensor, case.ring)
    generic = kernels.generic_contract(case.s, a.tensor, b.tensor, case.ring)
    axes = (case.vec(m), case.vec(k))
    return Equation(Field(fused, axes, case.ring), Field(generic, axes, case.ring))


def _affine(case: Case) -> Equation:
    m = case.size("m")
    x = case.value("x", (case.s,), 2)
    w = case.raw("W", (case.vec(m), case.s), 2)
    b = case.raw("bias", (case.vec(m),))
    fused = case.s.affine(x.tensor, w, b, case.ring)
    generic = kernels.generic_affine(case.s, x.tensor, w, b, case.ring)
    return Equation(Field(fused, (case.vec(m),), case.ring), Field(generic, (case.vec(m),), case.ring))


def _softmax(case: Case) -> Equation:
    x = case.value("x", (case.vec(case.size("m")), case.s), None)
    return Equation(
        x.with_tensor(kernels.softmax(case.s, x.tensor, -1)),
        x.with_tensor(kernels.generic_softmax(case.s, x.tensor, -1)),
    )


def _layer_norm(case: Case) -> Equation:
    x = case.value("x", (case.vec(case.size("m")), case.s), 2)  # (x - mean)² and x · weight: products of 2
    w = case.unbatched("weight", (case.s,), 2)
    b = case.unbatched("bias", (case.s,))
    fused = kernels.layer_norm(case.s, x.tensor, w.tensor, b.tensor, 1e-5)
    generic = kernels.generic_layer_norm(case.s, x.tensor, w.tensor, b.tensor, 1e-5)
    return Equation(x.with_tensor(fused), x.with_tensor(generic))


def _mass(case: Case) -> Equation:
    x = case.value("x", (case.s,))
    m = kernels.mass(case.s, x.tensor)
    g = kernels.generic_mass(case.s, x.tensor)
    return Equation(Field(m.expand(broadcast_shape(m.shape, g.shape)), (), REAL), Field(g, (), REAL))


def _factor(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.vec(k), case.s), 2)
    fa, fb = kernels.factor(case.s, a.tensor), kernels.factor(case.s, b.tensor)
    axes = (case.vec(m), case.vec(k))
    lhs = Field(fa @ fb.transpose(-1, -2), axes, REAL)
    return Equation(lhs, Field(case.s.contract(a.tensor, b.tensor.transpose(-1, -2), REAL), axes, REAL))


def _mm_assoc_contract_first(case: Case) -> Equation:
    m, k, n = case.size("m"), case.size("k"), case.size("n")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.s, case.vec(k)), 2)
    c = case.value("c", (case.vec(k), case.vec(n)))
    return Equation(mul_mm(mul_mm(a, b), c), mul_mm(a, mul_mm(b, c)))


def _mm_assoc_middle(case: Case) -> Equation:
    m, k, n = case.size("m"), case.size("k"), case.size("n")
    a = case.value("a", (case.vec(m), case.vec(k)))
    b = case.value("b", (case.vec(k), case.s), 2)
    c = case.value("c", (case.s, case.vec(n)), 2)
    return Equation(mul_mm(mul_mm(a, b), c), mul_mm(a, mul_mm(b, c)))


def _mv_mm(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.s, case.vec(k)), 2)
    v = case.value("v", (case.vec(k),))
    return Equation(mul_mv(mul_mm(a, b), v), mul_mv(a, mul_mv(b, v)))


def _mv_mm_middle(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.vec(k)))
    b = case.value("b", (case.vec(k), case.s), 2)
    v = case.value("v", (case.s,), 2)
    return Equation(mul_mv(mul_mm(a, b), v), mul_mv(a, mul_mv(b, v)))


def _mul_associative(case: Case) -> Equation:
    axes = (case.s, case.vec(case.size("p")))
    a, b, c = case.value("a", axes, 3), case.value("b", axes, 3), case.value("c", axes, 3)
    return Equation(mul(mul(a, b), c), mul(a, mul(b, c)))


def _mul_distributive(case: Case) -> Equation:
    axes = (case.s, case.vec(case.size("p")))
    a, b, c = case.value("a", axes, 2), case.value("b", axes, 2), case.value("c", axes, 2)
    return Equation(mul(a, add(b, c)), add(mul(a, b), mul(a, c)))


def _dot_additive(case: Case) -> Equation:
    axes = (case.vec(case.size("m")), case.s)
    a, b, c = case.value("a", axes, 2), case.value("b", axes, 2), case.value("c", axes, 2)
    return Equation(dot(add(a, b), c), add(dot(a, c), dot(b, c)))


def _dot_homogeneous(case: Case) -> Equation:
    axes = (case.vec(case.size("m")), case.s)
    a, b = case.value("a", axes, 2), case.value("b", axes, 2)
    k = case.scalar("k")
    return Equation(dot(scale(k, a), b), scale(k, dot(a, b)))


def _dot_symmetric(case: Case) -> Equation:
    axes = (case.vec(case.size("m")), case.s)
    a, b = case.value("a", axes, 2), case.value("b", axes, 2)
    return Equation(dot(a, b), dot(b, a))


def _commutative(case: Case) -> str | None:
    return None if case.commutative else "declared non-commutative (commutative=False)"


FUSION_LAWS = (
    Law("Fusion", "pure = derived", "s.pure x = the derived pure", _pure, _overridden("pure")),
    Law("Fusion", "fmap = derived", "s.fmap f x = the derived fmap", _fmap, _overridden("fmap")),
    Law("Fusion", "zip_with = derived", "s.zip_with f a b = the derived zip_with", _zip_with, _overridden("zip_with")),
    Law("Fusion", "counit = derived", "s.counit x = Σ w ⊗ (positions of x)", _counit, _overridden("counit")),
    Law("Fusion", "contract", "s.contract(a, b) = counit (zip_with mul a b)", _contract),
    Law("Fusion", "affine", "s.affine(x, W, b) = counit (zip_with mul x w) + b", _affine),
    Law("Fusion", "softmax", "softmax(s, x) = fmap exp x / counit (fmap exp x)", _softmax, real_only),
    Law("Fusion", "layer_norm", "layer_norm(s, x, w, b) = its generic definition", _layer_norm, real_only),
    Law("Fusion", "mass", "mass(s, x) = counit (pure 1)", _mass),
    Law("Fusion", "factor", "(a L)(b L)ᵀ = contract(a, bᵀ)", _factor, real_only),
    Law("Algebra", "mul_mm associative (S contracted)", "(a b) c = a (b c), a : V S", _mm_assoc_contract_first),
    Law("Algebra", "mul_mm associative (S in the middle)", "(a b) c = a (b c), b : V S", _mm_assoc_middle),
    Law("Algebra", "mul_mv of mul_mm (S contracted)", "mul_mv (mul_mm a b) v = mul_mv a (mul_mv b v), a : V S", _mv_mm),
    Law(
        "Algebra",
        "mul_mv of mul_mm (S in the middle)",
        "mul_mv (mul_mm a b) v = mul_mv a (mul_mv b v), v : S",
        _mv_mm_middle,
    ),
    Law("Algebra", "mul associative (pointwise)", "(a * b) * c = a * (b * c)", _mul_associative),
    Law("Algebra", "mul distributive (pointwise)", "a * (b + c) = a * b + a * c", _mul_distributive),
    Law("Algebra", "dot additive", "dot (a + b) c = dot a c + dot b c", _dot_additive),
    Law("Algebra", "dot homogeneous", "dot (k · a) b = k · dot a b", _dot_homogeneous),
    Law("Algebra", "dot symmetric", "dot a b = dot b a", _dot_symmetric, _commutative),
)
