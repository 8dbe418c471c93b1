"""The Burgers solver and data (operators.burgers).

References: the Cole--Hopf exact solution (a heat-equation solution mapped through ``u = -2ν φ_x / φ``), the
observed orders of convergence in ``dt`` (fourth, by design) and in the resolution (spectral, faster than any
power), and the GRF's covariance against the closed form of its Green's function on the circle.
"""

from __future__ import annotations

import cmath
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from operators import burgers
from operators.cache import CacheError
from operators.random_fields import grf_1d

STEEP = (0.1, 1.0, [0.99])  # ν, a, b: a front of width ≈ 0.02 and |u| up to 8.8 at t = 0
GENTLE = (0.1, 1.0, [0.5, 0.2])


pytestmark = pytest.mark.usefixtures("one_thread")


def _error(n: int, case: tuple[float, float, list[float]], t: float = 1.0, **kw: float) -> float:
    nu, a, b = case
    x = torch.arange(n, dtype=torch.float64) / n
    u = burgers.solve(burgers.cole_hopf(x, 0.0, nu, a, b)[None], t, nu, **kw)[0]  # type: ignore[arg-type]
    exact = burgers.cole_hopf(x, t, nu, a, b)
    return float((u - exact).norm() / exact.norm())


def test_cole_hopf_is_a_solution() -> None:
    # the reference itself: u_t + u u_x - ν u_xx by centred differences in x and t is O(h²) small
    nu, a, b = STEEP
    x, h = torch.linspace(0, 1, 2001, dtype=torch.float64), 1e-4
    u = burgers.cole_hopf(x, 0.3, nu, a, b)
    ut = (burgers.cole_hopf(x, 0.3 + h, nu, a, b) - burgers.cole_hopf(x, 0.3 - h, nu, a, b)) / (2 * h)
    ux = (burgers.cole_hopf(x + h, 0.3, nu, a, b) - burgers.cole_hopf(x - h, 0.3, nu, a, b)) / (2 * h)
    uxx = (burgers.cole_hopf(x + h, 0.3, nu, a, b) - 2 * u + burgers.cole_hopf(x - h, 0.3, nu, a, b)) / h**2
    assert float((ut + u * ux - nu * uxx).abs().max()) < 1e-4 * float(ut.abs().max())


@pytest.mark.parametrize("case", [GENTLE, STEEP])
def test_agrees_with_cole_hopf(case: tuple[float, float, list[float]]) -> None:
    assert _error(256, case) <= 1e-6


@pytest.mark.parametrize(("nu", "n"), [(0.01, 256), (0.001, 512)])
def test_agrees_with_cole_hopf_at_low_viscosity(nu: float, n: int) -> None:
    # a = 1, b = 0.999: φ nearly vanishes at x = 1/2, a front of width about 0.014 that decays over 1/(4π²ν)
    assert _error(n, (nu, 1.0, [0.999])) <= 1e-6


def test_trajectory_is_the_solution_at_each_time() -> None:
    nu, a, b = STEEP
    x = torch.arange(128, dtype=torch.float64) / 128
    times = [0.1, 0.25, 0.5]
    u = burgers.trajectory(burgers.cole_hopf(x, 0.0, nu, a, b)[None], times, nu)[0]
    assert u.shape == (3, 128)
    for i, t in enumerate(times):
        exact = burgers.cole_hopf(x, t, nu, a, b)
        assert float((u[i] - exact).norm() / exact.norm()) <= 1e-6, t


def test_fourth_order_in_dt() -> None:
    errors = [_error(64, GENTLE, dt=dt) for dt in (0.02, 0.01, 0.005)]
    orders = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert 3.5 < orders[-1] < 4.5, (errors, orders)


def test_spectral_convergence_in_resolution() -> None:
    # e_N ~ C ρ^N: each doubling of N divides the error by a factor that itself squares
    # (an algebraic rate N^-p would divide it by the same 2^p every time)
    e32, e64, e128 = (_error(n, STEEP, cfl=0.25) for n in (32, 64, 128))
    assert e64 < e32 / 10 and e128 < e64 / 100, (e32, e64, e128)
    assert math.log(e64 / e128) > 1.5 * math.log(e32 / e64), (e32, e64, e128)


def _green(r: float, tau: float, gamma: int) -> float:
    """``Σ_k e^{2πikr} / ((2πk)² + τ²)^γ`` for ``γ = 1, 2`` in closed form (complex step for ``γ = 2``)."""

    def g1(t: complex) -> complex:
        return cmath.cosh(t * (r - 0.5)) / (2 * t * cmath.sinh(t / 2))

    if gamma == 1:
        return g1(tau).real
    step = 1e-30  # d/d(τ²) = d/dτ / (2τ), by a complex step (no cancellation)
    return -(g1(complex(tau, step)).imag / step) / (2 * tau)


def test_initial_field_has_fno_covariance() -> None:
    # Cov(u(x), u(x + r)) = σ² (G_2(r) - τ^{-4}) with G_2 the Green's function of (-Δ + τ²)² on the circle
    sigma, tau, gamma = burgers.SIGMA, burgers.TAU, burgers.GAMMA
    u = burgers.initial_conditions(4000, 32, seed=7, modes=300)
    for lag in (0, 4, 8, 16):
        measured = float((u * u.roll(-lag, dims=1)).mean())
        exact = sigma**2 * (_green(lag / 32, tau, int(gamma)) - tau ** (-2 * gamma))
        assert abs(measured - exact) < 0.04 * sigma**2 * (_green(0, tau, 2) - tau**-4), (lag, measured, exact)


def test_grf_samples_are_the_series_at_the_nodes() -> None:
    normals = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 2, 9)))
    u = grf_1d(normals, 16, 1.0, 2.0, 2.0)  # 9 modes on 16 points: modes 8, 9 fold onto the grid
    x = torch.arange(16, dtype=torch.float64) / 16
    k = torch.arange(1, 10, dtype=torch.float64)
    amp = math.sqrt(2) * (4 * math.pi**2 * k**2 + 4) ** -1.0
    arg = 2 * math.pi * k[:, None] * x
    series = (amp[:, None] * (normals[:, 0, :, None] * arg.cos() + normals[:, 1, :, None] * arg.sin())).sum(1)
    torch.testing.assert_close(u, series, rtol=0, atol=1e-13)


def test_dataset_is_seeded_subsampled_and_independent_of_count() -> None:
    small = burgers.dataset(3, 16, seed=4, fine=256, modes=10)
    more = burgers.dataset(5, 16, seed=4, fine=256, modes=10)
    other = burgers.dataset(3, 16, seed=5, fine=256, modes=10)
    assert small.u0.shape == small.u1.shape == (3, 16) and small.u0.dtype == torch.float64
    torch.testing.assert_close(more.u0[:3], small.u0, rtol=0, atol=0)
    torch.testing.assert_close(more.u1[:3], small.u1, rtol=1e-12, atol=1e-14)
    assert not torch.allclose(other.u0, small.u0)
    # u0 is the initial field at j / 16; u1 the solution there, as a finer solve confirms
    torch.testing.assert_close(small.u0, burgers.initial_conditions(3, 64, 4, 10)[:, ::4], rtol=0, atol=1e-12)
    finer = burgers.dataset(3, 16, seed=4, fine=512, modes=10)
    torch.testing.assert_close(finer.u1, small.u1, rtol=0, atol=1e-6 * float(small.u1.abs().max()))


def test_trajectories_store_the_initial_condition_then_each_time() -> None:
    u = burgers.trajectories(3, 16, seed=4, steps=4, time=0.5, nu=0.1, fine=256, modes=10)
    assert u.shape == (3, 5, 16) and u.dtype == torch.float64
    pairs = burgers.dataset(3, 16, seed=4, fine=256, modes=10, time=0.5)
    torch.testing.assert_close(u[:, 0], pairs.u0, rtol=0, atol=0)  # the same initial conditions
    torch.testing.assert_close(u[:, -1], pairs.u1, rtol=0, atol=1e-9 * float(pairs.u1.abs().max()))
    mid = burgers.dataset(3, 16, seed=4, fine=256, modes=10, time=0.25).u1
    torch.testing.assert_close(u[:, 2], mid, rtol=0, atol=1e-9 * float(mid.abs().max()))
    with pytest.raises(ValueError, match="steps must be >= 1"):
        burgers.trajectories(3, 16, steps=0, fine=256, modes=10)


def test_splits_solve_low_viscosity_on_a_finer_grid() -> None:
    assert burgers.solve_grid(0.1, 256) == burgers.solve_grid(0.01, 256) == 1024
    assert burgers.solve_grid(0.001, 256) == 2048


@pytest.mark.slow
def test_low_viscosity_data_agree_with_twice_the_grid() -> None:
    # the ν = 0.001 data's own check: solved on 2048 nodes (splits) and on 4096, the same initial fields
    coarse = burgers.dataset(4, 256, seed=0, fine=2048, modes=341, nu=0.001)
    fine = burgers.dataset(4, 256, seed=0, fine=4096, modes=341, nu=0.001)
    assert float(((coarse.u1 - fine.u1).norm(dim=1) / fine.u1.norm(dim=1)).max()) < 1e-6


def test_dataset_cache_round_trip_and_damage(tmp_path: Path) -> None:
    made = burgers.dataset(2, 16, seed=1, fine=48, modes=8, cache=tmp_path)
    (path,) = tmp_path.glob("burgers-*.pt")
    again = burgers.dataset(2, 16, seed=1, fine=48, modes=8, cache=tmp_path)
    torch.testing.assert_close(again.u1, made.u1, rtol=0, atol=0)
    assert len(list(tmp_path.iterdir())) == 1  # no temporary left behind
    burgers.dataset(2, 16, seed=2, fine=48, modes=8, cache=tmp_path)
    assert len(list(tmp_path.glob("burgers-*.pt"))) == 2  # another seed: another file
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CacheError, match=rf"{path}.*delete it"):
        burgers.dataset(2, 16, seed=1, fine=48, modes=8, cache=tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fine": 100}, "fine must be a multiple of points"),
        ({"modes": 40}, "modes must be in"),
        ({"count": 0}, "count"),
    ],
)
def test_dataset_rejects_bad_arguments(kwargs: dict[str, int], match: str) -> None:
    args: dict[str, int] = {"count": 2, "points": 16, "fine": 64, "modes": 8} | kwargs
    with pytest.raises(ValueError, match=match):
        burgers.dataset(**args)  # type: ignore[arg-type]


def test_solver_rejects_bad_input_and_reports_a_blow_up() -> None:
    with pytest.raises(ValueError, match="nu must be a finite positive number"):
        burgers.solve(torch.zeros(1, 16), 1.0, 0.0)
    with pytest.raises(ValueError, match=r"u0 must be \(batch, N\)"):
        burgers.solve(torch.zeros(16), 1.0, 0.1)
    bad = torch.zeros(2, 16, dtype=torch.float64)
    bad[1, 3] = math.nan
    with pytest.raises(FloatingPointError, match=r"sample 1 .* t = 0; pass a smaller dt"):
        burgers.solve(bad, 1.0, 0.1)
    with pytest.raises(ValueError, match="phi > 0"):
        burgers.cole_hopf(torch.zeros(3), 0.0, 0.1, 1.0, [0.6, 0.5])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_agrees_with_the_cpu() -> None:
    u0 = burgers.initial_conditions(4, 128, seed=0, modes=20)
    cpu = burgers.solve(u0, 0.5, burgers.NU)
    torch.testing.assert_close(burgers.solve(u0.cuda(), 0.5, burgers.NU).cpu(), cpu, rtol=0, atol=1e-10)
