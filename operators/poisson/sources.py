r"""Random smooth sources and their exact Poisson solutions, as Chebyshev coefficient matrices.

A source is :math:`f(x, y) = \sum_{k,l < n} f_{kl} T_k(x) T_l(y)` with

.. math::  f_{kl} = z_{kl}\, \rho^{k + l} \,/\, \|\cdot\|, \qquad z_{kl} \sim \mathcal N(0, 1),

and :math:`f_{kl} = 0` for :math:`k \ge m` or :math:`l \ge m` (the highest ``n - m`` modes are zero,
as in the design source); each source is scaled to unit :math:`L^2([-1,1]^2)` norm
(:mod:`operators.poisson.norms`). The solution :math:`g = \Delta^{-1} f` (zero on the boundary) is computed by
:class:`~operators.poisson.solver.PoissonSolver` at degree :data:`DEGREE` (exact to rounding for these data;
the ``(N+1)^2`` coefficients are kept so that errors are measured against the whole function, not its
truncation to ``n x n``).

Out-of-distribution sources use a slower decay and all ``n`` modes (higher frequencies). The training law
``"mixed"`` is :func:`operators.poisson.families.training_sources`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import Tensor

from . import families
from .norms import pad, unit
from .solver import PoissonSolver

#: the collocation degree of the exact solutions (:func:`make`'s): ``(count, DEGREE + 1, DEGREE + 1)``
DEGREE = 48
#: the training laws: the decaying family, or the mixed law of :func:`operators.poisson.families.training_sources`
SOURCES = ("decaying", "mixed")


@dataclass(frozen=True)
class SourceSpec:
    """How random sources are drawn: ``n`` coefficients per axis, ``active`` nonzero, decay ``rho``."""

    n: int = 16
    active: int = 12
    rho: float = 0.7


IN_DISTRIBUTION = SourceSpec()
OUT_OF_DISTRIBUTION = SourceSpec(active=16, rho=0.85)


def random_sources(spec: SourceSpec, count: int, seed: int) -> Tensor:
    """``count`` random sources ``(count, n, n)`` (float64), unit L² norm, reproducible from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(count, spec.n, spec.n, generator=g, dtype=torch.float64)
    k = torch.arange(spec.n, dtype=torch.float64)
    decay = spec.rho ** (k[:, None] + k[None, :])
    mask = ((k[:, None] < spec.active) & (k[None, :] < spec.active)).to(torch.float64)
    return unit(z * decay * mask)


@dataclass(frozen=True)
class PoissonData:
    """Sources ``f`` ``(count, n, n)`` and exact solutions ``g`` ``(count, N+1, N+1)``, float64."""

    f: Tensor
    g: Tensor

    def __len__(self) -> int:
        return self.f.shape[0]

    def target(self, n: int) -> Tensor:
        """The solutions' leading ``n x n`` coefficients (what an ``n``-mode model can output)."""
        return pad(self.g, n)


def make(spec: SourceSpec, count: int, seed: int, degree: int = DEGREE) -> PoissonData:
    """Draw ``count`` sources from ``spec`` and solve them exactly at collocation degree ``degree``."""
    f = random_sources(spec, count, seed)
    return PoissonData(f, PoissonSolver(degree).solve(f))


def training_law(sources: str, count: int, g: torch.Generator, n: int = 16) -> Tensor:
    """``count`` sources ``(count, n, n)`` (float64, unit L² norm) of the training law ``sources``, drawn with ``g``.

    ``"decaying"``: :data:`IN_DISTRIBUTION` (for ``n`` modes, as :func:`splits` scales it; the ``"decaying"``
    family of :data:`~operators.poisson.families.FAMILIES`); ``"mixed"``:
    :func:`operators.poisson.families.training_sources`. What an online run trains on.
    """
    if sources == "mixed":
        return families.training_sources(count, g, n)
    if sources == "decaying":
        draw, _ = families.FAMILIES["decaying"]
        return draw(count, g, n)
    raise ValueError(f"training_law: sources must be 'decaying' or 'mixed', got {sources!r}")


@functools.cache
def _response(n: int, out: int) -> Tensor:
    basis = torch.eye(n * n, dtype=torch.float64).reshape(n * n, n, n)
    return pad(PoissonSolver(DEGREE).solve(basis), out).reshape(n * n, out * out)


def solutions(f: Tensor, out: int) -> Tensor:
    """The exact solutions of ``(count, n, n)`` sources cut to ``(count, out, out)`` coefficients, float64.

    :class:`~operators.poisson.solver.PoissonSolver` at :data:`DEGREE` is linear, so it is applied as the
    matrix of its responses to the ``n²`` unit sources (solved once per ``(n, out)``): equal to
    ``pad(solve(f), out)`` to rounding, and a millisecond for a batch.
    """
    n = f.shape[-1]
    if f.ndim != 3 or f.shape[-2] != n:
        raise ValueError(f"solutions: expected sources (count, n, n), got shape {tuple(f.shape)}")
    g: Tensor = f.to(torch.float64).reshape(-1, n * n) @ _response(n, out).to(f.device)
    return g.reshape(-1, out, out)


def _split_seed(seed: int, i: int) -> int:
    """The seed of split ``i`` (0 train, 1 test, 2 OOD): ``3 seed + i``, wrapped into the generator's 64 bits."""
    return (3 * seed + i) % 2**64


@dataclass(frozen=True)
class Splits:
    """Training, held-out (same law, disjoint seeds) and out-of-distribution sets."""

    train: PoissonData
    test: PoissonData
    ood: PoissonData


def splits(n_train: int, n_test: int, seed: int = 0, n: int = 16, sources: str = "decaying") -> Splits:
    """Train / held-out test (same distribution, disjoint seeds) / out-of-distribution sets.

    ``sources``: the training (and held-out) law, ``"decaying"`` (:data:`IN_DISTRIBUTION`) or ``"mixed"``
    (:func:`operators.poisson.families.training_sources`).
    """
    if sources not in SOURCES:
        raise ValueError(f"splits: sources must be 'decaying' or 'mixed', got {sources!r}")
    ind = SourceSpec(n=n, active=IN_DISTRIBUTION.active * n // 16, rho=IN_DISTRIBUTION.rho ** (16 / n))
    ood = make(SourceSpec(n=n, active=n, rho=OUT_OF_DISTRIBUTION.rho ** (16 / n)), n_test, _split_seed(seed, 2))
    if sources == "decaying":
        return Splits(make(ind, n_train, _split_seed(seed, 0)), make(ind, n_test, _split_seed(seed, 1)), ood)
    solver = PoissonSolver(DEGREE)
    train, test = (
        families.training_sources(count, torch.Generator().manual_seed(_split_seed(seed, i)), n)
        for i, count in ((0, n_train), (1, n_test))
    )
    return Splits(PoissonData(train, solver.solve(train)), PoissonData(test, solver.solve(test)), ood)
