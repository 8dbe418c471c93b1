"""The log semiring and the complex ring: their laws, and what generic ``mul_mm`` computes over them.

References, independent of the library: brute-force enumeration of every HMM state
path (forward probability and Viterbi score), a rescaled forward recursion written
here in numpy, ``scipy.sparse.csgraph.shortest_path``, ``scipy.special.logsumexp``,
and numpy complex arithmetic. The complex ring's laws are the checker's own laws
(:data:`applicative.laws.LAWS`) evaluated on complex draws (the checker itself draws
real scalars), compared through ``torch.view_as_real``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path
from scipy.special import logsumexp
from torch import Tensor

from applicative import Field, Structure, StructureError, counit, mul_mm, same_values
from applicative.laws import LAWS, Arbitrary, Case, Elements, Law, VectorArbitrary, check_laws
from instances import (
    COMPLEX,
    LOG,
    MAX_PLUS,
    Distribution,
    DistributionArbitrary,
    Quantum,
    QuantumArbitrary,
    Vector,
)
from training.tasks.semirings import HMM, forward, forward_by_products, random_hmm, sample, shortest_paths

T = TypeVar("T")
RING_LAWS = [law for law in LAWS if law.area == "Ring"]

# ---- the log semiring ---------------------------------------------------------------------


def test_log_ring_laws_hold_with_its_zero_and_wide_values() -> None:
    wide = Elements(-300.0, 300.0, specials=(-math.inf,))
    report = check_laws(Vector(4), LOG, laws=RING_LAWS, elements=wide, max_examples=20)
    assert all(r.status != "n/a" for r in report.results)


@pytest.mark.parametrize("target", [Vector, DistributionArbitrary(), QuantumArbitrary()], ids=repr)
def test_structures_are_lawful_over_the_log_semiring(target: object) -> None:
    report = check_laws(target, LOG, max_examples=6)
    assert {r.law.name for r in report.results if r.status != "n/a"} >= {"contract", "affine", "Fubini S∘S"}


def test_log_counit_on_a_distribution_is_the_log_moment_generating_function() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=3)
    p[0, 2] = 0.0  # an impossible outcome contributes nothing, even with a huge value
    p[0] /= p[0].sum()
    x = rng.normal(size=(3, 5)) * 50
    x[0, 2] = 1e6
    got = Distribution(torch.from_numpy(p)).counit(torch.from_numpy(x), -1, LOG).numpy()
    np.testing.assert_allclose(got, logsumexp(x, b=p, axis=-1), rtol=1e-12)  # log E[e^X]


def test_log_semiring_refuses_complex_and_integer_values() -> None:
    for dtype in (torch.complex64, torch.int64):
        with pytest.raises(StructureError, match="floating"):
            Field(torch.zeros(3, dtype=dtype), (Vector(3),), LOG)


# ---- what mul_mm computes: shortest paths, the forward algorithm, Viterbi --------------------


@settings(max_examples=25)
@given(n=st.integers(2, 25), density=st.floats(0.0, 0.5), seed=st.integers(0, 2**32 - 1))
def test_min_plus_squaring_is_all_pairs_shortest_paths(n: int, density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 10, size=(n, n)).astype(np.float64)
    w[rng.random((n, n)) >= density] = np.nan
    want = shortest_path(csgraph_from_dense(w, null_value=np.nan), method="FW", directed=True)
    np.testing.assert_array_equal(shortest_paths(w), want)


def _brute_force(hmm: HMM, obs: Sequence[int]) -> tuple[float, float]:
    """``log Σ_paths p(o, path)`` and ``max_paths log p(o, path)`` over all ``S^T`` state paths."""
    pi, a, b = (t.numpy() for t in (hmm.log_initial, hmm.log_transition, hmm.log_emission))
    scores = []
    for path in itertools.product(range(len(pi)), repeat=len(obs)):
        s = pi[path[0]] + b[path[0], obs[0]]
        s += sum(a[i, j] + b[j, o] for i, j, o in zip(path, path[1:], obs[1:], strict=False))
        scores.append(s)
    return float(logsumexp(scores)), max(scores)


@settings(max_examples=20)
@given(states=st.integers(1, 4), steps=st.integers(2, 6), seed=st.integers(0, 2**31))
def test_log_semiring_forward_and_max_plus_viterbi_match_enumeration(states: int, steps: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    hmm = random_hmm(states, 3, gen)
    obs = sample(hmm, steps, gen)
    total, best = _brute_force(hmm, obs.tolist())
    assert float(forward(hmm, obs)) == pytest.approx(total, rel=1e-12)
    assert float(forward_by_products(hmm, obs)) == pytest.approx(total, rel=1e-12)
    assert float(forward(hmm, obs, MAX_PLUS)) == pytest.approx(best, rel=1e-12)


def _rescaled_forward(pi: np.ndarray, a: np.ndarray, b: np.ndarray, obs: np.ndarray) -> float:
    """The forward recursion in probabilities, normalised every step; ``log p(o) = Σ_t log c_t``."""
    alpha = pi * b[:, obs[0]]
    log_p = 0.0
    for o in [*obs[1:], None]:
        c = alpha.sum()
        log_p += math.log(c)
        if o is not None:
            alpha = (alpha / c) @ a * b[:, o]
    return log_p


def test_long_sequences_in_a_batch_where_probabilities_underflow() -> None:
    gen = torch.Generator().manual_seed(7)
    hmm = random_hmm(5, 4, gen)
    obs = torch.stack([sample(hmm, 1500, gen) for _ in range(3)])  # batch of 3 sequences
    pi, a, b = (t.exp().numpy() for t in (hmm.log_initial, hmm.log_transition, hmm.log_emission))
    want = np.array([_rescaled_forward(pi, a, b, o) for o in obs.numpy()])
    assert (want < math.log(np.finfo(np.float64).tiny)).all()  # p(o) itself is below float64's range
    np.testing.assert_allclose(forward(hmm, obs).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(forward_by_products(hmm, obs).numpy(), want, rtol=1e-12)


def test_log_mul_mm_keeps_terms_far_below_the_row_and_column_maxima() -> None:
    """``log Σ_j e^{a_ij + b_jk}`` when every row maximum and column maximum sit at different ``j``."""
    a = torch.tensor([[0.0, -1000.0]], dtype=torch.float64)
    b = torch.tensor([[-1000.0], [0.0]], dtype=torch.float64)
    got = mul_mm(Field(a, (Vector(1), Vector(2)), LOG), Field(b, (Vector(2), Vector(1)), LOG)).tensor
    assert got.item() == pytest.approx(-1000.0 + math.log(2.0), rel=1e-15)


# ---- the complex ring: the checker's laws on complex draws ----------------------------------

VALUES = Elements(-4.0, 4.0)  # what the complex draw turns into complex numbers


class ComplexDraw:
    """A :class:`~applicative.laws.Draw` whose value tensors (drawn from :data:`VALUES`) are complex."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integers(self, lo: int, hi: int) -> int:
        return int(self.data.draw(st.integers(lo, hi)))

    def floats(self, lo: float, hi: float) -> float:
        return float(self.data.draw(st.floats(lo, hi, allow_nan=False, allow_subnormal=False)))

    def booleans(self) -> bool:
        return bool(self.data.draw(st.booleans()))

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(options))

    def permutation(self, n: int) -> list[int]:
        return list(self.data.draw(st.permutations(range(n))))

    def tensor(self, shape: tuple[int, ...], elements: Elements, dtype: torch.dtype) -> Tensor:
        n = math.prod(shape)
        lo, hi = elements.lo, elements.hi
        one: st.SearchStrategy[float] = (
            st.integers(math.ceil(lo), math.floor(hi)).map(float)
            if elements.integral
            else st.floats(lo, hi, allow_nan=False, allow_subnormal=False)
        )
        part = st.lists(one, min_size=n, max_size=n)
        re = torch.tensor(self.data.draw(part), dtype=torch.float64).reshape(shape)
        if elements is not VALUES:  # a structure's own data (probabilities, amplitudes): as asked
            return re.to(dtype)
        im = torch.tensor(self.data.draw(part), dtype=torch.float64).reshape(shape)
        return torch.complex(re, im)


def _check_complex(law: Law, arb: Arbitrary[Any], data: st.DataObject) -> bool:
    """One example of ``law`` over COMPLEX; ``False`` if it does not apply."""
    case = Case(arb, COMPLEX, VALUES, ComplexDraw(data), True)
    if law.applies(case) is not None:
        return False
    eq = law.build(case)
    ls, rs = eq.lhs.structures, eq.rhs.structures
    assert len(ls) == len(rs) and all(same_values(a, b) for a, b in zip(ls, rs, strict=True)), (ls, rs)
    lhs, rhs = eq.lhs.tensor, eq.rhs.tensor
    real_sides = law.area in ("Functor", "Applicative") or law.name.startswith("weights")  # weights: of reals
    assert lhs.is_complex() or rhs.is_complex() or real_sides, law.name
    lhs, rhs = lhs + torch.zeros_like(rhs), rhs + torch.zeros_like(lhs)  # broadcast against each other
    lhs, rhs = (torch.view_as_real(t.to(torch.complex128)) for t in (lhs, rhs))
    torch.testing.assert_close(lhs, rhs, rtol=1e-9, atol=1e-9, msg=lambda m: f"{law.name}: {m}\n{case.describe()}")
    return True


@pytest.mark.parametrize("arb", [VectorArbitrary(Vector), QuantumArbitrary()], ids=repr)
def test_complex_ring_and_structures_over_it_are_lawful(arb: Arbitrary[Structure]) -> None:
    applied: set[str] = set()

    def check(law: Law) -> None:
        @settings(max_examples=8, database=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            if _check_complex(law, arb, data):
                applied.add(law.name)

        run()

    for law in LAWS:
        check(law)
    assert {law.name for law in RING_LAWS} <= applied
    assert {"additivity", "Fubini S∘S", "contract", "affine", "mul_mm associative (S in the middle)"} <= applied
    assert not {"softmax", "layer_norm", "keys/values invariant"} & applied  # need an order: refused by name


def test_complex_contractions_match_numpy() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 4)) + 1j * rng.normal(size=(2, 3, 4))
    b = rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))
    f, g, h = Vector(3), Vector(4), Vector(5)
    got = mul_mm(Field(torch.from_numpy(a), (f, g), COMPLEX), Field(torch.from_numpy(b), (g, h), COMPLEX))
    np.testing.assert_allclose(got.tensor.numpy(), a @ b, rtol=1e-12)
    p = rng.dirichlet(np.ones(4))
    x = torch.from_numpy(a.transpose(0, 2, 1))  # (2, 4, 3): values on 4 outcomes
    got_e = counit(Field(x, (Distribution(torch.from_numpy(p)), f), COMPLEX)).tensor.numpy()
    np.testing.assert_allclose(got_e, np.einsum("o,bof->bf", p, a.transpose(0, 2, 1)), rtol=1e-12)


def test_complex_ring_refuses_integers_and_quantum_uses_its_measure() -> None:
    with pytest.raises(StructureError, match="complex"):
        Field(torch.zeros(3, dtype=torch.int64), (Vector(3),), COMPLEX)
    psi = torch.tensor([0.6, 0.8j], dtype=torch.complex128)
    x = torch.tensor([1.0 + 2.0j, -1.0j], dtype=torch.complex128)
    got = counit(Field(x, (Quantum(psi),), COMPLEX)).tensor.item()
    assert got == pytest.approx(0.36 * (1 + 2j) + 0.64 * (-1j))
