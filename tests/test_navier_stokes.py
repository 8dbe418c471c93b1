"""The 2D Navier--Stokes vorticity solver and data (operators.navier_stokes).

References: Taylor--Green vortices (any vorticity on one shell ``|k|² = s`` decays exactly as
``e^{-4π²νst}``), the advection and the velocity of two-mode fields worked out by hand, the exact conservation
of energy and enstrophy by the inviscid Galerkin system, and the observed orders of convergence in ``dt``
(second with viscosity, third without, by design) and in the resolution (spectral).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from operators import navier_stokes as ns
from operators.cache import CacheError
from operators.random_fields import grf_2d_variance

SHELL = ((3, 4, 1.0, 0.1), (5, 0, 0.5, 0.3), (0, -5, 0.2, 1.0), (4, -3, 0.7, 2.0))  # |k|² = 25


pytestmark = pytest.mark.usefixtures("one_thread")


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def _grid(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.arange(n, dtype=torch.float64) / n
    return x[:, None], x[None, :]


def test_taylor_green_decays_exactly() -> None:
    classic = ns.taylor_green(32, 0.0, 1e-3)[None]
    assert _rel(ns.solve(classic, 2.0, 1e-3), ns.taylor_green(32, 2.0, 1e-3)) <= 1e-6  # adaptive steps
    shell = ns.taylor_green(32, 0.0, 1e-3, SHELL)[None]
    assert _rel(ns.solve(shell, 1.0, 1e-3, dt=2e-3), ns.taylor_green(32, 1.0, 1e-3, SHELL)) <= 1e-6


def test_second_order_in_dt_on_taylor_green() -> None:
    exact = ns.taylor_green(32, 1.0, 0.01, SHELL)
    w0 = ns.taylor_green(32, 0.0, 0.01, SHELL)[None]
    errors = [_rel(ns.solve(w0, 1.0, 0.01, dt=dt), exact) for dt in (0.02, 0.01, 0.005)]
    orders = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert all(1.9 < p < 2.1 for p in orders), (errors, orders)


def _self_orders(w0: torch.Tensor, nu: float, forcing: torch.Tensor | None) -> list[float]:
    """Orders from differences of solutions at ``dt = 1/10, 1/20, 1/40, 1/80`` (Richardson, no reference)."""
    ws = [ns.solve(w0, 1.0, nu, forcing, dt=1 / m) for m in (10, 20, 40, 80)]
    diffs = [_rel(ws[i], ws[i + 1]) for i in range(3)]
    return [math.log2(diffs[i] / diffs[i + 1]) for i in range(2)]


def test_third_order_without_viscosity_second_with() -> None:
    w0 = 4 * ns.initial_vorticity(2, 32, seed=3, modes=4)
    inviscid = _self_orders(w0, 0.0, None)
    assert 2.8 < inviscid[-1] < 3.2, inviscid
    viscous = _self_orders(w0, 0.01, ns.fno_forcing(32))
    assert 1.9 < viscous[-1] < 2.3, viscous


def test_spectral_convergence_in_resolution() -> None:
    def final(n: int) -> torch.Tensor:
        return ns.solve(4 * ns.initial_vorticity(2, n, seed=3, modes=4), 1.0, 0.01, ns.fno_forcing(n), dt=0.01)

    ref = final(96)
    e16, e32 = (_rel(final(n), ref[:, :: 96 // n, :: 96 // n]) for n in (16, 32))
    e24 = _rel(final(24), ref[:, ::4, ::4])
    assert e24 < e16 / 10 and e32 < e24 / 100, (e16, e24, e32)


def test_velocity_and_advection_by_hand() -> None:
    x, y = _grid(32)
    # ω = cos 2πx + cos 4πy: ψ = cos 2πx / 4π² + cos 4πy / 16π², u = (ψ_y, -ψ_x)
    w = (torch.cos(2 * math.pi * x) + torch.cos(4 * math.pi * y))[None]
    u, v = ns.velocity(w)
    torch.testing.assert_close(u[0], (-torch.sin(4 * math.pi * y) / (4 * math.pi)).expand(32, 32), rtol=0, atol=1e-14)
    torch.testing.assert_close(v[0], (torch.sin(2 * math.pi * x) / (2 * math.pi)).expand(32, 32), rtol=0, atol=1e-14)
    want = -1.5 * torch.sin(2 * math.pi * x) * torch.sin(4 * math.pi * y)
    torch.testing.assert_close(ns.advection(w)[0], want, rtol=0, atol=1e-13)


def test_inviscid_galerkin_conserves_energy_and_enstrophy() -> None:
    # the dealiased semi-discrete system conserves both exactly: the drift is the time error alone, which
    # falls at least as dt³ (an aliased product would leave a drift that does not vanish with dt)
    w0 = ns.initial_vorticity(2, 32, seed=5, modes=10) * 8

    def drifts(dt: float) -> tuple[float, float]:
        w1 = ns.solve(w0, 1.0, 0.0, dt=dt)
        assert _rel(w1, w0) > 0.1  # the flow did move
        energy = [torch.stack(ns.velocity(w)).pow(2).sum((0, -2, -1)) for w in (w0, w1)]
        enstrophy = [w.pow(2).sum((-2, -1)) for w in (w0, w1)]
        de, dz = (float(((q[1] - q[0]) / q[0]).abs().max()) for q in (energy, enstrophy))
        return de, dz

    coarse, fine = drifts(4e-3), drifts(2e-3)
    assert max(fine) < 1e-6, fine
    assert all(f < c / 7 for f, c in zip(fine, coarse, strict=True)), (coarse, fine)


def test_initial_vorticity_has_fno_variance() -> None:
    # pointwise variance Σ_{k ≠ 0} 2σ² λ_k^{-α} (FNO's GaussianRF: k and -k drawn independently)
    w = ns.initial_vorticity(2000, 16, seed=1, modes=5)
    k = range(-5, 6)
    exact = sum(
        2 * ns.SIGMA**2 * (4 * math.pi**2 * (a * a + b * b) + ns.TAU**2) ** -ns.ALPHA for a in k for b in k if a or b
    )
    assert exact == pytest.approx(grf_2d_variance(5, ns.SIGMA, ns.TAU, ns.ALPHA), rel=1e-12)
    assert float(w.var()) == pytest.approx(exact, rel=0.04)


def test_dataset_layout_seeds_and_subsampling(tmp_path: Path) -> None:
    w = ns.dataset(3, 16, seed=2, steps=2, fine=32, modes=5, cache=tmp_path)
    assert w.shape == (3, 3, 16, 16) and w.dtype == torch.float64
    torch.testing.assert_close(w[:, 0], ns.initial_vorticity(3, 32, 2, 5)[:, ::2, ::2], rtol=0, atol=1e-13)
    # snapshot j is the solution at t = j, from a direct solve on the fine grid
    direct = ns.solve(ns.initial_vorticity(3, 32, 2, 5), 2.0, ns.NU, ns.fno_forcing(32), cfl=0.25, dt_max=0.01)
    torch.testing.assert_close(w[:, 2], direct[:, ::2, ::2], rtol=0, atol=1e-5 * float(direct.abs().max()))
    two = ns.dataset(2, 16, seed=2, steps=2, fine=32, modes=5)
    torch.testing.assert_close(two, w[:2], rtol=1e-12, atol=1e-14)
    assert len(list(tmp_path.glob("navier_stokes-*.pt"))) == 1
    torch.testing.assert_close(ns.dataset(3, 16, seed=2, steps=2, fine=32, modes=5, cache=tmp_path), w, rtol=0, atol=0)
    (path,) = tmp_path.glob("navier_stokes-*.pt")
    path.write_bytes(b"not a tensor file")
    with pytest.raises(CacheError, match=rf"{path}.*delete it"):
        ns.dataset(3, 16, seed=2, steps=2, fine=32, modes=5, cache=tmp_path)


def test_bad_input_is_named_and_a_blow_up_reported() -> None:
    with pytest.raises(ValueError, match="fine must be a multiple of points"):
        ns.dataset(1, 16, fine=40)
    with pytest.raises(ValueError, match="waves must share one nonzero"):
        ns.taylor_green(16, 0.0, 0.1, ((1, 0, 1.0, 0.0), (1, 1, 1.0, 0.0)))
    with pytest.raises(ValueError, match=r"forcing must be \(n, n\)"):
        ns.solve(torch.zeros(1, 16, 16), 1.0, 0.1, torch.zeros(8, 8))
    w0 = 50 * ns.initial_vorticity(1, 16, seed=0, modes=5)
    with pytest.raises(FloatingPointError, match=r"non-finite by t = .*smaller dt"):
        ns.solve(w0, 1000.0, 0.0, dt=0.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_agrees_with_the_cpu() -> None:
    w0, f = ns.initial_vorticity(3, 32, seed=0, modes=10), ns.fno_forcing(32)
    cpu = ns.trajectory(w0, 2, 1.0, ns.NU, f)
    torch.testing.assert_close(ns.trajectory(w0.cuda(), 2, 1.0, ns.NU, f.cuda()).cpu(), cpu, rtol=0, atol=1e-10)
