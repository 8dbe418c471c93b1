r"""The Korteweg--de Vries equation on the periodic unit interval: a pseudo-spectral solver, its exact soliton, data.

The equation (domain ``[0, 1)``, periodic, samples at ``x_j = j / P``):

.. math:: u_t + u u_x + \delta^2 u_{xxx} = 0, \qquad u(\cdot, 0) = u_0,

Zabusky and Kruskal's form (1965; theirs is on ``[0, 2)`` with ``δ = 0.022``, which is ``δ = 0.011`` on the unit
period with time doubled). A smooth initial bump steepens, and dispersion breaks the front into a train of
solitons with an oscillating tail: steep, narrow pulses moving at speeds set by their heights.

**Scheme.** :mod:`operators.flux_1d`'s ``"etd-rk4"``: Fourier--Galerkin with the 2/3 rule, exponential time
differencing (the dispersive term, its symbol :math:`i\delta^2(2\pi k)^3`, taken exactly however stiff), per-sample
CFL steps at ``cfl = 0.5`` (the integrating-factor scheme Burgers uses goes unstable here, and ETDRK4's step is
stable only up to about half the advective CFL limit on rough data: measured, the lab note).

**Exact check (the soliton).** :math:`u = 3c\,\mathrm{sech}^2\big(\sqrt c\,(x - x_0 - ct) / (2\delta)\big)` solves
the equation on the line for any speed ``c > 0`` (the standard soliton of :math:`U_T + 6UU_X + U_{XXX} = 0`,
:math:`U = \tfrac c2 \mathrm{sech}^2(\tfrac{\sqrt c}2(X - cT))`, under :math:`u = 6U(x/\delta, t/\delta)`). Its
tails fall as :math:`e^{-\sqrt c\,|x|/\delta}`, so the sum of its periodic images (:func:`soliton`) solves the
periodic problem to round-off when :math:`\sqrt c / (2\delta) \gg 20`.

**Data.** :math:`u_0` is the Burgers problem's field (FNO's ``GRF1``, ``σ = 25, τ = 5, γ = 2``, its own draws) on
its first 16 modes, ``δ = 0.022``, the map :math:`u_0 \mapsto u(\cdot, 1)`: a few solitons of heights up to about
4 and their dispersive tails. :func:`dataset` solves on ``fine`` points and keeps
every ``fine // points``-th: exact point values at ``j / points``. Shapes: ``(count, points)`` float64 on the CPU.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor

from . import flux_1d
from ._spectral import band, positive
from .burgers import GAMMA, SIGMA, TAU, BurgersData
from .cache import cached
from .random_fields import seeded_grf_1d

#: the data's dispersion coefficient, end time, and the initial field's modes (a smooth field: a rough one's
#: dispersive tail needs four times the grid and a quarter of the step to reach 1e-8)
DELTA, TIME, MODES = 0.022, 1.0, 16

#: the seed-sequence tag of the KdV initial conditions (apart from Burgers' draws)
_TAG = 0x6BD7


def symbol(n: int, delta: float, device: torch.device | str = "cpu") -> Tensor:
    """The symbol ``i δ² (2πk)³`` of ``-δ² ∂³`` on the kept band of ``n`` points, complex128 ``(K + 1,)``."""
    k = flux_1d.wavenumbers(n, device)
    return 1j * delta**2 * k**3


def solve(
    u0: Tensor,
    time: float,
    delta: float = DELTA,
    *,
    dt: float | None = None,
    cfl: float = 0.5,
    dt_max: float = 1e-2,
    max_steps: int = 1_000_000,
) -> Tensor:
    """``u(·, time)`` ``(B, N)`` from samples ``u0`` ``(B, N)`` at ``j / N`` (float64, on ``u0``'s device).

    ``dt``: a fixed step; ``None`` picks each step by the CFL rule with ``cfl`` (and ``dt_max``). A non-finite
    state raises :class:`FloatingPointError` naming the time.
    """
    if u0.ndim != 2 or u0.shape[-1] < 4:
        raise ValueError(f"u0 must be (batch, N) with N >= 4 points, got {tuple(u0.shape)}")
    if not (math.isfinite(time) and time >= 0):
        raise ValueError(f"time must be a finite number >= 0, got {time!r}")
    positive("delta", delta)
    lin = symbol(u0.shape[-1], delta, u0.device)
    out = flux_1d.evolve(
        u0, [time], lin, what="kdv.solve", scheme="etd-rk4", dt=dt, cfl=cfl, dt_max=dt_max, max_steps=max_steps
    )
    return out[:, 0]


def soliton(x: Tensor, t: float, c: float, delta: float = DELTA, x0: float = 0.0, images: int = 3) -> Tensor:
    """The soliton ``3c sech²(√c (x - x0 - ct) / (2δ))`` at points ``x`` (any shape) and time ``t``, summed over
    ``2 images + 1`` periodic images (exact to round-off on the unit period when ``√c / (2δ) ≫ 20``)."""
    positive("c", c)
    positive("delta", delta)
    x = x.double()
    shift = (x - x0 - c * t + 0.5) % 1.0 - 0.5  # the nearest image in [-1/2, 1/2)
    out = torch.zeros_like(x)
    for m in range(-images, images + 1):
        out = out + 3 * c / torch.cosh(math.sqrt(c) * (shift + m) / (2 * delta)) ** 2
    return out


def initial_conditions(count: int, n: int, seed: int, modes: int, sigma: float = SIGMA) -> Tensor:
    """``count`` seeded initial conditions ``(count, n)`` at ``j / n``: the Burgers problem's ``GRF1`` field
    (:func:`operators.random_fields.seeded_grf_1d`) with ``modes`` modes, drawn apart from Burgers' own."""
    return seeded_grf_1d(count, n, seed, modes, _TAG, sigma, TAU, GAMMA)


def dataset(
    count: int,
    points: int = 256,
    seed: int = 0,
    *,
    fine: int = 512,
    modes: int = MODES,
    delta: float = DELTA,
    time: float = TIME,
    sigma: float = SIGMA,
    cfl: float = 0.5,
    batch: int = 1024,
    device: torch.device | str = "cpu",
    cache: Path | None = None,
) -> BurgersData:
    """``count`` seeded pairs ``(u0, u(·, time))`` at ``points`` nodes, solved on ``fine`` nodes (a multiple of
    ``points``); ``modes``: the initial field's. The defaults agree with a solve on twice the grid at a quarter of
    the step to ``1e-5`` (measured, the lab note). Solved on ``device`` in batches of
    ``batch``, returned on the CPU; with ``cache`` (a directory), saved there keyed by every argument."""
    if count < 1 or points < 2 or batch < 1:
        raise ValueError(f"count, points and batch must be >= 1, >= 2, >= 1; got {count}, {points}, {batch}")
    if fine % points != 0:
        raise ValueError(f"fine must be a multiple of points, got fine = {fine}, points = {points}")
    if not 1 <= modes <= band(fine):
        raise ValueError(f"modes must be in 1 … (fine - 1) // 3 = {band(fine)}, got {modes}")
    params: dict[str, float] = {"count": count, "points": points, "seed": seed, "fine": fine, "modes": modes}
    params |= {"delta": delta, "time": time, "cfl": cfl, "sigma": sigma, "tau": TAU, "gamma": GAMMA}

    def make() -> dict[str, Tensor]:
        u0 = initial_conditions(count, fine, seed, modes, sigma)
        u1 = torch.cat([solve(u.to(device), time, delta, cfl=cfl).cpu() for u in torch.split(u0, batch)])
        return {"u0": u0[:, :: fine // points].contiguous(), "u1": u1[:, :: fine // points].contiguous()}

    out = cached(cache, "kdv", params, {"u0": (count, points), "u1": (count, points)}, make)
    return BurgersData(out["u0"], out["u1"])


def splits(
    seed: int = 0,
    *,
    counts: tuple[int, int] = (1000, 200),
    cache: Path | None = None,
    device: torch.device | str = "cpu",
) -> tuple[BurgersData, BurgersData]:
    """1000 training and 200 test pairs (``counts``; seeds ``2 seed`` and ``2 seed + 1``) at 256 points, solved on
    512 by :func:`dataset`'s defaults."""
    train = dataset(counts[0], 256, 2 * seed, cache=cache, device=device)
    return train, dataset(counts[1], 256, 2 * seed + 1, cache=cache, device=device)
