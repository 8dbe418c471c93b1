"""Run laws with hypothesis: :func:`run_laws` (a report) and :func:`check_laws` (raises on failure).

Each law runs as its own hypothesis test over ``st.data()``; a violated law is
shrunk by hypothesis and reported with its name, the tolerance, the inputs of
the shrunk example and where the two sides differ. A law whose every example
agreed to the last bit is *exact*; one that needed its tolerance is
*approximate* and reports the largest deviation seen.

What it costs: 57 laws, each run ``max_examples`` times (hypothesis' default is 100, this
repository's test profile 50, the command line's ``--examples`` 50). One structure takes 5-60 s on
one CPU core at 100 examples -- ``Vector(8)`` 6 s, ``Chebyshev(8)`` 10 s, ``Distribution`` 13 s,
``Tree`` 60 s -- and a failing law more while hypothesis shrinks its counterexample;
``max_examples=10`` is a quick look.

Where examples are kept: nowhere, by default. ``database=PATH`` keeps hypothesis' example database
there (a failing example is replayed first on the next run); ``database=True`` uses the active
hypothesis profile's (hypothesis' own default is ``.hypothesis/`` in the working directory).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

import torch
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import HypothesisException

from .._ring import REAL, Ring
from ._arbitrary import EXACT, Arbitrary, Elements, SizeError, Tolerance, check_size
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

#: where hypothesis keeps examples: ``None``/``False`` nowhere, a path, a database, or ``True`` for the profile's
Database: TypeAlias = "ExampleDatabase | str | os.PathLike[str] | bool | None"


@contextlib.contextmanager
def _storage(database: Database) -> Iterator[None]:
    """Keep hypothesis' own files out of the working directory for the run.

    Even without a database, hypothesis caches the constants it reads from the modules under the
    working directory (the user's structure) in ``.hypothesis/constants``; for the run its home is a
    temporary directory instead -- unless the caller asked for the profile's database
    (``database=True``) or chose a home for hypothesis (``HYPOTHESIS_STORAGE_DIRECTORY`` or
    ``hypothesis.configuration.set_hypothesis_home_dir``).
    """
    from hypothesis import configuration

    home = vars(configuration).get("__hypothesis_home_directory")
    default = vars(configuration).get("__hypothesis_home_directory_default")
    if database is True or os.getenv("HYPOTHESIS_STORAGE_DIRECTORY") or home not in (None, default):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="applicative-laws-") as temporary:
        configuration.set_hypothesis_home_dir(temporary)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(home)


def _database(database: Database, profile: settings) -> ExampleDatabase | None:
    if database is None or database is False:
        return None
    if database is True:
        return profile.database
    if isinstance(database, ExampleDatabase):
        return database
    return DirectoryBasedExampleDatabase(os.fspath(database))


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
        check_size(shape)
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
    except SizeError:  # not the structure's fault: the instance asked for is too large to check
        raise
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
        except (HypothesisException, SizeError):
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
    database: Database = None,
) -> LawReport:
    """Check ``laws`` for ``target`` over ``ring`` and return the report (never raises on a violation).

    ``target`` is turned into an :class:`Arbitrary` by :func:`arbitrary_of`, the rule ``python -m
    applicative.laws`` follows too: a structure object whose class has a registered arbitrary is drawn
    by that arbitrary, pinned to the object, so the command line and this call give one verdict.
    About 5-60 s per structure on one CPU core (see the module's docstring).

    Args:
        target: a structure object (``Vector(3)``, ``Chebyshev(7)``), a structure class (a ``Vector``
            subclass with a declared size, or one with a registered arbitrary), or an
            :class:`Arbitrary` (structures that carry data).
        ring: the scalars; exact rings are checked exactly.
        laws: which laws (``None``, the default: all of :data:`LAWS`; filter by ``law.area``).
        max_examples: examples per law (default: the active hypothesis profile's).
        tolerance: overrides the default (exact for exact rings, else :data:`FLOAT_TOLERANCE`).
        elements: which scalars to draw (default :func:`ring_elements`).
        commutative: whether ``pair`` and the ring's ``mul`` are expected to commute.
        database: where hypothesis keeps its examples (a failing one is replayed first next time):
            ``None`` (the default) nowhere, so nothing is written to the working directory; a directory
            path; an ``ExampleDatabase``; ``True`` for the active hypothesis profile's.
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
        database=_database(database, base),
        # the explain phase re-runs the failing example hundreds of times to annotate it; our
        # counterexample text already names every input, so skip it (it dominated the run time)
        phases=[p for p in base.phases if p is not Phase.explain],
    )
    start = time.perf_counter()
    with _storage(database):
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
    database: Database = None,
) -> LawReport:
    """Like :func:`run_laws`, but raise :class:`LawError` naming each violated law with its counterexample.

    Use it inside pytest: ``check_laws(Vector(3), MAX_PLUS)``. The arguments are :func:`run_laws`'
    (``database=None``: nothing written to the working directory); 5-60 s per structure on one core.
    """
    report = run_laws(
        target,
        ring,
        laws=laws,
        max_examples=max_examples,
        tolerance=tolerance,
        elements=elements,
        commutative=commutative,
        database=database,
    )
    if report.failures:
        raise LawError(report)
    return report
