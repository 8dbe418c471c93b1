"""Law results and the table ``python -m applicative.laws`` prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._ring import Ring
from ._arbitrary import Tolerance

if TYPE_CHECKING:
    from ._law import Law


def _subspace_note(subspaces: tuple[str, ...]) -> str:
    if not subspaces:
        return ""
    more = f" (+{len(subspaces) - 1} more)" if len(subspaces) > 1 else ""
    return f"checked on a subspace: {subspaces[-1]}{more}"


@dataclass(frozen=True)
class LawResult:
    """One law's outcome: ``exact``, ``approximate``, ``fail`` or ``n/a``.

    ``max_error`` is the largest ``|lhs - rhs|`` over passing examples;
    ``subspaces`` says where values were restricted; ``counterexample`` is the
    shrunk failing example; ``reason`` why a law does not apply.
    """

    law: Law
    status: str
    tolerance: Tolerance
    max_error: float
    examples: int
    subspaces: tuple[str, ...]
    counterexample: str | None
    reason: str | None = None


@dataclass(frozen=True)
class LawReport:
    """All law results for one structure (arbitrary) and ring."""

    target: str
    ring: Ring
    results: tuple[LawResult, ...]
    seconds: float

    @property
    def failures(self) -> tuple[LawResult, ...]:
        return tuple(r for r in self.results if r.status == "fail")

    def status(self, name: str) -> str:
        """The status of the law called ``name`` (``KeyError`` if there is none)."""
        for r in self.results:
            if r.law.name == name:
                return r.status
        raise KeyError(name)

    def table(self) -> str:
        """The law × result table, with tolerances, largest deviations and notes."""
        rows = [("area", "law", "result", "tolerance", "max |lhs-rhs|", "note")]
        for r in self.results:
            err = "" if r.status in ("n/a", "fail") else f"{r.max_error:.2g}"
            note = r.reason or _subspace_note(r.subspaces)
            tol = "" if r.status == "n/a" else str(r.tolerance)
            rows.append((r.law.area, r.law.name, r.status, tol, err, note))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = [f"Laws of {self.target} over {self.ring!r} (float64, {self.seconds:.1f} s)"]
        for row in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
        counts = {s: sum(r.status == s for r in self.results) for s in ("exact", "approximate", "fail", "n/a")}
        lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
        return "\n".join(lines).rstrip()

    def failure_text(self) -> str:
        """Each violated law with its statement, tolerance and shrunk counterexample."""
        parts = [f"{len(self.failures)} law(s) of {self.target} over {self.ring!r} fail:"]
        for r in self.failures:
            parts.append(f"\n{r.law.area} / {r.law.name}: {r.law.statement}  [{r.tolerance}]")
            parts.append(r.counterexample or "")
        return "\n".join(parts)
