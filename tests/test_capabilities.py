"""Rings and normalisations are asked what they can do, never what class they are."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import (
    GALERKIN,
    REAL,
    Capability,
    Causal,
    CausalSoftmax,
    Field,
    LinearAttention,
    MultiHeadAttention,
    Normalise,
    Real,
    ReluAttention,
    ScaledSoftmax,
    StructureError,
    Vector,
    attention,
    cannot_lower,
    lowered,
)
from applicative.laws import run_laws
from applicative.laws._ringlaws import CAPABILITY_LAWS
from instances import COMPLEX, LOG, MAX_PLUS, MIN_PLUS, Complex, RealPartSoftmax

ROOT = Path(__file__).resolve().parents[1]
F64 = torch.float64


def test_no_class_tests_of_rings_or_normalisations_in_generic_code() -> None:
    classes = r"(Real|Complex|MaxPlus|MinPlus|LogSemiring|ScaledSoftmax|CausalSoftmax|Causal|LinearAttention)\b"
    pattern = re.compile(r"isinstance\([^)]*" + classes)
    hits = [
        f"{p.relative_to(ROOT)}: {line.strip()}"
        for package in ("applicative", "models")
        for p in sorted((ROOT / package).rglob("*.py"))
        for line in p.read_text().splitlines()
        if pattern.search(line)
    ]
    assert hits == []


def test_rings_declare_their_capabilities() -> None:
    flags = (Capability.EXP, Capability.ORDERED, Capability.WEIGHS)
    table = {ring: tuple(ring.has(c) for c in flags) for ring in (REAL, COMPLEX, LOG, MAX_PLUS, MIN_PLUS)}
    assert table[REAL] == (True, True, True)
    assert table[COMPLEX] == (True, False, True)
    assert table[LOG] == (False, True, True)
    assert table[MAX_PLUS] == table[MIN_PLUS] == (False, True, True)


def test_has_is_flag_containment_for_every_combination() -> None:
    """``has`` (on the flags' values, for torch 2.11's Dynamo) agrees with ``enum.Flag``'s own ``in`` for every
    combination of flags, so a ring with some of them never reads as having all."""
    members = list(Capability)
    combos = [Capability(0)]
    for m in members:
        combos += [c | m for c in combos]
    for ring in (REAL, COMPLEX, LOG, MAX_PLUS, MIN_PLUS):
        for needed in combos:
            assert ring.has(needed) == (needed in ring.capabilities), (ring, needed)


def test_complex_shares_reals_code_but_is_another_ring() -> None:
    assert isinstance(COMPLEX, Real) and Complex.add is Real.add and Complex.matmul is Real.matmul
    assert COMPLEX != REAL and REAL != COMPLEX and COMPLEX == Complex()
    a = torch.randn(3, 4, dtype=torch.complex128)
    w = torch.rand(4, 2, dtype=F64)  # real measure weights times complex values
    torch.testing.assert_close(COMPLEX.matmul(a, w), a @ w.to(a.dtype))


@pytest.mark.parametrize("ring", [REAL, COMPLEX, LOG, MAX_PLUS, MIN_PLUS], ids=repr)
def test_declared_capabilities_pass_their_laws(ring: Real) -> None:
    report = run_laws(Vector(3), ring, laws=CAPABILITY_LAWS, max_examples=15)
    assert not report.failures, report
    applied = {r.law.name for r in report.results if r.status != "n/a"}
    expected = {law.name for law in CAPABILITY_LAWS if ring.has(_declared(law.name))}
    assert applied == expected


def _declared(law: str) -> Capability:
    return (
        Capability.EXP if law.startswith("exp") else Capability.ORDERED if law.startswith("add") else Capability.WEIGHS
    )


@dataclass(frozen=True)
class Boasting(Real):
    """``(max, *)`` claiming ``exp`` and an order: ``exp(max(a, b)) != exp a · exp b``."""

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.maximum(a, b)


def test_a_ring_that_lies_about_exp_fails_its_capability_law() -> None:
    report = run_laws(Vector(3), Boasting(), laws=CAPABILITY_LAWS, max_examples=30)
    failed = {r.law.name for r in report.failures}
    assert "exp carries add to mul" in failed


def test_a_normalisation_is_refused_by_what_it_needs_at_build() -> None:
    with pytest.raises(StructureError, match="ordered"):
        MultiHeadAttention(Vector(4), Vector(2), Vector(2), 2, ring=COMPLEX, dtype=torch.complex128)
    with pytest.raises(StructureError, match="ordered"):
        MultiHeadAttention(Vector(4), Vector(2), Vector(2), 2, Causal(ReluAttention()), ring=COMPLEX)
    MultiHeadAttention(Vector(4), Vector(2), Vector(2), 2, RealPartSoftmax(0.5), ring=COMPLEX, dtype=torch.complex128)
    MultiHeadAttention(Vector(4), Vector(2), Vector(2), 2, LinearAttention(0.5), ring=COMPLEX, dtype=torch.complex128)
    assert cannot_lower(ScaledSoftmax(), COMPLEX) is not None and cannot_lower(ScaledSoftmax(), REAL) is None
    assert cannot_lower(ReluAttention(), REAL) is not None  # declares no lowering


@pytest.mark.parametrize(
    "norm",
    [
        ScaledSoftmax(0.5),
        Causal(ScaledSoftmax(0.5)),
        CausalSoftmax(0.5),
        LinearAttention(0.5),
        Causal(LinearAttention(0.5)),
        ReluAttention(0.5),
        Causal(ReluAttention(0.5)),
        Causal(Causal(ScaledSoftmax(0.5))),
    ],
    ids=repr,
)
def test_cannot_lower_says_exactly_when_lower_gives_no_kernel(norm: Normalise) -> None:
    g = torch.Generator().manual_seed(2)
    fields = [Field(torch.randn(4, 3, dtype=F64, generator=g), (Vector(4), Vector(3))) for _ in range(3)]
    fused = lowered(norm, *fields)
    why = cannot_lower(norm, REAL)
    assert (why is None) == (fused is not None), (why, fused)
    if why is not None:
        assert type(norm).__name__ in why and "\n" not in why


def test_causal_relu_attention_cannot_lower() -> None:
    why = cannot_lower(Causal(ReluAttention()), REAL)
    assert why is not None and "ReluAttention" in why


def test_one_causal_normalisation_matches_torch() -> None:
    g = torch.Generator().manual_seed(0)
    n, scale = 5, 0.7
    q, k, v = (torch.randn(2, n, 3, dtype=F64, generator=g) for _ in range(3))
    s = Vector(n)
    qf, kf, vf = Field(q, (s, Vector(3))), Field(k, (s, Vector(3))), Field(v, (s, Vector(3)))
    expected = nnf.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    for norm in (CausalSoftmax(scale), Causal(ScaledSoftmax(scale))):
        assert norm.causal and norm.scale == scale
        for fused in (True, False):
            torch.testing.assert_close(attention(norm, qf, kf, vf, fused=fused).tensor, expected)
    assert CausalSoftmax(scale) == CausalSoftmax(scale) and CausalSoftmax(scale).inner == ScaledSoftmax(scale)
    with pytest.raises(StructureError, match=r"CausalSoftmax.*sequence"):
        CausalSoftmax(scale)(Field(torch.zeros(2, 3, dtype=F64), (Vector(2), Vector(3))))


def test_galerkin_lowering_is_the_declared_lowering_of_linear_attention() -> None:
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(4, 3, dtype=F64, generator=g) for _ in range(3))
    fields = [Field(t, (Vector(4), Vector(3))) for t in (q, k, v)]
    fused = lowered(LinearAttention(0.5), *fields)
    assert fused is not None and lowered(Causal(LinearAttention(0.5)), *fields) is None
    assert LinearAttention(0.5).lowering is GALERKIN and Causal(LinearAttention(0.5)).lowering is None
    torch.testing.assert_close(fused.tensor, 0.5 * (q @ k.T) @ v)


def test_laws_check_the_declared_lowerings() -> None:
    report = run_laws(Vector(4), max_examples=5)
    by_name = {r.law.name: r.status for r in report.results}
    for law in ("causal lowering = generic", "Galerkin lowering = generic"):
        assert by_name[law] in ("pass", "approximate"), (law, by_name[law])
