r"""``u_t + (u²/2)_x = L u`` on the periodic unit interval, ``L`` linear and diagonal in Fourier space: two schemes.

The equations of this form solved here: viscous Burgers (``L = ν ∂²``, :mod:`operators.burgers`) and KdV
(``L = -δ² ∂³``, :mod:`operators.kdv`). ``L`` is given by its symbol ``lin`` on the kept wavenumbers,
:math:`\widehat{Lu}_k = \ell_k \hat u_k` (real for dissipation, imaginary for dispersion).

**Space.** Fourier--Galerkin on ``N`` points: the state is the ``rfft`` coefficients :math:`\hat u_k`,
``|k| ≤ K = (N - 1) // 3`` (the 2/3 rule: :math:`u^2` is formed on the grid and truncated back to the band, which
is then exactly the Galerkin projection; the initial condition is projected onto the band). The flux term is
:math:`\hat N(\hat u) = -\tfrac{i}{2}(2\pi k)\,\widehat{u^2}`.

**Time** (Cox & Matthews 2002), both fourth order in ``dt`` and exact on ``L``:

* ``"if-rk4"``: an integrating factor :math:`e^{-\ell t}` and the classical Runge--Kutta on the rest. Stable for any
  dissipation (Burgers), but on a stiff dispersive ``L`` the rotating factor makes the flux of interacting modes
  oscillate faster than the step resolves, and it goes unstable (KdV: measured, the lab note);
* ``"etd-rk4"``: exponential time differencing, the flux integrated against the exact propagator; its
  coefficients :math:`\varphi(\ell h)` are evaluated by a contour integral of ``M = 32`` points around each
  :math:`\ell h` (Kassam & Trefethen 2005), so small :math:`|\ell h|` lose no digits. Stable for KdV.

**Step size.** Fixed (``dt=...``: equal steps ending exactly at each requested time) or, by default, chosen before
every step from the sample's own state by a CFL rule, :math:`dt = \text{cfl} / (2\pi K \max_x |u|)` (capped at
``dt_max`` and at the time left to the next requested time; ``"etd-rk4"`` rounds it down to a step of the ladder
``dt_max 2^{-j/4}``, so its coefficients are computed once per rung). Each sample steps on its own clock, so its
solution does not depend on the others in its batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from ._spectral import band, check_finite, flushed, half_wavenumbers, positive

Scheme = Literal["if-rk4", "etd-rk4"]
_CONTOUR = 32  # contour points of the ETD coefficients


def wavenumbers(n: int, device: torch.device | str = "cpu") -> Tensor:
    """The angular wavenumbers ``2πk`` of the kept band ``k = 0 … K`` on ``n`` points, float64 ``(K + 1,)``."""
    return 2 * math.pi * half_wavenumbers(n, device)[: band(n) + 1]


def nonlinear(u_hat: Tensor, n: int, kk: Tensor | None = None) -> Tensor:
    """``-(i 2πk / 2)`` times the band of ``rfft(u²)``: the flux term of coefficients ``u_hat`` ``(B, K + 1)``
    (``kk``: the band's ``2πk``, if the caller keeps them)."""
    if kk is None:
        kk = 2 * math.pi * half_wavenumbers(n, u_hat.device)[: u_hat.shape[-1]]
    u = torch.fft.irfft(u_hat, n=n)
    out: Tensor = -0.5j * kk * torch.fft.rfft(u * u)[:, : u_hat.shape[-1]]
    return out


def grid(u_hat: Tensor, n: int) -> Tensor:
    """Grid values ``(B, n)`` of band coefficients ``u_hat`` ``(B, K + 1)``."""
    u: Tensor = torch.fft.irfft(u_hat, n=n)
    return u


def if_rk4_step(u_hat: Tensor, h: Tensor, lin: Tensor, n: int, kk: Tensor | None = None) -> Tensor:
    """One IF-RK4 step of sizes ``h`` ``(B, 1)`` for ``û_t = lin û + N(û)`` (``lin`` ``(K + 1,)``, diagonal)."""
    e = torch.exp(lin * h / 2)
    e2 = e * e
    a = h * nonlinear(u_hat, n, kk)
    b = h * nonlinear(e * (u_hat + a / 2), n, kk)
    c = h * nonlinear(e * u_hat + b / 2, n, kk)
    d = h * nonlinear(e2 * u_hat + e * c, n, kk)
    return e2 * u_hat + (e2 * a + 2 * e * (b + c) + d) / 6


def etd_coefficients(lin: Tensor, h: Tensor) -> Tensor:
    """ETDRK4's coefficients for steps ``h`` ``(B,)``: ``(5, B, K + 1)`` complex, the rows ``e^{ℓh/2}`` and
    ``h`` times ``Q, f1, f2, f3`` of Kassam & Trefethen (2005, eq. 2.5), each a mean over ``M`` points of a circle of
    radius 1 around ``ℓh``."""
    z = lin.to(torch.complex128)[None, :] * h.to(torch.float64)[:, None]  # (B, K + 1)
    j = torch.arange(_CONTOUR, dtype=torch.float64, device=lin.device)
    r = torch.exp(2j * math.pi * (j + 0.5) / _CONTOUR)
    lr = z[..., None] + r  # (B, K + 1, M)
    e = torch.exp(lr)
    q = ((torch.exp(lr / 2) - 1) / lr).mean(-1)
    f1 = ((-4 - lr + e * (4 - 3 * lr + lr * lr)) / lr**3).mean(-1)
    f2 = ((2 + lr + e * (lr - 2)) / lr**3).mean(-1)
    f3 = ((-4 - 3 * lr - lr * lr + e * (4 - lr)) / lr**3).mean(-1)
    hh = h.to(torch.float64)[:, None]
    return torch.stack([torch.exp(z / 2), hh * q, hh * f1, hh * f2, hh * f3])


def etd_rk4_step(u_hat: Tensor, coefficients: Tensor, n: int, kk: Tensor | None = None) -> Tensor:
    """One ETDRK4 step of ``û_t = lin û + N(û)`` with :func:`etd_coefficients` ``(5, B, K + 1)``."""
    e2, q, f1, f2, f3 = coefficients
    nv = nonlinear(u_hat, n, kk)
    a = e2 * u_hat + q * nv
    na = nonlinear(a, n, kk)
    b = e2 * u_hat + q * na
    nb = nonlinear(b, n, kk)
    c = e2 * a + q * (2 * nb - nv)
    nc = nonlinear(c, n, kk)
    out: Tensor = e2 * e2 * u_hat + f1 * nv + 2 * f2 * (na + nb) + f3 * nc
    return out


class _Stepper:
    """One step of the chosen scheme for per-sample sizes, ETD coefficients kept per distinct step size."""

    def __init__(self, scheme: Scheme, lin: Tensor, n: int) -> None:
        self.scheme, self.lin, self.n = scheme, lin, n
        self.kk = wavenumbers(n, lin.device)[: len(lin)]
        self.kept: dict[float, Tensor] = {}

    def __call__(self, u_hat: Tensor, h: Tensor) -> Tensor:
        if self.scheme == "if-rk4":
            return if_rk4_step(u_hat, h[:, None], self.lin, self.n, self.kk)
        sizes, which = torch.unique(h, return_inverse=True)
        new = [float(s) for s in sizes if float(s) not in self.kept]
        if new:
            made = etd_coefficients(self.lin, torch.tensor(new, dtype=torch.float64, device=h.device))
            self.kept |= {s: made[:, i] for i, s in enumerate(new)}
        table = torch.stack([self.kept[float(s)] for s in sizes], 1)  # (5, S, K + 1)
        if len(sizes) == 1:
            return etd_rk4_step(u_hat, table[:, :1], self.n, self.kk)
        return etd_rk4_step(u_hat, table[:, which], self.n, self.kk)

    def rung(self, h: Tensor, dt_max: float) -> Tensor:
        """``h`` rounded down to the ladder ``dt_max 2^{-j/4}`` (ETD: few distinct sizes); as it is for IF-RK4."""
        if self.scheme == "if-rk4":
            return h
        j = torch.ceil(4 * torch.log2(dt_max / h) - 1e-9).clamp_min(0)
        return dt_max * torch.exp2(-j / 4)


def evolve(
    u0: Tensor,
    times: Sequence[float],
    lin: Tensor,
    *,
    what: str,
    scheme: Scheme = "if-rk4",
    dt: float | None = None,
    cfl: float = 1.0,
    dt_max: float = 1e-2,
    max_steps: int = 1_000_000,
) -> Tensor:
    """The states ``(B, len(times), N)`` at ``times`` (increasing, ``>= 0``) from samples ``u0`` ``(B, N)`` at
    ``j / N`` (float64, on ``u0``'s device), for the symbol ``lin`` ``(K + 1,)`` of ``L``.

    ``dt``: a fixed step; ``None`` picks each step by the CFL rule with ``cfl`` (and ``dt_max``). ``what`` names the
    caller in errors. A non-finite state raises :class:`FloatingPointError` naming the time.
    """
    if u0.ndim != 2 or u0.shape[-1] < 4:
        raise ValueError(f"{what}: u0 must be (batch, N) with N >= 4 points, got {tuple(u0.shape)}")
    if not times or any(not (math.isfinite(t) and t >= 0) for t in times) or list(times) != sorted(times):
        raise ValueError(f"{what}: times must be finite, >= 0 and increasing, got {list(times)!r}")
    positive("cfl", cfl)
    positive("dt_max", dt_max)
    if dt is not None:
        positive("dt", dt)
    n = u0.shape[-1]
    u_hat = torch.fft.rfft(u0.double())[:, : band(n) + 1]
    check_finite(u_hat, 0.0, what)
    stepper = _Stepper(scheme, lin, n)
    out, now = [], 0.0
    with flushed():
        for target in times:
            if dt is not None:
                steps = math.ceil((target - now) / dt - 1e-12)
                h = torch.full((u0.shape[0],), (target - now) / max(steps, 1), dtype=torch.float64, device=u0.device)
                for _ in range(steps):
                    u_hat = stepper(u_hat, h)
                check_finite(u_hat, target, what)
            else:
                u_hat = _adaptive(u_hat, now, target, stepper, (cfl, dt_max), max_steps, what)
            out.append(grid(u_hat, n))
            now = target
    return torch.stack(out, 1)


def _adaptive(
    u_hat: Tensor, start: float, end: float, stepper: _Stepper, rule: tuple[float, float], max_steps: int, what: str
) -> Tensor:
    """``u_hat`` at time ``start`` advanced to ``end``, each sample on its own CFL clock (``rule``: cfl, dt_max)."""
    (cfl, dt_max), span, n = rule, end - start, stepper.n
    u_hat = u_hat.clone()
    big_k = u_hat.shape[-1] - 1
    t = torch.zeros(u_hat.shape[0], dtype=torch.float64, device=u_hat.device)
    active = torch.ones(u_hat.shape[0], dtype=torch.bool, device=u_hat.device)
    for _ in range(max_steps):
        if not bool(active.any()) or span == 0:
            return u_hat
        idx = active.nonzero()[:, 0]
        v = u_hat[idx]
        speed = torch.fft.irfft(v, n=n).abs().amax(dim=-1)
        left = span - t[idx]
        h = stepper.rung(torch.clamp(cfl / (max(big_k, 1) * 2 * math.pi * speed), max=dt_max), dt_max)
        last = h >= left
        h = torch.where(last, left, h)
        v = stepper(v, h)
        check_finite(v, start + t[idx] + h, what)
        u_hat[idx] = v
        t[idx] = torch.where(last, span, t[idx] + h)
        active[idx[last]] = False
    raise FloatingPointError(f"{what}: not at t = {end} after {max_steps} steps; is the solution blowing up?")
