"""The law checker: every law on every built-in structure and ring, and proof that it bites.

References are independent of the code under test: the generic base-class
definitions (for fused kernels), plain numpy (expectations), and deliberately
broken structures that each law must reject with a counterexample.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from torch import Tensor

from applicative import REAL, Field, Ring, Structure, StructureError
from applicative.laws import (
    EXACT,
    LAWS,
    Elements,
    LawError,
    Tolerance,
    VectorArbitrary,
    check_laws,
    fields,
    run_laws,
    structures,
)
from applicative.laws.__main__ import main
from examples.unlawful_distribution import APPLICATIVE_AND_COUNIT, ZipDistributionArbitrary
from instances import ChebyshevArbitrary, Distribution, DistributionArbitrary, TreeArbitrary
from instances.rings import MAX_PLUS, MIN_PLUS
from instances.tree import NodeAlgebra
from instances.vector import Vector

EXAMPLES = 10  # per law; the CI profile's 25 would multiply the suite's time for little gain


def _laws(*names: str) -> tuple:  # type: ignore[type-arg]
    chosen = tuple(law for law in LAWS if law.name in names)
    assert len(chosen) == len(names), names
    return chosen


# ---- every law, every built-in instance ---------------------------------------


@pytest.mark.parametrize("ring", [REAL, MAX_PLUS, MIN_PLUS], ids=repr)
def test_vector_is_lawful(ring: Ring) -> None:
    report = check_laws(Vector, ring, max_examples=EXAMPLES)
    applicable = [r for r in report.results if r.status != "n/a"]
    assert len(applicable) >= 35
    if ring.exact:  # tropical rings on integer-valued floats: every law holds to the last bit
        assert all(r.status == "exact" and r.tolerance == EXACT for r in applicable), report.table()


def test_distribution_is_lawful() -> None:
    report = check_laws(DistributionArbitrary(), max_examples=EXAMPLES)
    statuses = {r.law.name: r.status for r in report.results}
    assert statuses["keys/values invariant"] != "n/a"  # relabelling outcomes is an isomorphism
    assert statuses["contract"] != "n/a"


def test_nominal_vector_axis() -> None:
    class Model(Vector):
        size = 3

    check_laws(Model, laws=[law for law in LAWS if law.area == "Applicative"], max_examples=EXAMPLES)


# ---- Chebyshev series and trees (their arbitraries live beside them) --------------


def test_chebyshev_is_lawful_on_the_untruncated_subspace() -> None:
    report = check_laws(ChebyshevArbitrary(), max_examples=EXAMPLES)
    contract = next(r for r in report.results if r.law.name == "contract")
    assert contract.subspaces  # products were checked where the n-term truncation is exact
    # queries on a Chebyshev axis: attention normalises through its positions (fmap), so it is equivariant
    assert report.status("queries equivariant") in ("exact", "approximate")


@pytest.mark.parametrize("algebra", list(NodeAlgebra), ids=lambda a: a.value)
def test_tree_is_lawful(algebra: NodeAlgebra) -> None:
    report = check_laws(TreeArbitrary(algebra), max_examples=EXAMPLES)
    # pairing trees of different shapes (common refinement) is exact: only copies are made
    assert all(report.status(name) == "exact" for name in ("left unit", "right unit", "associativity"))


# ---- the checker bites -----------------------------------------------------------


def test_unlawful_zip_distribution_is_rejected() -> None:
    report = run_laws(ZipDistributionArbitrary(), laws=APPLICATIVE_AND_COUNIT, max_examples=EXAMPLES, database=False)
    failed = {r.law.name for r in report.failures}
    assert failed == {"left unit", "right unit"}
    text = report.failure_text()
    # the shrunk counterexample: pure builds one outcome, so the pair keeps one outcome of b
    assert "pure builds = ZipDistribution([1.0])" in text
    assert "structures differ" in text
    with pytest.raises(LawError, match=r"left unit: pair \(pure x\) b = fmap \(x,·\) b  \[rtol=1e-09, atol=1e-09\]"):
        check_laws(ZipDistributionArbitrary(), laws=_laws("left unit"), max_examples=EXAMPLES)


class _SloppyContract(Vector):
    """A fused contraction that is off by 1e-6: the fusion law must notice."""

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        return torch.matmul(a, b) * (1 + 1e-6)


class _SquaredCounit(Vector):
    """A counit that is not linear (sum of squares)."""

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        return (x * x).sum(dim)


class _ReversingFmap(Vector):
    """An ``fmap`` that reverses the positions: breaks functor identity."""

    def fmap(self, f, x, dim):  # type: ignore[no-untyped-def]
        return f(x).flip(dim)


class _LeakyCounit(Vector):
    """A counit that adds 1e-3 to every sum: the softmax it defines (``e / counit e``) is not the measure's."""

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        return x.sum(dim) + 1e-3


class _PositionBias(Vector):
    """A measure weighing positions 1, 2, 3, ... (declared in its contract), whose arbitrary still claims
    that permutations of the positions are isomorphisms: attention over it is not invariant under them."""

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return torch.arange(1, self.size + 1, dtype=dtype, device=device).log()


@pytest.mark.parametrize(
    ("structure", "law"),
    [
        (_SloppyContract(3), "contract"),
        (_SquaredCounit(3), "additivity"),
        (_ReversingFmap(3), "identity"),
        (_LeakyCounit(3), "softmax"),
        (_PositionBias(3), "keys/values invariant"),
    ],
    ids=["contract", "counit", "fmap", "softmax", "attention"],
)
def test_checker_rejects_broken_structures(structure: Vector, law: str) -> None:
    report = run_laws(VectorArbitrary(type(structure), 3), laws=_laws(law), max_examples=25, database=False)
    (result,) = report.results
    assert result.status == "fail", report.table()
    assert result.counterexample is not None and "inputs:" in result.counterexample


def test_checker_rejects_a_broken_ring() -> None:
    class Sloppy(type(REAL)):  # type: ignore[misc]
        def mul(self, a: Tensor, b: Tensor) -> Tensor:
            return a * b + 1e-3 * a

    ring_laws = [law for law in LAWS if law.area == "Ring"]
    report = run_laws(Vector(2), Sloppy(), laws=ring_laws, max_examples=EXAMPLES, database=False)
    failed = {r.law.name for r in report.failures}
    assert {"one identity (left)", "mul commutative", "mul associative"} <= failed


def test_tolerance_is_explicit() -> None:
    loose = run_laws(Vector(3), laws=_laws("dot additive"), tolerance=Tolerance(1e-3, 1e-3), max_examples=EXAMPLES)
    assert loose.results[0].tolerance == Tolerance(1e-3, 1e-3)
    exact = run_laws(Vector(3), MAX_PLUS, laws=_laws("dot additive"), max_examples=EXAMPLES)
    assert exact.results[0].tolerance == EXACT and exact.results[0].status == "exact"


# ---- Distribution: the structure itself -----------------------------------------


@pytest.mark.parametrize(
    "probs",
    [[], [0.5, -0.1, 0.6], [0.5, float("nan"), 0.5], [0.5, float("inf")], [0.3, 0.3]],
    ids=["empty", "negative", "nan", "inf", "sum"],
)
def test_distribution_rejects_invalid_probabilities(probs: list[float]) -> None:
    with pytest.raises(StructureError):
        Distribution(probs)


def test_distribution_counit_is_the_expectation() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=3)  # per-example probabilities, batch 3
    x = rng.normal(size=(3, 4, 5))  # batch 3, a vector of 4 values, 5 outcomes
    d = Distribution(torch.from_numpy(p))
    got = d.counit(torch.from_numpy(x), -1, REAL).numpy()
    want = np.stack([[np.average(x[b, i], weights=p[b]) for i in range(4)] for b in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_distribution_counit_over_rings() -> None:
    """Weights enter a ring through a homomorphism from the non-negative reals: the support, if idempotent."""
    d = Distribution([0.5, 0.0, 0.5])
    x = torch.tensor([1.0, 9.0, 3.0], dtype=torch.float64)
    assert d.counit(x, -1, MAX_PLUS).item() == 3.0  # max over the outcomes of positive probability
    assert d.counit(x, -1, REAL).item() == pytest.approx(2.0)

    class Counting(Ring):  # the natural numbers: not idempotent, and no map from the reals
        def zero(self, like: Tensor) -> Tensor:
            return torch.zeros_like(like)

        def one(self, like: Tensor) -> Tensor:
            return torch.ones_like(like)

        def add(self, a: Tensor, b: Tensor) -> Tensor:
            return a + b

        def mul(self, a: Tensor, b: Tensor) -> Tensor:
            return a * b

    with pytest.raises(StructureError, match="cannot weigh values by a measure"):
        d.counit(x, -1, Counting())


# ---- strategies and the command line ---------------------------------------------


@given(fields(Vector(3), inner=(Vector(2),), ring=MIN_PLUS))
def test_fields_strategy_draws_ring_elements(x: Field) -> None:  # type: ignore[type-arg]
    assert x.structures == (Vector(3), Vector(2)) and x.ring == MIN_PLUS
    t = x.tensor
    finite = t[torch.isfinite(t)]
    assert bool((finite == finite.round()).all())  # integer-valued: exact tropical arithmetic
    assert bool((t[~torch.isfinite(t)] == float("inf")).all())  # MIN_PLUS's zero is +inf


@given(structures(DistributionArbitrary()))
def test_structures_strategy_draws_valid_distributions(d: Distribution) -> None:
    np.testing.assert_allclose(d.probs.sum(-1).numpy(), 1.0, atol=1e-12)


def test_elements_can_be_chosen() -> None:
    report = run_laws(Vector(2), laws=_laws("add commutative"), elements=Elements(0, 1, integral=True), max_examples=5)
    assert report.results[0].status == "exact"


def test_command_line_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instances.distribution:Distribution", "--examples", "3"]) == 0
    out = capsys.readouterr().out
    assert "Laws of DistributionArbitrary() over Real()" in out
    assert "left unit" in out and "approximate" in out and "rtol=1e-09" in out


def test_command_line_ring_and_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instances.rings:MIN_PLUS", "--examples", "3"]) == 0
    assert "exact" in capsys.readouterr().out
    assert main(["examples.unlawful_distribution:ZipDistribution", "--examples", "5"]) == 1
    assert "structures differ" in capsys.readouterr().out


# ---- a mistake in a derived kernel fails the fusion laws for the structures that use it ---------


def _mutated_softmax(s: Structure, x: Tensor, dim: int) -> Tensor:
    lw = s.log_measure(x.dtype, x.device)
    w = torch.zeros(()) if lw is None else lw.unsqueeze(0)
    return torch.softmax(x - w, dim)  # the measure's sign flipped


def _mutated_contract(s: Structure, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
    return torch.matmul(a, b)  # the measure forgotten


@pytest.mark.parametrize(
    ("name", "mutant", "law"),
    [("softmax", _mutated_softmax, "softmax"), ("contract", _mutated_contract, "contract")],
)
def test_mutated_derived_kernel_fails_its_law(
    monkeypatch: pytest.MonkeyPatch, name: str, mutant: object, law: str
) -> None:
    from applicative import _kernels

    report = run_laws(DistributionArbitrary(), laws=_laws(law), max_examples=25, database=False)
    assert not report.failures
    monkeypatch.setattr(_kernels, name, mutant)
    report = run_laws(DistributionArbitrary(), laws=_laws(law), max_examples=25, database=False)
    assert [r.law.name for r in report.failures] == [law]
