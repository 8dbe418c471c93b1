"""Laws of ``Ring`` (strictly, commutative semirings), elementwise on drawn scalars::

add associative        (a + b) + c = a + (b + c)
add commutative        a + b = b + a
zero identity          0 + a = a
mul associative        (a · b) · c = a · (b · c)
one identity           1 · a = a = a · 1
mul commutative        a · b = b · a                  (commutative rings)
distributive           a · (b + c) = a·b + a·c,  (b + c) · a = b·a + c·a
zero annihilates       0 · a = 0 = a · 0
sum is the fold        sum x = foldl (+) 0 x          (the fused override of Ring.sum)

and the capabilities a ring declares (n/a where it does not)::

exp carries + to ·     exp(a + b) = exp a · exp b,  exp 0 = 1          (Capability.EXP)
add is monotone        min(lo + c, hi + c) = lo + c  for lo <= hi      (Capability.ORDERED)
weights a homomorphism w(x·y) = w(x) · w(y),  w(x + y) = w(x) + w(y)   (Capability.WEIGHS; x, y >= 0, w = weights ∘ log)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .._field import Field
from .._ring import Capability, Ring
from ._law import Case, Equation, Law


def _scalars(case: Case, *labels: str) -> list[Tensor]:
    n = case.size("n", 1, 4)
    out = []
    for label in labels:
        t = case.draw.tensor((n,), case.elements, torch.float64)
        case.note(label, t)
        out.append(t)
    return out


def _eq(case: Case, lhs: Tensor, rhs: Tensor) -> Equation:
    return Equation(Field(lhs, (), case.ring), Field(rhs, (), case.ring))


def _law(
    name: str,
    statement: str,
    n: int,
    sides: Callable[[Ring, list[Tensor]], tuple[Tensor, Tensor]],
    applies: Callable[[Case], str | None] = lambda case: None,
    area: str = "Ring",
) -> Law:
    labels = ("a", "b", "c")[:n]

    def build(case: Case) -> Equation:
        return _eq(case, *sides(case.ring, _scalars(case, *labels)))

    return Law(area, name, statement, build, applies)


def _fold(case: Case) -> Equation:
    rows, cols = case.size("rows", 1, 3), case.size("cols", 1, 5)
    x = case.draw.tensor((rows, cols), case.elements, torch.float64)
    case.note("x", x)
    return _eq(case, case.ring.sum(x, -1), Ring.sum(case.ring, x, -1))


def _commutative(case: Case) -> str | None:
    return None if case.commutative else "declared non-commutative (commutative=False)"


def _declares(capability: Capability) -> Callable[[Case], str | None]:
    def applies(case: Case) -> str | None:
        return None if case.ring.has(capability) else f"{case.ring!r} does not declare {capability.words()}"

    return applies


def _bounded(v: list[Tensor]) -> list[Tensor]:
    return [t / (1 + t.abs()) for t in v]  # in (-1, 1): exp neither overflows nor underflows


def _exp_hom(r: Ring, v: list[Tensor]) -> tuple[Tensor, Tensor]:
    a, b = _bounded(v)
    return torch.exp(r.add(a, b)), r.mul(torch.exp(a), torch.exp(b))


def _monotone(r: Ring, v: list[Tensor]) -> tuple[Tensor, Tensor]:
    lo, hi, c = torch.minimum(v[0], v[1]), torch.maximum(v[0], v[1]), v[2]
    return torch.minimum(r.add(lo, c), r.add(hi, c)), r.add(lo, c)


def _non_negative(t: Tensor) -> Tensor:
    return torch.nan_to_num(t.abs(), posinf=2.0)  # drawn ring elements (±inf included) as weights >= 0


def _weights_mul(r: Ring, v: list[Tensor]) -> tuple[Tensor, Tensor]:
    x, y = (_non_negative(t) for t in v)
    return r.weights(torch.log(x * y)), r.mul(r.weights(torch.log(x)), r.weights(torch.log(y)))


def _weights_add(r: Ring, v: list[Tensor]) -> tuple[Tensor, Tensor]:
    x, y = (_non_negative(t) for t in v)
    return r.weights(torch.log(x + y)), r.add(r.weights(torch.log(x)), r.weights(torch.log(y)))


_weighs = _declares(Capability.WEIGHS)

CAPABILITY_LAWS = (
    _law("exp carries add to mul", "exp(a + b) = exp a · exp b", 2, _exp_hom, _declares(Capability.EXP), "Capability"),
    _law(
        "exp zero is one",
        "exp 0 = 1",
        1,
        lambda r, v: (torch.exp(r.zero(v[0])), r.one(v[0])),
        _declares(Capability.EXP),
        "Capability",
    ),
    _law("add monotone", "lo <= hi  =>  lo + c <= hi + c", 3, _monotone, _declares(Capability.ORDERED), "Capability"),
    _law(
        "weights multiplicative",
        "w(x y) = w(x) · w(y), x, y >= 0",
        2,
        _weights_mul,
        _declares(Capability.WEIGHS),
        "Capability",
    ),
    _law(
        "weights additive",
        "w(x + y) = w(x) + w(y), x, y >= 0",
        2,
        _weights_add,
        _declares(Capability.WEIGHS),
        "Capability",
    ),
)


RING_LAWS = (
    _law(
        "add associative",
        "(a + b) + c = a + (b + c)",
        3,
        lambda r, v: (r.add(r.add(v[0], v[1]), v[2]), r.add(v[0], r.add(v[1], v[2]))),
    ),
    _law("add commutative", "a + b = b + a", 2, lambda r, v: (r.add(v[0], v[1]), r.add(v[1], v[0]))),
    _law("zero identity", "0 + a = a", 1, lambda r, v: (r.add(r.zero(v[0]), v[0]), v[0])),
    _law(
        "mul associative",
        "(a · b) · c = a · (b · c)",
        3,
        lambda r, v: (r.mul(r.mul(v[0], v[1]), v[2]), r.mul(v[0], r.mul(v[1], v[2]))),
    ),
    _law("one identity (left)", "1 · a = a", 1, lambda r, v: (r.mul(r.one(v[0]), v[0]), v[0])),
    _law("one identity (right)", "a · 1 = a", 1, lambda r, v: (r.mul(v[0], r.one(v[0])), v[0])),
    _law("mul commutative", "a · b = b · a", 2, lambda r, v: (r.mul(v[0], v[1]), r.mul(v[1], v[0])), _commutative),
    _law(
        "left distributive",
        "a · (b + c) = a·b + a·c",
        3,
        lambda r, v: (r.mul(v[0], r.add(v[1], v[2])), r.add(r.mul(v[0], v[1]), r.mul(v[0], v[2]))),
    ),
    _law(
        "right distributive",
        "(b + c) · a = b·a + c·a",
        3,
        lambda r, v: (r.mul(r.add(v[1], v[2]), v[0]), r.add(r.mul(v[1], v[0]), r.mul(v[2], v[0]))),
    ),
    _law("zero annihilates (left)", "0 · a = 0", 1, lambda r, v: (r.mul(r.zero(v[0]), v[0]), r.zero(v[0]))),
    _law("zero annihilates (right)", "a · 0 = 0", 1, lambda r, v: (r.mul(v[0], r.zero(v[0])), r.zero(v[0]))),
    Law("Ring", "sum is the fold of add", "sum x = foldl (+) 0 x", _fold),
)
