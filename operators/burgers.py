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

import numpy as np
import torch
from torch import Tensor

from ._spectral import band, check_finite, half_wavenumbers, positive
from .cache import cached
from .random_fields import grf_1d

#: FNO's Burgers problem: viscosity, end time, and the initial field's amplitude, τ and exponent γ
NU, TIME, SIGMA, TAU, GAMMA = 0.1, 1.0, 25.0, 5.0, 2.0


def nonlinear(u_hat: Tensor, n: int) -> Tensor:
    """``-(i 2πk / 2)`` times the band of ``rfft(u²)``: the advection term of coefficients ``u_hat`` ``(B, K + 1)``."""
    kk = 2 * math.pi * half_wavenumbers(n, u_hat.device)[: u_hat.shape[-1]]
    u = torch.fft.irfft(u_hat, n=n)
    out: Tensor = -0.5j * kk * torch.fft.rfft(u * u)[:, : u_hat.shape[-1]]
    return out


def _grid(u_hat: Tensor, n: int) -> Tensor:
    """Grid values ``(B, n)`` of band coefficients ``u_hat`` ``(B, K + 1)``."""
    u: Tensor = torch.fft.irfft(u_hat, n=n)
    return u


def if_rk4_step(u_hat: Tensor, h: Tensor, lin: Tensor, n: int) -> Tensor:
    """One IF-RK4 step of sizes ``h`` ``(B, 1)`` for ``û_t = lin û + N(û)`` (``lin`` ``(K + 1,)``, diagonal)."""
    e = torch.exp(lin * h / 2)
    e2 = e * e
    a = h * nonlinear(u_hat, n)
    b = h * nonlinear(e * (u_hat + a / 2), n)
    c = h * nonlinear(e * u_hat + b / 2, n)
    d = h * nonlinear(e2 * u_hat + e * c, n)
    return e2 * u_hat + (e2 * a + 2 * e * (b + c) + d) / 6


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
    if u0.ndim != 2 or u0.shape[-1] < 4:
        raise ValueError(f"u0 must be (batch, N) with N >= 4 points, got {tuple(u0.shape)}")
    if not (math.isfinite(time) and time >= 0):
        raise ValueError(f"time must be a finite number >= 0, got {time!r}")
    positive("nu", nu)
    positive("cfl", cfl)
    positive("dt_max", dt_max)
    if dt is not None:
        positive("dt", dt)
    n, big_k = u0.shape[-1], band(u0.shape[-1])
    kk = 2 * math.pi * half_wavenumbers(n, u0.device)[: big_k + 1]
    lin = -nu * kk**2
    u_hat = torch.fft.rfft(u0.double())[:, : big_k + 1]
    check_finite(u_hat, 0.0, "burgers.solve")
    if dt is not None:
        steps = math.ceil(time / dt - 1e-12)
        h = torch.full((u0.shape[0], 1), time / max(steps, 1), dtype=torch.float64, device=u0.device)
        for _ in range(steps):
            u_hat = if_rk4_step(u_hat, h, lin, n)
        check_finite(u_hat, time, "burgers.solve")
        return _grid(u_hat, n)
    t = torch.zeros(u0.shape[0], dtype=torch.float64, device=u0.device)
    active = torch.ones(u0.shape[0], dtype=torch.bool, device=u0.device)
    for _ in range(max_steps):
        if not bool(active.any()):
            return _grid(u_hat, n)
        idx = active.nonzero()[:, 0]
        v = u_hat[idx]
        speed = torch.fft.irfft(v, n=n).abs().amax(dim=-1)
        left = time - t[idx]
        h = torch.clamp(cfl / (big_k * 2 * math.pi * speed), max=dt_max)
        last = h >= left
        h = torch.where(last, left, h)
        v = if_rk4_step(v, h[:, None], lin, n)
        check_finite(v, t[idx] + h, "burgers.solve")
        u_hat[idx] = v
        t[idx] = torch.where(last, time, t[idx] + h)
        active[idx[last]] = False
    raise FloatingPointError(f"burgers.solve: not at t = {time} after {max_steps} steps; is the solution blowing up?")


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
    normals = np.stack(
        [np.random.default_rng([_TAG, seed, i]).standard_normal((modes, 2)).T for i in range(count)]
    )  # (count, 2, modes)
    return grf_1d(torch.from_numpy(normals), n, sigma, tau, gamma)


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
    if count < 1 or points < 2 or batch < 1:
        raise ValueError(f"count, points and batch must be >= 1, >= 2, >= 1; got {count}, {points}, {batch}")
    if fine % points != 0:
        raise ValueError(f"fine must be a multiple of points, got fine = {fine}, points = {points}")
    if not 1 <= modes <= band(fine):
        raise ValueError(f"modes must be in 1 … (fine - 1) // 3 = {band(fine)}, got {modes}")
    params: dict[str, float] = {"count": count, "points": points, "seed": seed, "fine": fine, "modes": modes, "nu": nu}
    params |= {"time": time, "cfl": cfl, "sigma": sigma, "tau": TAU, "gamma": GAMMA}

    def make() -> dict[str, Tensor]:
        u0 = initial_conditions(count, fine, seed, modes, sigma)
        u1 = torch.cat([solve(u.to(device), time, nu, cfl=cfl).cpu() for u in torch.split(u0, batch)])
        return {"u0": u0[:, :: fine // points].contiguous(), "u1": u1[:, :: fine // points].contiguous()}

    out = cached(cache, "burgers", params, {"u0": (count, points), "u1": (count, points)}, make)
    return BurgersData(out["u0"], out["u1"])


def splits(
    seed: int = 0,
    *,
    full: bool = False,
    counts: tuple[int, int] = (1000, 200),
    cache: Path | None = None,
    device: torch.device | str = "cpu",
) -> tuple[BurgersData, BurgersData]:
    """FNO's 1000 training and 200 test pairs (``counts``; seeds ``2 seed`` and ``2 seed + 1``).

    Default: 256 points solved on 1024 (about half a minute of one CPU core for the 1200 pairs). ``full=True``:
    the paper's sizes, 1024 points solved on 8192 (FNO's generation grid) -- GPU-sized.
    """
    points, fine = (1024, 8192) if full else (256, 1024)
    return (
        dataset(counts[0], points, 2 * seed, fine=fine, cache=cache, device=device),
        dataset(counts[1], points, 2 * seed + 1, fine=fine, cache=cache, device=device),
    )
