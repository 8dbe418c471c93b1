r"""Seeded Darcy data: Gaussian random coefficients, their two families, and exact-solver solutions.

Gaussian random field (Li et al. 2020's Darcy data): :math:`g \sim \mathcal N(0, C)` on :math:`[0, 1]^2`
with covariance :math:`C = \tau^{2\alpha - 2}(-\Delta + \tau^2)^{-\alpha}` (Neumann boundary, zero mean,
the constant mode removed), :math:`\alpha = 2`, :math:`\tau = 3`. In the Neumann eigenbasis
:math:`\varphi_k(x) = \sqrt{2 - \delta_{k0}} \cos(\pi k x)` (orthonormal on ``[0, 1]``),

.. math::  g(x, y) = \sum_{0 \le k, l < K,\ (k, l) \ne 0} \sigma_{kl}\, \xi_{kl}\, \varphi_k(x) \varphi_l(y),
   \qquad \sigma_{kl} = \tau^{\alpha - 1} \left(\pi^2 (k^2 + l^2) + \tau^2\right)^{-\alpha/2},
   \quad \xi_{kl} \sim \mathcal N(0, 1)\ \text{i.i.d.},

so :math:`\operatorname{Cov}(g(p), g(q)) = \sum \sigma_{kl}^2 \varphi_k(p_x)\varphi_l(p_y)\varphi_k(q_x)\varphi_l(q_y)`
(:func:`covariance`). ``K = 32`` modes: the variance left out is below 0.1% of the total; the pointwise standard
deviation of :math:`g` is about 0.29.

Families of the coefficient :math:`a`:

* ``"lognormal"``: :math:`a = e^{g}` -- smooth (analytic), contrast about ``e^{±2σ}``;
* ``"piecewise"``: :math:`a = 12` where :math:`g \ge 0`, :math:`3` where :math:`g < 0` (the FNO paper's
  thresholded field): discontinuous across the curves :math:`g = 0`.

A sample is ``(a, u)`` on the ``points x points`` grid of ``[0, 1]²`` (boundary included), with ``u``
solved by :class:`~operators.darcy.solver.DarcySolver` for :math:`f = 1` on a grid ``refine`` times finer
and sampled back at the coarse nodes (the FNO paper solved at 421² and sampled down to 85²). Because
:math:`g` is a finite cosine series, :math:`a` is also a function that can be evaluated anywhere
(:meth:`DarcyData.log_a_at`). Everything is generated from the seed; nothing is cached or downloaded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from .solver import Array, DarcySolver

Family = Literal["lognormal", "piecewise"]
FAMILIES: tuple[Family, ...] = ("lognormal", "piecewise")
#: the piecewise family's two values (low where ``g < 0``, high where ``g >= 0``)
LOW, HIGH = 3.0, 12.0
ALPHA, TAU, MODES = 2.0, 3.0, 32


def spectrum(modes: int = MODES, alpha: float = ALPHA, tau: float = TAU) -> Array:
    """The standard deviations ``σ_kl`` ``(modes, modes)`` of the GRF's cosine coefficients (``σ_00 = 0``)."""
    k = np.arange(modes, dtype=np.float64)
    lam = math.pi**2 * (k[:, None] ** 2 + k[None, :] ** 2) + tau**2
    sigma: Array = tau ** (alpha - 1) * lam ** (-alpha / 2)
    sigma[0, 0] = 0.0
    return sigma


def cosine_basis(x: Array, modes: int = MODES) -> Array:
    """``φ_k(x) = sqrt(2 - δ_k0) cos(π k x)`` for ``k < modes``: shape ``(*x.shape, modes)``."""
    k = np.arange(modes, dtype=np.float64)
    out: Array = np.cos(math.pi * np.asarray(x, dtype=np.float64)[..., None] * k) * np.where(k == 0, 1.0, math.sqrt(2))
    return out


def grf(xi: Array, x: Array, y: Array) -> Array:
    """GRF samples ``g`` ``(batch, |x|, |y|)`` on the grid ``x × y`` from normal draws ``xi`` ``(batch, K, K)``."""
    k = xi.shape[-1]
    out: Array = cosine_basis(x, k) @ (spectrum(k) * xi) @ cosine_basis(y, k).T
    return out


def covariance(p: Array, q: Array, modes: int = MODES) -> Array:
    """The exact ``Cov(g(p_i), g(q_j))`` of the truncated field, for points ``p`` ``(m, 2)`` and ``q`` ``(r, 2)``."""
    s2 = spectrum(modes) ** 2
    fp, fq = cosine_basis(p, modes), cosine_basis(q, modes)  # (m, 2, K), (r, 2, K)
    out: Array = np.einsum("ik,il,kl,jk,jl->ij", fp[:, 0], fp[:, 1], s2, fq[:, 0], fq[:, 1])
    return out


def coefficient(family: Family, g: Array) -> Array:
    """The coefficient ``a`` of ``family`` from GRF values ``g``."""
    if family == "lognormal":
        out: Array = np.exp(g)
        return out
    if family == "piecewise":
        return np.where(g >= 0, HIGH, LOW)
    raise ValueError(f"unknown coefficient family {family!r}; expected one of {', '.join(FAMILIES)}")


@dataclass(frozen=True)
class DarcyData:
    """Samples of one family: ``a`` and ``u`` ``(count, points, points)`` on ``[0, 1]²`` nodes, and the draws ``xi``.

    ``xi`` ``(count, K, K)`` are the GRF's standard normal draws: with them ``a`` can be evaluated anywhere.
    """

    family: Family
    a: Tensor
    u: Tensor
    xi: Tensor

    def __len__(self) -> int:
        return len(self.a)

    def log_a_at(self, x: Tensor, y: Tensor) -> Tensor:
        """``log a`` on the grid ``x × y`` of ``[0, 1]²``: ``(count, |x|, |y|)``, float64."""
        g = grf(self.xi.numpy(), x.double().numpy(), y.double().numpy())
        return torch.from_numpy(np.log(coefficient(self.family, g)))


def sample(family: Family, count: int, points: int = 33, seed: int = 0, refine: int = 2) -> DarcyData:
    """``count`` seeded samples of ``family`` on ``points x points`` nodes (solved ``refine`` times finer)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown coefficient family {family!r}; expected one of {', '.join(FAMILIES)}")
    if count < 1 or points < 3 or refine < 1:
        raise ValueError(f"sample: need count >= 1, points >= 3, refine >= 1; got {count}, {points}, {refine}")
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    xi = rng.standard_normal((count, MODES, MODES))
    solver = DarcySolver(refine * (points - 1) + 1)
    a_fine = coefficient(family, grf(xi, solver.grid, solver.grid))
    u = solver.solve_batch(a_fine)[:, ::refine, ::refine]
    a = a_fine[:, ::refine, ::refine]
    return DarcyData(family, torch.from_numpy(a.copy()), torch.from_numpy(u.copy()), torch.from_numpy(xi))


@dataclass(frozen=True)
class Splits:
    """Training and held-out samples of one family (independent seeds)."""

    train: DarcyData
    test: DarcyData


def splits(family: Family, n_train: int, n_test: int, points: int = 33, seed: int = 0, refine: int = 2) -> Splits:
    """Train / held-out sets of ``family`` (seeds ``2 seed`` and ``2 seed + 1``)."""
    return Splits(
        sample(family, n_train, points, 2 * seed, refine), sample(family, n_test, points, 2 * seed + 1, refine)
    )


def relative_l2(pred: Tensor, exact: Tensor) -> Tensor:
    """Per-sample relative L² error on a uniform grid (plain sums over the last two axes)."""
    return ((pred - exact).pow(2).sum((-2, -1)) / exact.pow(2).sum((-2, -1))).sqrt()
