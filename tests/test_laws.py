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
    Arbitrary,
    Draw,
    Elements,
    Isomorphism,
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
from instances.chebyshev import Chebyshev
from instances.distribution import Distribution, DistributionArbitrary
from instances.rings import MAX_PLUS, MIN_PLUS
from instances.tree import NodeAlgebra, Tree
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


# ---- Chebyshev series and trees (arbitraries written against their public API) ----


class ChebyshevArbitrary(Arbitrary[Chebyshev]):
    """Series of 2-7 coefficients; values restricted to degree ``(n - 1) // degree`` where products appear.

    Isomorphism: the reflection ``t ↦ -t`` (``c_k ↦ (-1)^k c_k``), which keeps
    the Chebyshev points, pointwise operations and the integral.
    """

    kind = Chebyshev

    def structure(self, draw: Draw) -> Chebyshev:
        return Chebyshev(draw.integers(2, 7))

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        t = draw.tensor((*batch, *(a.size for a in axes)), elements, torch.float64)
        if degree is None or degree <= 1:
            return t
        for i, a in enumerate(axes):
            if isinstance(a, Chebyshev):
                keep = (torch.arange(a.size) <= (a.size - 1) // degree).to(t.dtype)
                t = t * keep.reshape(a.size, *([1] * (len(axes) - i - 1)))
        return t

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        if isinstance(s, Chebyshev) and degree is not None and degree > 1:
            return f"degree ≤ (n-1)//{degree} (products of {degree} series fit in n terms)"
        return None

    def isomorphism(self, s: Chebyshev, draw: Draw) -> Isomorphism:
        sign = (-1.0) ** torch.arange(s.size)

        def reflect(x: Tensor, dim: int) -> Tensor:
            d = dim % x.ndim
            return x * sign.to(x).reshape(s.size, *([1] * (x.ndim - d - 1)))

        return Isomorphism(s, s, reflect, "reflection t ↦ -t")


def _random_depths(draw: Draw, max_depth: int = 3) -> list[int]:
    """Leaf depths of a random full binary tree, left to right."""

    def grow(depth: int) -> list[int]:
        if depth < max_depth and draw.booleans():
            return grow(depth + 1) + grow(depth + 1)
        return [depth]

    return grow(0)


def _tree_batch(draw: Draw, algebra: NodeAlgebra, batch: int = 2) -> Tree:
    rows = [_random_depths(draw) for _ in range(batch)]
    n = max(len(r) for r in rows)
    return Tree(torch.tensor([r + [-1] * (n - len(r)) for r in rows]), algebra)


class TreeArbitrary(Arbitrary[Tree]):
    """Batches of two random trees (depth ≤ 3, ragged); partners are other trees, ``pure`` is the leaf."""

    kind = Tree

    def structure(self, draw: Draw) -> Tree:
        return _tree_batch(draw, draw.choice([NodeAlgebra.SUM, NodeAlgebra.MEAN]))

    def partner(self, s: Tree, draw: Draw) -> Structure:
        return _tree_batch(draw, s.algebra)

    def unit(self, s: Tree, draw: Draw) -> Structure:
        return Tree.leaf((2,), s.algebra)

    def observe(self, s: Structure, x: Tensor, dim: int) -> Tensor:
        if not isinstance(s, Tree):
            return x
        d = dim % x.ndim
        mask = s.mask.reshape(*s.mask.shape[:-1], *([1] * (d - s.mask.ndim + 1)), s.size, *([1] * (x.ndim - d - 1)))
        return torch.where(mask, x, 0.0)  # padding holds arbitrary values

    def isomorphism(self, s: Tree, draw: Draw) -> Isomorphism:
        """The mirror image: children swapped at every node, leaves reversed."""
        counts = s.leaf_counts()  # (2,)
        pos = torch.arange(s.size)
        index = torch.where(pos < counts[:, None], counts[:, None] - 1 - pos, pos)  # (2, N)
        depth = torch.where(s.mask, torch.gather(s.depth, -1, index), -1)
        target = Tree(depth, s.algebra)

        def mirror(x: Tensor, dim: int) -> Tensor:
            d = dim % x.ndim
            idx = index.reshape(2, *([1] * (d - 1)), s.size, *([1] * (x.ndim - d - 1)))
            return torch.take_along_dim(x, idx.expand(*x.shape[:d], s.size, *x.shape[d + 1 :]), d)

        return Isomorphism(s, target, mirror, "mirror every tree (swap all children)")


#: fused softmax samples e^p at 2n-1 points, the generic one at n: by design they differ (see instances.chebyshev);
#: generic attention normalises per stored coefficient of a Chebyshev *query* axis (not fmap through positions)
CHEBYSHEV_KNOWN_VIOLATIONS = ("softmax", "queries equivariant")


def test_chebyshev_is_lawful_on_the_untruncated_subspace() -> None:
    laws = [law for law in LAWS if law.name not in CHEBYSHEV_KNOWN_VIOLATIONS]
    report = check_laws(ChebyshevArbitrary(), laws=laws, max_examples=EXAMPLES)
    contract = next(r for r in report.results if r.law.name == "contract")
    assert contract.subspaces  # products were checked where the n-term truncation is exact


def test_chebyshev_known_violations_are_reported() -> None:
    report = run_laws(ChebyshevArbitrary(), laws=_laws(*CHEBYSHEV_KNOWN_VIOLATIONS), max_examples=EXAMPLES)
    assert {r.law.name for r in report.failures} == set(CHEBYSHEV_KNOWN_VIOLATIONS), report.table()


def test_tree_is_lawful() -> None:
    report = check_laws(TreeArbitrary(), max_examples=EXAMPLES)
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


class _LeakySoftmax(Vector):
    """A fused softmax normalised by the plain sum of exp(x) + 1e-3."""

    def softmax(self, x: Tensor, dim: int) -> Tensor:
        e = x.exp()
        return e / (e.sum(dim, keepdim=True) + 1e-3)


class _PositionBias(Vector):
    """A measure weighing positions 1, 2, 3, ... but relabelled as if all weighed the same.

    Attention over it (generic path: it declines the fused lowering) is not
    invariant under permutations of the positions, which the arbitrary still
    claims are isomorphisms.
    """

    def _w(self, x: Tensor) -> Tensor:
        return torch.arange(1, self.size + 1, dtype=x.dtype)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        d = dim % x.ndim
        return (x * self._w(x).reshape(self.size, *([1] * (x.ndim - d - 1)))).sum(d)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        return torch.matmul(a * self._w(a), b)

    softmax = Structure.softmax

    def sdpa_log_measure(self, like: Tensor) -> Tensor | None:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("structure", "law"),
    [
        (_SloppyContract(3), "contract"),
        (_SquaredCounit(3), "additivity"),
        (_ReversingFmap(3), "identity"),
        (_LeakySoftmax(3), "softmax"),
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

    report = run_laws(Vector(2), Sloppy(), laws=[law for law in LAWS if law.area == "Ring"], database=False)
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


def test_distribution_counit_needs_the_real_ring() -> None:
    with pytest.raises(StructureError, match="expectation"):
        Distribution([0.5, 0.5]).counit(torch.zeros(2, dtype=torch.float64), -1, MAX_PLUS)


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
