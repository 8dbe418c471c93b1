r"""Viscous Burgers on the periodic unit interval: a pseudo-spectral solver, its exact check, seeded data.

The equation (FNO's convention: domain ``[0, 1)``, periodic, samples at ``x_j = j / P``):

.. math:: u_t + (u^2/2)_x = \nu u_{xx}, \qquad u(\cdot, 0) = u_0.

**Scheme.** Fourier--Galerkin in space on ``N`` points: the state is the ``rfft`` coefficients
:math:`\hat u_k`, ``|k| ≤ K = (N - 1) // 3`` (the 2/3 rule: :math:`u^2` is formed on the grid and truncated
back to the band, which is then exactly the Galerkin projection; modes above ``K`` are zero throughout, the
initial condition is projected onto the band). In time, an integrating factor takes the viscous term exactly,
:math:`\hat v = e^{\nu (2\pi k)^2 t} \hat u`, and the classical fourth-order Runge--Kutta integrates the
nonlinear term :math:`\hat N(\hat u) = -\tfrac{i}{2}(2\pi k)\,\widehat{u^2}` ("IF-RK4", Cox & Matthews
2002, §2): stable for any viscous stiffness, fourth order in ``dt``.

**Step size.** Fixed (``dt=...``: ``ceil(t / dt)`` equal steps ending exactly at ``t``) or, by default,
chosen before every step from the sample's own state by a CFL rule,
:math:`dt = \text{cfl} / (2\pi K \max_x |u|)` (capped at ``dt_max`` and at the time left). Each sample of a
batch steps on its own clock, so a sample's solution does not depend on the others in its batch.

**Exact check (Cole--Hopf).** If :math:`\varphi > 0` solves the heat equation :math:`\varphi_t = \nu
\varphi_{xx}`, then :math:`u = -2\nu\varphi_x/\varphi` solves Burgers. With
:math:`\varphi = a + \sum_m b_m e^{-4\pi^2\nu m^2 t}\cos 2\pi m x`, :math:`a > \sum |b_m|`, this is a
periodic closed form (:func:`cole_hopf`).

**Data** (Li et al. 2021, §5.1): :math:`u_0 \sim \mathcal N(0, 625(-\Delta + 25I)^{-2})`, FNO's ``GRF1``
field with ``σ = 25, τ = 5, γ = 2`` (``σ`` is its amplitude, ``σ²`` the covariance factor;
:mod:`operators.random_fields` states the convention), ``ν = 0.1``, the map :math:`u_0 \mapsto u(\cdot, 1)`.
By ``t = 1`` the viscosity has left nearly one Fourier mode (``k = 2`` holds about ``1e-4`` of the power).
:func:`dataset` solves on ``fine`` points and keeps every ``fine // points``-th: exact point values at
``j / points``. Shapes: ``(count, points)`` float64 on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor

from . import flux_1d
from ._spectral import band, positive
from .cache import cached
from .random_fields import seeded_grf_1d

#: FNO's Burgers problem: viscosity, end time, and the initial field's amplitude, τ and exponent γ
NU, TIME, SIGMA, TAU, GAMMA = 0.1, 1.0, 25.0, 5.0, 2.0


def solve(
    u0: Tensor,
    time: float,
    nu: float,
    *,
    dt: float | None = None,
    cfl: float = 1.0,
    dt_max: float = 1e-2,
    max_steps: int = 1_000_000,
) -> Tensor:
    """``u(·, time)`` ``(B, N)`` from samples ``u0`` ``(B, N)`` at ``j / N`` (float64, on ``u0``'s device).

    ``dt``: a fixed step; ``None`` picks each step by the CFL rule with ``cfl`` (and ``dt_max``).
    A non-finite state raises :class:`FloatingPointError` naming the time.
    """
    return trajectory(u0, [time], nu, dt=dt, cfl=cfl, dt_max=dt_max, max_steps=max_steps)[:, 0]


def trajectory(
    u0: Tensor,
    times: Sequence[float],
    nu: float,
    *,
    dt: float | None = None,
    cfl: float = 1.0,
    dt_max: float = 1e-2,
    max_steps: int = 1_000_000,
) -> Tensor:
    """``u(·, t)`` at each of ``times`` (increasing): ``(B, len(times), N)`` from ``u0`` ``(B, N)`` at ``j / N``."""
    if u0.ndim != 2 or u0.shape[-1] < 4:
        raise ValueError(f"u0 must be (batch, N) with N >= 4 points, got {tuple(u0.shape)}")
    for t in times:
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"time must be a finite number >= 0, got {t!r}")
    positive("nu", nu)
    lin = -nu * flux_1d.wavenumbers(u0.shape[-1], u0.device) ** 2
    return flux_1d.evolve(u0, times, lin, what="burgers.solve", dt=dt, cfl=cfl, dt_max=dt_max, max_steps=max_steps)


def cole_hopf(x: Tensor, t: float, nu: float, a: float, b: Sequence[float]) -> Tensor:
    """The exact Burgers solution ``-2ν φ_x / φ`` at points ``x`` (any shape) and time ``t``.

    ``φ(x, t) = a + Σ_m b[m-1] e^{-4π²νm²t} cos(2πmx)``; needs ``a > Σ|b_m|`` (``φ > 0``).
    """
    if not a > sum(abs(v) for v in b):
        raise ValueError(f"cole_hopf needs a > sum(|b|) so that phi > 0, got a = {a}, b = {list(b)}")
    x = x.double()
    phi, phi_x = torch.full_like(x, a), torch.zeros_like(x)
    for m, bm in enumerate(b, start=1):
        w = 2 * math.pi * m
        decay = bm * math.exp(-nu * w**2 * t)
        phi = phi + decay * torch.cos(w * x)
        phi_x = phi_x - decay * w * torch.sin(w * x)
    return -2 * nu * phi_x / phi


class BurgersData(NamedTuple):
    """Pairs ``(u0, u1)``, each ``(count, points)`` float64: ``u0`` and ``u(·, time)`` at ``j / points``."""

    u0: Tensor
    u1: Tensor


#: the seed-sequence tag of Burgers' initial conditions (keeps them apart from other generators' draws)
_TAG = 0xB0B6E55


def initial_conditions(
    count: int, n: int, seed: int, modes: int, sigma: float = SIGMA, tau: float = TAU, gamma: float = GAMMA
) -> Tensor:
    """``count`` seeded initial conditions ``(count, n)`` at ``j / n``: FNO's ``GRF1`` field with ``modes`` modes.

    Sample ``i`` is drawn by its own generator seeded ``(tag, seed, i)``, mode by mode: it is the same whatever
    ``count``, and its first modes are the same whatever ``modes``.
    """
    return seeded_grf_1d(count, n, seed, modes, _TAG, sigma, tau, gamma)


def dataset(
    count: int,
    points: int = 256,
    seed: int = 0,
    *,
    fine: int = 1024,
    modes: int | None = None,
    nu: float = NU,
    time: float = TIME,
    sigma: float = SIGMA,
    cfl: float = 1.0,
    batch: int = 1024,
    device: torch.device | str = "cpu",
    cache: Path | None = None,
) -> BurgersData:
    """``count`` seeded pairs ``(u0, u(·, time))`` at ``points`` nodes, solved on ``fine`` nodes.

    ``modes``: the initial field's modes (default: all the solver keeps, ``(fine - 1) // 3``); ``sigma`` its
    amplitude (``SIGMA``, the paper's; ``625`` puts every sample in the shock regime). ``fine`` must be a
    multiple of ``points``. Solved on ``device`` in batches of ``batch``; returned on the CPU. With ``cache`` (a
    directory), the tensors are saved there keyed by every argument, and read back next time.
    """
    modes = band(fine) if modes is None else modes
    _check(count, points, fine, modes, batch)
    params: dict[str, float] = {"count": count, "points": points, "seed": seed, "fine": fine, "modes": modes, "nu": nu}
    params |= {"time": time, "cfl": cfl, "sigma": sigma, "tau": TAU, "gamma": GAMMA}

    def make() -> dict[str, Tensor]:
        u0 = initial_conditions(count, fine, seed, modes, sigma)
        u1 = torch.cat([solve(u.to(device), time, nu, cfl=cfl).cpu() for u in torch.split(u0, batch)])
        return {"u0": u0[:, :: fine // points].contiguous(), "u1": u1[:, :: fine // points].contiguous()}

    out = cached(cache, "burgers", params, {"u0": (count, points), "u1": (count, points)}, make)
    return BurgersData(out["u0"], out["u1"])


def trajectories(
    count: int,
    points: int = 256,
    seed: int = 0,
    *,
    steps: int = 16,
    time: float = TIME,
    nu: float = 0.01,
    fine: int = 1024,
    modes: int | None = None,
    sigma: float = SIGMA,
    cfl: float = 1.0,
    batch: int = 1024,
    device: torch.device | str = "cpu",
    cache: Path | None = None,
) -> Tensor:
    """``count`` seeded trajectories ``(count, steps + 1, points)``: ``u(j / points, i time / steps)`` for
    ``i = 0 … steps`` (the initial condition first), as public time-dependent sets store them (a ``(T, X)`` grid
    per sample). Solved on ``fine`` nodes and subsampled, like :func:`dataset` (the same initial conditions for the
    same ``seed``, ``fine`` and ``modes``)."""
    modes = band(fine) if modes is None else modes
    _check(count, points, fine, modes, batch)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    params: dict[str, float] = {"count": count, "points": points, "seed": seed, "fine": fine, "modes": modes, "nu": nu}
    params |= {"time": time, "steps": steps, "cfl": cfl, "sigma": sigma, "tau": TAU, "gamma": GAMMA}
    times = [time * i / steps for i in range(1, steps + 1)]

    def make() -> dict[str, Tensor]:
        u0 = initial_conditions(count, fine, seed, modes, sigma)
        u = torch.cat([trajectory(v.to(device), times, nu, cfl=cfl).cpu() for v in torch.split(u0, batch)])
        return {"u": torch.cat([u0[:, None], u], 1)[..., :: fine // points].contiguous()}

    return cached(cache, "burgers_trajectories", params, {"u": (count, steps + 1, points)}, make)["u"]


def _check(count: int, points: int, fine: int, modes: int, batch: int) -> None:
    if count < 1 or points < 2 or batch < 1:
        raise ValueError(f"count, points and batch must be >= 1, >= 2, >= 1; got {count}, {points}, {batch}")
    if fine % points != 0:
        raise ValueError(f"fine must be a multiple of points, got fine = {fine}, points = {points}")
    if not 1 <= modes <= band(fine):
        raise ValueError(f"modes must be in 1 … (fine - 1) // 3 = {band(fine)}, got {modes}")


def solve_grid(nu: float, points: int) -> int:
    """The grid :func:`splits` solves on for ``points`` output nodes: ``4 points``, or ``8 points`` below
    ``ν = 0.01``, where fronts of width about ``2ν / Δu`` need it (at ``σ = 25``, 256 points: the solution agrees
    with one solved on twice as many nodes to ``2e-8``, measured)."""
    return (4 if nu >= 0.01 else 8) * points


def splits(
    seed: int = 0,
    *,
    nu: float = NU,
    full: bool = False,
    counts: tuple[int, int] = (1000, 200),
    cache: Path | None = None,
    device: torch.device | str = "cpu",
) -> tuple[BurgersData, BurgersData]:
    """FNO's 1000 training and 200 test pairs (``counts``; seeds ``2 seed`` and ``2 seed + 1``) at viscosity ``nu``.

    Default: 256 points solved on :func:`solve_grid` (about half a minute of one CPU core for the 1200 pairs at
    ``ν ≥ 0.01``), the initial field on 341 modes whatever ``nu`` (the same inputs at every viscosity).
    ``full=True``: the paper's sizes, 1024 points solved on 8192 (FNO's generation grid) -- GPU-sized.
    """
    points, fine = (1024, 8192) if full else (256, solve_grid(nu, 256))
    modes = band(8192) if full else band(1024)
    kw = {"fine": fine, "modes": modes, "nu": nu, "cache": cache, "device": device}
    return (
        dataset(counts[0], points, 2 * seed, **kw),  # type: ignore[arg-type]
        dataset(counts[1], points, 2 * seed + 1, **kw),  # type: ignore[arg-type]
    )
