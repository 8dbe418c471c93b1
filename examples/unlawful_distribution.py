"""The design source's zip distribution is not a lawful applicative: watch the law checker say so.

The design source (Part 6) writes a finite distribution as a list of outcomes::

    data Distribution a = Distribution [(a, Float)]
    pure x = Distribution [(x, 1.0)]
    pair (Distribution a) (Distribution b) =
        Distribution $ zipWith (\\(x, px) (y, py) -> ((x, y), px * py)) a b

``pure x`` is a one-outcome list, and ``pair`` zips position by position, so ``pair (pure x) d`` keeps only the
first outcome of ``d``: the unit laws ``pair (pure x) d ≅ fmap (x,·) d`` fail. :class:`ZipDistribution` ports it
faithfully onto tensors: one axis holds the outcomes, the structure the probabilities, ``join`` is the zip
(truncate to the shorter list, multiply the probabilities) and ``refine`` truncates a value to the joined outcomes.
The lawful version -- random variables on one probability space -- is :class:`instances.distribution.Distribution`.

Run ``python -m examples.unlawful_distribution``: the table and the shrunk counterexample a user gets (seconds).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from applicative import Capability, Ring, Structure, StructureError
from applicative.laws import LAWS, Arbitrary, Draw, Law, LawReport, run_laws


class ZipDistribution(Structure):
    """The design source's ``Distribution [(a, Float)]``: outcomes in a list, paired by ``zipWith``."""

    def __init__(self, probs: Sequence[float]) -> None:
        if len(probs) < 1:
            raise StructureError("ZipDistribution needs at least one outcome")
        self.probs = tuple(float(p) for p in probs)
        self.size = len(self.probs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZipDistribution) and other.probs == self.probs

    def __hash__(self) -> int:
        return hash((ZipDistribution, self.probs))

    def __repr__(self) -> str:
        return f"ZipDistribution({list(self.probs)})"

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        return x.unsqueeze(d).expand(*x.shape[:d], self.size, *x.shape[d:])

    def join(self, other: Structure, op: str) -> Structure:
        """``zipWith``: the shorter list of outcomes, probabilities multiplied."""
        if not isinstance(other, ZipDistribution):
            raise StructureError(f"{op}: cannot zip {self!r} with {other!r}")
        return ZipDistribution([p * q for p, q in zip(self.probs, other.probs, strict=False)])

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        """A value on the zipped distribution: the first ``target.size`` outcomes (``zip`` drops the rest)."""
        return x.narrow(dim % x.ndim, 0, target.size)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        if not ring.has(Capability.SOFTMAX):  # the capability, not the class: COMPLEX derives from Real
            raise StructureError(f"ZipDistribution: the expectation needs the real ring, not {ring!r}")
        d = dim % x.ndim
        p = torch.tensor(self.probs, dtype=x.dtype, device=x.device)
        return (x * p.reshape(self.size, *([1] * (x.ndim - d - 1)))).sum(d)


class ZipDistributionArbitrary(Arbitrary[ZipDistribution]):
    """Distributions on 1-4 outcomes; ``pure`` builds the one-outcome ``[(x, 1.0)]``, as in the source."""

    kind = ZipDistribution

    def structure(self, draw: Draw) -> ZipDistribution:
        w = [draw.integers(1, 4) for _ in range(draw.integers(1, 4))]
        return ZipDistribution([v / sum(w) for v in w])

    def unit(self, s: ZipDistribution, draw: Draw) -> Structure:
        return ZipDistribution([1.0])


#: the laws the example runs (the applicative and counit ones: what the zip breaks)
APPLICATIVE_AND_COUNIT: tuple[Law, ...] = tuple(law for law in LAWS if law.area in ("Functor", "Applicative", "Counit"))


def check(max_examples: int = 30) -> LawReport:
    """Run the functor, applicative and counit laws on the zip distribution."""
    return run_laws(ZipDistributionArbitrary(), laws=APPLICATIVE_AND_COUNIT, max_examples=max_examples, database=False)


def main() -> None:
    report = check()
    print(report.table())
    print()
    print(report.failure_text())


if __name__ == "__main__":
    main()
