"""Laws of the derived algebra: fused kernels equal their generic definitions, and linear algebra::

    contract            s.contract(a, b)        = Structure.contract(s, a, b)     (generic: counit (zip_with mul))
    affine              s.affine(x, W, b)       = Structure.affine(s, x, W, b)
    softmax             s.softmax(x)            = Structure.softmax(s, x)         (real ring)
    layer_norm          s.layer_norm(x, w, b)   = Structure.layer_norm(s, x, w, b) (real ring)
    mass                s.mass(x)               = counit (pure 1)
    sdpa_factor         (a L)(b L)ᵀ             = contract(a, bᵀ)                 (real ring)
    sdpa_log_measure    Σ exp(log w) · x        = counit x                         (real ring)
    mul_mm associative  (a b) c                 = a (b c)
    mul_mv/mul_mm       mul_mv (mul_mm a b) v   = mul_mv a (mul_mv b v)
    mul (pointwise)     (a * b) * c = a * (b * c),   a * (b + c) = a * b + a * c
    dot bilinear        dot (a + b) c = dot a c + dot b c,   dot (k · a) b = k · dot a b
    dot symmetric       dot a b                 = dot b a                          (commutative rings)

A fused-kernel law applies only where the structure overrides the kernel
(otherwise it is the generic definition and the report says so). Values that
the laws multiply pointwise are drawn with ``degree`` = the number of factors
(so a truncated series is checked on the subspace where products are exact).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._algebra import add, dot, mul, mul_mm, mul_mv, scale
from .._field import Field
from .._ring import REAL
from .._structure import Structure
from ._law import Case, Equation, Law, real_only


def _overridden(name: str, need_real: bool = False) -> Callable[[Case], str | None]:
    def applies(case: Case) -> str | None:
        if need_real and (why := real_only(case)) is not None:
            return why
        if getattr(type(case.s), name) is getattr(Structure, name):
            return f"{type(case.s).__name__} does not override {name} (the generic definition is used)"
        return None

    return applies


def _contract(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.s, case.vec(k)), 2)
    fused = case.s.contract(a.tensor, b.tensor, case.ring)
    generic = Structure.contract(case.s, a.tensor, b.tensor, case.ring)
    axes = (case.vec(m), case.vec(k))
    return Equation(Field(fused, axes, case.ring), Field(generic, axes, case.ring))


def _affine(case: Case) -> Equation:
    m = case.size("m")
    x = case.value("x", (case.s,), 2)
    w = case.raw("W", (case.vec(m), case.s), 2)
    b = case.raw("bias", (case.vec(m),))
    fused = case.s.affine(x.tensor, w, b, case.ring)
    generic = Structure.affine(case.s, x.tensor, w, b, case.ring)
    return Equation(Field(fused, (case.vec(m),), case.ring), Field(generic, (case.vec(m),), case.ring))


def _softmax(case: Case) -> Equation:
    x = case.value("x", (case.vec(case.size("m")), case.s), None)
    return Equation(x.with_tensor(case.s.softmax(x.tensor, -1)), x.with_tensor(Structure.softmax(case.s, x.tensor, -1)))


def _layer_norm(case: Case) -> Equation:
    x = case.value("x", (case.vec(case.size("m")), case.s), 2)  # (x - mean)² and x · weight: products of 2
    w = case.unbatched("weight", (case.s,), 2)
    b = case.unbatched("bias", (case.s,))
    fused = case.s.layer_norm(x.tensor, w.tensor, b.tensor, 1e-5)
    return Equation(
        x.with_tensor(fused), x.with_tensor(Structure.layer_norm(case.s, x.tensor, w.tensor, b.tensor, 1e-5))
    )


def _mass(case: Case) -> Equation:
    x = case.value("x", (case.s,))
    m = Field(case.s.mass(x.tensor), (), REAL)
    return Equation(m, Field(Structure.mass(case.s, x.tensor), (), REAL))


def _sdpa_factor(case: Case) -> Equation:
    m, k = case.size("m"), case.size("k")
    a = case.value("a", (case.vec(m), case.s), 2)
    b = case.value("b", (case.vec(k), case.s), 2)
    fa, fb = case.s.sdpa_factor(a.tensor), case.s.sdpa_factor(b.tensor)
    assert fa is not None and fb is not None
    axes = (case.vec(m), case.vec(k))
    lhs = Field(fa @ fb.transpose(-1, -2), axes, REAL)
    return Equation(lhs, Field(case.s.contract(a.tensor, b.tensor.transpose(-1, -2), REAL), axes, REAL))


def _sdpa_factor_applies(case: Case) -> str | None:
    if (why := real_only(case)) is not None:
        return why
    like = case.s.pure(torch.zeros(1, dtype=torch.float64), -1)
    if case.s.sdpa_factor(like) is None:
        return f"{type(case.s).__name__} has no metric factor (attention is not lowered on it as heads)"
    return None


def _sdpa_log_measure(case: Case) -> Equation:
    h = case.vec(case.size("h"))
    x = case.value("x", (case.s, h))  # keys layout (..., S, H)
    log_w = case.s.sdpa_log_measure(x.tensor)  # (..., S)
    weighted = x.tensor if log_w is None else x.tensor * log_w.exp().unsqueeze(-1)
    return Equation(Field(weighted.sum(-2), (h,), REAL), Field(case.s.counit(x.tensor, -2, REAL), (h,), REAL))


def _sdpa_log_measure_applies(case: Case) -> str | None:
    if (why := real_only(case)) is not None:
        return why
    try:
        case.s.sdpa_log_measure(case.s.pure(torch.zeros(1, 1, dtype=torch.float64), -2))
    except NotImplementedError:
        return f"{type(case.s).__name__}'s measure is not diagonal (attention is not lowered over it)"
    return None


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
    Law("Fusion", "contract", "s.contract(a, b) = Structure.contract(s, a, b)", _contract, _overridden("contract")),
    Law("Fusion", "affine", "s.affine(x, W, b) = Structure.affine(s, x, W, b)", _affine, _overridden("affine")),
    Law("Fusion", "softmax", "s.softmax(x) = Structure.softmax(s, x)", _softmax, _overridden("softmax", True)),
    Law(
        "Fusion",
        "layer_norm",
        "s.layer_norm(x, w, b) = Structure.layer_norm(s, x, w, b)",
        _layer_norm,
        _overridden("layer_norm", True),
    ),
    Law("Fusion", "mass", "s.mass(x) = counit (pure 1)", _mass, _overridden("mass")),
    Law("Fusion", "sdpa_factor", "(a L)(b L)ᵀ = contract(a, bᵀ)", _sdpa_factor, _sdpa_factor_applies),
    Law("Fusion", "sdpa_log_measure", "Σ exp(log w) · x = counit x", _sdpa_log_measure, _sdpa_log_measure_applies),
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
