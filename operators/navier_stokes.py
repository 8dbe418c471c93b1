r"""2D incompressible Navier--Stokes in vorticity form on the unit torus: a pseudo-spectral solver, exact checks, data.

The equations (Li et al. 2021, §5.3; periodic ``[0, 1)^2``, grid values ``w[..., i, j]`` at ``(i / N, j / N)``:
``x`` along the first grid axis, ``y`` along the second):

.. math:: \omega_t + u\cdot\nabla\omega = \nu\Delta\omega + f, \qquad u = \nabla^\perp\psi = (\psi_y, -\psi_x),
   \qquad -\Delta\psi = \omega,

so that :math:`\omega = \partial_x u_2 - \partial_y u_1` (the mean of :math:`\psi` is zero; the mean of
:math:`\omega` is conserved: zero for the data).

**Space.** Fourier--Galerkin on ``N × N`` points with the 2/3 rule: the state is the ``rfft2`` coefficients
with ``|k_x|, |k_y| ≤ K = (N - 1) // 3``; :math:`u\cdot\nabla\omega` is formed on the grid from the four
spectral derivatives and truncated back to the band (exactly the Galerkin projection); the initial vorticity
and the forcing are projected onto the band.

**Time.** The low-storage third-order Runge--Kutta / Crank--Nicolson scheme of Spalart, Moser & Rogers (1991,
appendix A): three substeps, each explicit in the advection and forcing (weights ``γ = 8/15, 5/12, 3/4``,
``ζ = 0, -17/60, -5/12``) and Crank--Nicolson in the viscous term (``α = β = 4/15, 1/15, 1/6``). It is
second order in ``dt`` (third order without viscosity), stable for advection up to a CFL number ``√3`` and
for any viscous stiffness; it costs three evaluations of the advection per step. (FNO's own generator
is Crank--Nicolson with a forward-Euler advection at ``dt = 1e-4``.) The step is fixed (``dt=...``) or chosen
before every step from each sample's own velocity, :math:`dt = \text{cfl}/(2\pi K (\max|u_1| + \max|u_2|))`,
capped at ``dt_max`` and at the time left, each sample on its own clock.

**Exact check (Taylor--Green).** A vorticity whose modes all lie on one shell :math:`|k|^2 = s` has
:math:`\psi = \omega / (4\pi^2 s)`, so :math:`u\cdot\nabla\omega = 0` and it decays as
:math:`e^{-4\pi^2\nu s t}` (:func:`taylor_green`; the classic vortex is ``sin 2πx sin 2πy``, ``s = 2``).

**Data.** FNO's problem: :math:`\nu = 10^{-3}`, :math:`f = 0.1(\sin 2\pi(x + y) + \cos 2\pi(x + y))`,
:math:`\omega_0` FNO's ``GaussianRF`` with ``α = 2.5, τ = 7, σ = 7^{3/2}`` (covariance
:math:`2\cdot 7^3(-\Delta + 49I)^{-2.5}`, :mod:`operators.random_fields`). :func:`dataset` records the vorticity at
``t = 0, 1, …, T``: ``(count, T + 1, points, points)`` float64 on the CPU, solved on ``fine`` points and
subsampled (every ``fine // points``-th node: exact point values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ._spectral import band, check_finite, full_wavenumbers, half_wavenumbers, positive
from .cache import cached
from .random_fields import grf_2d

#: FNO's problem: viscosity; the initial field's τ, exponent α and amplitude σ = τ^(α - 1)
NU, TAU, ALPHA = 1e-3, 7.0, 2.5
SIGMA = TAU ** (ALPHA - 1)
#: the initial field's wavenumbers: |k_x|, |k_y| ≤ MODES (all a 64-point grid keeps under the 2/3 rule)
MODES = 21
#: Spalart, Moser & Rogers' RK3/CN coefficients: explicit (γ, ζ), implicit (α = β)
_GAMMA = (8 / 15, 5 / 12, 3 / 4)
_ZETA = (0.0, -17 / 60, -5 / 12)
_CN = (4 / 15, 1 / 15, 1 / 6)


class Grid:
    """The spectral operators of an ``n × n`` torus grid on ``device``: wavenumbers, band, inverse Laplacian."""

    def __init__(self, n: int, device: torch.device | str = "cpu") -> None:
        if n < 4:
            raise ValueError(f"the grid needs n >= 4 points a side, got {n}")
        self.n, self.band = n, band(n)
        kx = full_wavenumbers(n, device)[:, None]  # (n, 1)
        ky = half_wavenumbers(n, device)[None, :]  # (1, n // 2 + 1)
        self.ikx, self.iky = 2j * math.pi * kx, 2j * math.pi * ky
        k2 = kx**2 + ky**2
        self.mask = (kx.abs() <= self.band) & (ky <= self.band)
        self.lap = -4 * math.pi**2 * k2  # the Laplacian's symbol
        self.inv_lap = torch.where(k2 > 0, -1 / torch.where(k2 > 0, self.lap, 1.0), 0.0)  # ψ̂ = ω̂ / (4π²|k|²)

    def spectral(self, w: Tensor) -> Tensor:
        """The band of ``rfft2(w)`` (``w`` ``(B, n, n)``): zero outside ``|k_i| ≤ K``."""
        w_hat: Tensor = torch.fft.rfft2(w.double()) * self.mask
        return w_hat

    def physical(self, w_hat: Tensor) -> Tensor:
        """Grid values ``(B, n, n)`` of coefficients ``w_hat``."""
        w: Tensor = torch.fft.irfft2(w_hat, s=(self.n, self.n))
        return w

    def velocity_hat(self, w_hat: Tensor) -> tuple[Tensor, Tensor]:
        """``(û_1, û_2) = (∂_y ψ̂, -∂_x ψ̂)`` with ``ψ̂ = ω̂ / (4π²|k|²)``."""
        psi = w_hat * self.inv_lap
        return self.iky * psi, -self.ikx * psi

    def advection_hat(self, w_hat: Tensor) -> tuple[Tensor, Tensor]:
        """The band of ``rfft2(u·∇ω)``, and ``max|u_1| + max|u_2|`` per sample ``(B,)``."""
        u_hat, v_hat = self.velocity_hat(w_hat)
        u, v = self.physical(u_hat), self.physical(v_hat)
        wx, wy = self.physical(self.ikx * w_hat), self.physical(self.iky * w_hat)
        speed = u.abs().amax(dim=(-2, -1)) + v.abs().amax(dim=(-2, -1))
        return torch.fft.rfft2(u * wx + v * wy) * self.mask, speed


def velocity(w: Tensor) -> tuple[Tensor, Tensor]:
    """The velocity ``(u_1, u_2)``, each ``(B, n, n)``, of vorticity grid values ``w`` ``(B, n, n)`` (band-limited)."""
    g = Grid(w.shape[-1], w.device)
    u_hat, v_hat = g.velocity_hat(g.spectral(w))
    return g.physical(u_hat), g.physical(v_hat)


def advection(w: Tensor) -> Tensor:
    """``u·∇ω`` ``(B, n, n)`` of vorticity grid values ``w`` ``(B, n, n)``, dealiased (2/3 rule)."""
    g = Grid(w.shape[-1], w.device)
    return g.physical(g.advection_hat(g.spectral(w))[0])


def _rk3cn_step(g: Grid, w_hat: Tensor, f_hat: Tensor, h: Tensor, nu: float, first: Tensor | None = None) -> Tensor:
    """One RK3/CN step of sizes ``h`` ``(B, 1, 1)``; ``first`` is the advection at ``w_hat`` if already known."""
    lin = nu * g.lap
    prev: Tensor | None = None
    for s in range(3):
        adv = first if s == 0 and first is not None else g.advection_hat(w_hat)[0]
        rhs = f_hat - adv
        explicit = _GAMMA[s] * rhs if prev is None else _GAMMA[s] * rhs + _ZETA[s] * prev
        w_hat = ((1 + _CN[s] * h * lin) * w_hat + h * explicit) / (1 - _CN[s] * h * lin)
        prev = rhs
    return w_hat


def solve(
    w0: Tensor,
    time: float,
    nu: float,
    forcing: Tensor | None = None,
    *,
    dt: float | None = None,
    cfl: float = 0.5,
    dt_max: float = 0.02,
    max_steps: int = 1_000_000,
) -> Tensor:
    """The vorticity at ``time`` ``(B, n, n)`` from ``w0`` ``(B, n, n)`` (float64, on ``w0``'s device).

    ``forcing``: ``(n, n)`` or ``(B, n, n)`` grid values of ``f`` (``None``: no forcing). ``dt``: a fixed step;
    ``None`` picks each step by the CFL rule. A non-finite state raises :class:`FloatingPointError`.
    """
    if w0.ndim != 3 or w0.shape[-1] != w0.shape[-2]:
        raise ValueError(f"w0 must be (batch, n, n) grid values, got {tuple(w0.shape)}")
    if forcing is not None and (forcing.shape[-2:] != w0.shape[-2:] or forcing.ndim not in (2, 3)):
        raise ValueError(
            f"forcing must be (n, n) or (batch, n, n) like w0 {tuple(w0.shape)}, got {tuple(forcing.shape)}"
        )
    if not (math.isfinite(time) and time >= 0):
        raise ValueError(f"time must be a finite number >= 0, got {time!r}")
    if not (math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be a finite number >= 0, got {nu!r}")
    positive("cfl", cfl)
    positive("dt_max", dt_max)
    if dt is not None:
        positive("dt", dt)
    g = Grid(w0.shape[-1], w0.device)
    w_hat = g.spectral(w0)
    f_hat = torch.zeros_like(w_hat[:1]) if forcing is None else g.spectral(forcing.to(w0.device).expand_as(w0))
    check_finite(w_hat, 0.0, "navier_stokes.solve")
    batch = w0.shape[0]
    if dt is not None:
        steps = math.ceil(time / dt - 1e-12)
        h = torch.full((batch, 1, 1), time / max(steps, 1), dtype=torch.float64, device=w0.device)
        for j in range(steps):
            w_hat = _rk3cn_step(g, w_hat, f_hat, h, nu)
            if j % 100 == 99:
                check_finite(w_hat, (j + 1) * time / steps, "navier_stokes.solve")
        check_finite(w_hat, time, "navier_stokes.solve")
        return g.physical(w_hat)
    t = torch.zeros(batch, dtype=torch.float64, device=w0.device)
    active = torch.ones(batch, dtype=torch.bool, device=w0.device)
    for _ in range(max_steps):
        if not bool(active.any()):
            return g.physical(w_hat)
        idx = active.nonzero()[:, 0]
        v, fv = w_hat[idx], f_hat if f_hat.shape[0] == 1 else f_hat[idx]
        adv, speed = g.advection_hat(v)
        left = time - t[idx]
        h = torch.clamp(cfl / (2 * math.pi * g.band * speed), max=dt_max)
        last = h >= left
        h = torch.where(last, left, h)
        v = _rk3cn_step(g, v, fv, h[:, None, None], nu, first=adv)
        check_finite(v, t[idx] + h, "navier_stokes.solve")
        w_hat[idx] = v
        t[idx] = torch.where(last, time, t[idx] + h)
        active[idx[last]] = False
    raise FloatingPointError(f"navier_stokes.solve: not at t = {time} after {max_steps} steps; blowing up?")


def trajectory(
    w0: Tensor,
    steps: int,
    interval: float,
    nu: float,
    forcing: Tensor | None = None,
    *,
    dt: float | None = None,
    cfl: float = 0.5,
    dt_max: float = 0.02,
) -> Tensor:
    """The vorticity at ``t = j · interval``, ``j = 0 … steps``: ``(B, steps + 1, n, n)`` from ``w0`` ``(B, n, n)``."""
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    g = Grid(w0.shape[-1], w0.device)
    out = [g.physical(g.spectral(w0))]
    for _ in range(steps):
        out.append(solve(out[-1], interval, nu, forcing, dt=dt, cfl=cfl, dt_max=dt_max))
    return torch.stack(out, dim=1)


def taylor_green(
    n: int, t: float, nu: float, waves: Sequence[tuple[int, int, float, float]] = ((1, 1, 1.0, 0.0),)
) -> Tensor:
    """The exact decaying vorticity ``(n, n)`` on one shell: ``Σ a cos(2π(k_x x + k_y y) + φ) e^{-4π²ν|k|²t}``.

    ``waves``: ``(k_x, k_y, a, φ)`` with one common ``k_x² + k_y² > 0`` (then ``u·∇ω = 0`` exactly).
    """
    shells = {kx * kx + ky * ky for kx, ky, _, _ in waves}
    if len(shells) != 1 or 0 in shells:
        raise ValueError(f"waves must share one nonzero |k|^2 to be an exact solution, got |k|^2 in {sorted(shells)}")
    x = torch.arange(n, dtype=torch.float64) / n
    decay = math.exp(-4 * math.pi**2 * nu * shells.pop() * t)
    w = torch.zeros(n, n, dtype=torch.float64)
    for kx, ky, a, phase in waves:
        w += a * torch.cos(2 * math.pi * (kx * x[:, None] + ky * x[None, :]) + phase)
    return w * decay


def fno_forcing(n: int) -> Tensor:
    """FNO's forcing ``0.1 (sin 2π(x + y) + cos 2π(x + y))`` at ``(i / n, j / n)``: ``(n, n)`` float64."""
    x = torch.arange(n, dtype=torch.float64) / n
    s = 2 * math.pi * (x[:, None] + x[None, :])
    return 0.1 * (torch.sin(s) + torch.cos(s))


#: the seed-sequence tag of the initial vorticities (keeps them apart from other generators' draws)
_TAG = 0x5A5E7


def initial_vorticity(
    count: int, n: int, seed: int, modes: int = MODES, sigma: float = SIGMA, tau: float = TAU, alpha: float = ALPHA
) -> Tensor:
    """``count`` seeded initial vorticities ``(count, n, n)``: FNO's field on ``|k_x|, |k_y| ≤ modes``.

    Sample ``i`` is drawn by its own generator seeded ``(tag, seed, i)``: the same whatever ``count`` and ``n``.
    """
    side = 2 * modes + 1
    normals = np.stack([np.random.default_rng([_TAG, seed, i]).standard_normal((2, side, side)) for i in range(count)])
    return grf_2d(torch.from_numpy(normals), n, sigma, tau, alpha)


def dataset(
    count: int,
    points: int = 64,
    seed: int = 0,
    *,
    steps: int = 20,
    fine: int | None = None,
    modes: int = MODES,
    nu: float = NU,
    cfl: float = 1.0,
    dt_max: float = 0.02,
    batch: int = 256,
    device: torch.device | str = "cpu",
    cache: Path | None = None,
) -> Tensor:
    """``count`` seeded trajectories ``(count, steps + 1, points, points)``: the vorticity at ``t = 0, 1, …, steps``.

    FNO's problem (``NU``, :func:`fno_forcing`, :func:`initial_vorticity`), solved on ``fine`` points a side
    (default ``points``; a multiple of it) and subsampled. Solved on ``device`` in batches of ``batch``, returned
    on the CPU. With ``cache`` (a directory), saved there keyed by every argument and read back next time.
    """
    fine = points if fine is None else fine
    if count < 1 or points < 4 or steps < 0 or batch < 1:
        raise ValueError(
            f"count, points, steps, batch must be >= 1, >= 4, >= 0, >= 1; got {count}, {points}, {steps}, {batch}"
        )
    if fine % points != 0:
        raise ValueError(f"fine must be a multiple of points, got fine = {fine}, points = {points}")
    if not 1 <= modes <= band(fine):
        raise ValueError(f"modes must be in 1 … (fine - 1) // 3 = {band(fine)}, got {modes}")
    params: dict[str, float] = {"count": count, "points": points, "seed": seed, "steps": steps, "fine": fine}
    params["modes"] = modes
    params |= {"nu": nu, "cfl": cfl, "dt_max": dt_max, "sigma": SIGMA, "tau": TAU, "alpha": ALPHA}

    def make() -> dict[str, Tensor]:
        w0 = initial_vorticity(count, fine, seed, modes)
        f = fno_forcing(fine).to(device)
        every = fine // points
        parts = [
            trajectory(w.to(device), steps, 1.0, nu, f, cfl=cfl, dt_max=dt_max)[..., ::every, ::every]
            for w in torch.split(w0, batch)
        ]
        return {"w": torch.cat([p.cpu() for p in parts]).contiguous()}

    return cached(cache, "navier_stokes", params, {"w": (count, steps + 1, points, points)}, make)["w"]


def splits(
    seed: int = 0,
    *,
    full: bool = False,
    counts: tuple[int, int] | None = None,
    cache: Path | None = None,
    device: torch.device | str = "cpu",
) -> tuple[Tensor, Tensor]:
    """Training and test trajectories (seeds ``2 seed`` and ``2 seed + 1``) at 64² points.

    Default: 200 and 50 trajectories of 20 time units, solved at 64² (about four minutes of one CPU core).
    ``full=True``: the paper's sizes, 1000 and 200 trajectories of 50 time units solved at 256² (FNO's
    generation grid) -- GPU-sized. ``counts`` overrides the numbers of trajectories.
    """
    n_train, n_test, steps, fine = (1000, 200, 50, 256) if full else (200, 50, 20, 64)
    n_train, n_test = (n_train, n_test) if counts is None else counts
    return (
        dataset(n_train, 64, 2 * seed, steps=steps, fine=fine, cache=cache, device=device),
        dataset(n_test, 64, 2 * seed + 1, steps=steps, fine=fine, cache=cache, device=device),
    )
