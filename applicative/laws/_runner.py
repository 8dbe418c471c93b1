"""Run laws with hypothesis: :func:`run_laws` (a report) and :func:`check_laws` (raises on failure).

Each law runs as its own hypothesis test over ``st.data()``; a violated law is
shrunk by hypothesis and reported with its name, the tolerance, the inputs of
the shrunk example and where the two sides differ. A law whose every example
agreed to the last bit is *exact*; one that needed its tolerance is
*approximate* and reports the largest deviation seen.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from .._ring import REAL, Ring
from ._arbitrary import EXACT, Arbitrary, Elements, Tolerance
from ._counit import COUNIT_LAWS
from ._equivariance import ATTENTION_LAWS
from ._functor import APPLICATIVE_LAWS, FUNCTOR_LAWS
from ._fusion import FUSION_LAWS
from ._law import Case, Law, compare
from ._report import LawReport, LawResult
from ._ringlaws import CAPABILITY_LAWS, RING_LAWS
from ._strategies import HypothesisDraw, arbitrary_of, ring_elements

#: every law, in report order
LAWS: tuple[Law, ...] = (
    *FUNCTOR_LAWS,
    *APPLICATIVE_LAWS,
    *COUNIT_LAWS,
    *RING_LAWS,
    *CAPABILITY_LAWS,
    *FUSION_LAWS,
    *ATTENTION_LAWS,
)

#: default tolerance for inexact rings, in float64
FLOAT_TOLERANCE = Tolerance(rtol=1e-9, atol=1e-9)


class LawError(AssertionError):
    """A structure or ring violates a law; the message holds the report and the counterexamples."""

    def __init__(self, report: LawReport) -> None:
        super().__init__(report.failure_text())
        self.report = report


class _Violation(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _MinimalDraw:
    """The simplest draw of everything (used to decide which laws apply)."""

    def integers(self, lo: int, hi: int) -> int:
        return lo

    def floats(self, lo: float, hi: float) -> float:
        return min(max(0.0, lo), hi)

    def booleans(self) -> bool:
        return False

    def choice(self, options: Sequence[Any]) -> Any:
        return options[0]

    def permutation(self, n: int) -> list[int]:
        return list(range(n))

    def tensor(self, shape: tuple[int, ...], elements: Elements, dtype: torch.dtype) -> torch.Tensor:
        return torch.full(shape, min(max(0.0, elements.lo), elements.hi), dtype=dtype)


def _run_one(
    law: Law,
    arb: Arbitrary[Any],
    ring: Ring,
    els: Elements,
    tol_default: Tolerance,
    commutative: bool,
    hypothesis_settings: settings,
) -> LawResult:
    probe = Case(arb, ring, els, _MinimalDraw(), commutative)
    try:
        reason = law.applies(probe)
        tol = arb.tolerance(probe.s, tol_default)
    except Exception as e:  # a structure that cannot even be drawn fails every law
        return LawResult(law, "fail", tol_default, math.inf, 0, (), f"drawing failed: {type(e).__name__}: {e}")
    if reason is not None:
        return LawResult(law, "n/a", tol, 0.0, 0, (), None, reason)
    stats = {"max": 0.0, "n": 0.0}
    subspaces: set[str] = set()

    @hypothesis_settings
    @given(st.data())
    def test(data: st.DataObject) -> None:
        case = Case(arb, ring, els, HypothesisDraw(data.draw), commutative)
        try:
            verdict = compare(law.build(case), arb, tol)
        except HypothesisException:
            raise
        except Exception as e:
            raise _Violation(f"  raised {type(e).__name__}: {e}\n  inputs:\n{case.describe()}") from e
        if not verdict.ok:
            raise _Violation(f"  {verdict.why}\n  inputs:\n{case.describe()}")
        stats["max"] = max(stats["max"], verdict.max_error)
        stats["n"] += 1
        subspaces.update(case.subspaces)

    # one database entry per law, structure kind and ring (all laws share the inner function's source)
    key = f"{law.area}/{law.name}/{arb!r}/{ring!r}".encode()
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key  # type: ignore[attr-defined]
    try:
        test()
    except _Violation as v:
        return LawResult(law, "fail", tol, math.inf, int(stats["n"]), tuple(sorted(subspaces)), v.text)
    status = "exact" if stats["max"] == 0.0 else "approximate"
    return LawResult(law, status, tol, stats["max"], int(stats["n"]), tuple(sorted(subspaces)), None)


def run_laws(
    target: object,
    ring: Ring = REAL,
    *,
    laws: Sequence[Law] | None = None,
    max_examples: int | None = None,
    tolerance: Tolerance | None = None,
    elements: Elements | None = None,
    commutative: bool = True,
    database: bool = True,
) -> LawReport:
    """Check ``laws`` for ``target`` over ``ring`` and return the report (never raises on a violation).

    Args:
        target: a structure object (``Vector(3)``), a ``Vector`` subclass with a
            declared size, or an :class:`Arbitrary` (structures that carry data).
        ring: the scalars; exact rings are checked exactly.
        laws: which laws (``None``, the default: all of :data:`LAWS`; filter by ``law.area``).
        max_examples: examples per law (default: the active hypothesis profile's).
        tolerance: overrides the default (exact for exact rings, else :data:`FLOAT_TOLERANCE`).
        elements: which scalars to draw (default :func:`ring_elements`).
        commutative: whether ``pair`` and the ring's ``mul`` are expected to commute.
        database: use hypothesis' example database (replays earlier failures).
    """
    laws = LAWS if laws is None else laws
    arb = arbitrary_of(target)
    els = elements if elements is not None else ring_elements(ring)
    tol = tolerance if tolerance is not None else (EXACT if ring.exact else FLOAT_TOLERANCE)
    base = settings()  # the active profile (tests/conftest.py's in this repository)
    hs = settings(
        base,
        max_examples=max_examples if max_examples is not None else base.max_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        database=base.database if database else None,
        # the explain phase re-runs the failing example hundreds of times to annotate it; our
        # counterexample text already names every input, so skip it (it dominated the run time)
        phases=[p for p in base.phases if p is not Phase.explain],
    )
    start = time.perf_counter()
    results = tuple(_run_one(law, arb, ring, els, tol, commutative, hs) for law in laws)
    return LawReport(repr(arb), ring, results, time.perf_counter() - start)


def check_laws(
    target: object,
    ring: Ring = REAL,
    *,
    laws: Sequence[Law] | None = None,
    max_examples: int | None = None,
    tolerance: Tolerance | None = None,
    elements: Elements | None = None,
    commutative: bool = True,
) -> LawReport:
    """Like :func:`run_laws`, but raise :class:`LawError` naming each violated law with its counterexample.

    Use it inside pytest: ``check_laws(Vector(3), MAX_PLUS)``.
    """
    report = run_laws(
        target,
        ring,
        laws=laws,
        max_examples=max_examples,
        tolerance=tolerance,
        elements=elements,
        commutative=commutative,
    )
    if report.failures:
        raise LawError(report)
    return report
