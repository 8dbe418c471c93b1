"""The KdV solver and data (operators.kdv) and the ETDRK4 scheme it uses (operators.flux_1d).

References: the exact soliton (checked as a solution by finite differences, then against the solver), the observed
order in ``dt`` (fourth, by design), ETDRK4's coefficients against their closed forms where those lose no digits,
the exact linear propagator on a mode too small to feel the flux, and a solve on twice the grid at a quarter of the
step (the data's refined reference).
"""

from __future__ import annotations

import cmath
import math
from pathlib import Path

import pytest
import torch

from operators import flux_1d, kdv
from operators.cache import CacheError

pytestmark = pytest.mark.usefixtures("one_thread")


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def test_the_soliton_is_a_solution() -> None:
    # u_t + u u_x + δ² u_xxx by centred differences is O(h²) small against its terms
    x, h, c = torch.linspace(0, 1, 4001, dtype=torch.float64), 2.5e-4, 1.3

    def u(dx: float = 0.0, dt: float = 0.0) -> torch.Tensor:
        return kdv.soliton(x + dx, 0.2 + dt, c, x0=0.3)

    ut = (u(dt=h) - u(dt=-h)) / (2 * h)
    ux = (u(h) - u(-h)) / (2 * h)
    uxxx = (u(2 * h) - 2 * u(h) + 2 * u(-h) - u(-2 * h)) / (2 * h**3)
    residual = ut + u() * ux + kdv.DELTA**2 * uxxx
    assert float(residual.abs().max()) < 1e-4 * float((u() * ux).abs().max())


@pytest.mark.parametrize("c", [0.5, 1.0])
def test_agrees_with_the_soliton(c: float) -> None:
    x = torch.arange(256, dtype=torch.float64) / 256
    u = kdv.solve(kdv.soliton(x, 0.0, c)[None], 0.5)[0]
    assert _rel(u, kdv.soliton(x, 0.5, c)) < 1e-5


def test_fourth_order_in_dt() -> None:
    x, c = torch.arange(256, dtype=torch.float64) / 256, 2.0
    u0, exact = kdv.soliton(x, 0.0, c)[None], kdv.soliton(x, 0.2, c)
    errors = [_rel(kdv.solve(u0, 0.2, dt=dt)[0], exact) for dt in (4e-4, 2e-4, 1e-4)]
    orders = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert 3.5 < orders[-1] < 5.5, (errors, orders)


def test_etd_coefficients_match_their_closed_forms() -> None:
    # away from z = 0 the textbook formulas lose no digits: the contour means must equal them
    z = torch.tensor([-3.0 + 2.0j, 0.5 - 4.0j, 7.0j], dtype=torch.complex128)
    got = flux_1d.etd_coefficients(z, torch.ones(1, dtype=torch.float64))[:, 0]
    for i, zi in enumerate(complex(v) for v in z):
        e = cmath.exp(zi)
        want = [
            cmath.exp(zi / 2),
            (cmath.exp(zi / 2) - 1) / zi,
            (-4 - zi + e * (4 - 3 * zi + zi * zi)) / zi**3,
            (2 + zi + e * (zi - 2)) / zi**3,
            (-4 - 3 * zi - zi * zi + e * (4 - zi)) / zi**3,
        ]
        for row, w in enumerate(want):
            assert abs(complex(got[row, i]) - w) < 1e-12 * max(1.0, abs(w)), (row, zi)
    # at z = 0 the limits 1, 1/2, 1/6, 1/6, 1/6
    zero = flux_1d.etd_coefficients(torch.zeros(1, dtype=torch.complex128), torch.ones(1, dtype=torch.float64))
    torch.testing.assert_close(zero[:, 0, 0].real, torch.tensor([1, 0.5, 1 / 6, 1 / 6, 1 / 6], dtype=torch.float64))


def test_a_small_mode_rotates_at_the_dispersion_relation() -> None:
    # u = ε cos 2πk(x + δ²(2πk)² t) solves the linearised equation; ε² of flux is below the tolerance
    x, eps, k, t = torch.arange(64, dtype=torch.float64) / 64, 1e-9, 5, 0.3
    speed = kdv.DELTA**2 * (2 * math.pi * k) ** 2
    u = kdv.solve((eps * torch.cos(2 * math.pi * k * x))[None], t)[0]
    torch.testing.assert_close(u, eps * torch.cos(2 * math.pi * k * (x + speed * t)), rtol=0, atol=1e-15)


def test_dataset_is_seeded_and_agrees_with_a_refined_solve() -> None:
    kw = {"fine": 128, "time": 0.2, "cfl": 0.125}
    small = kdv.dataset(2, 32, seed=4, **kw)  # type: ignore[arg-type]
    more = kdv.dataset(3, 32, seed=4, **kw)  # type: ignore[arg-type]
    assert small.u0.shape == small.u1.shape == (2, 32) and small.u0.dtype == torch.float64
    torch.testing.assert_close(more.u1[:2], small.u1, rtol=1e-12, atol=1e-14)
    assert not torch.allclose(kdv.dataset(2, 32, seed=5, **kw).u0, small.u0)  # type: ignore[arg-type]
    u0 = kdv.initial_conditions(2, 256, 4, kdv.MODES)
    torch.testing.assert_close(small.u0, u0[:, ::8], rtol=0, atol=1e-12)
    # twice the grid at the same cfl halves the step; the step sets the error (4th order), the grid does not
    refined = kdv.solve(u0, 0.2, cfl=0.125)[:, ::8]
    assert _rel(small.u1, refined) < 1e-5


def test_dataset_cache_round_trip_and_damage(tmp_path: Path) -> None:
    made = kdv.dataset(2, 16, seed=1, fine=64, modes=8, time=0.1, cache=tmp_path)
    (path,) = tmp_path.glob("kdv-*.pt")
    torch.testing.assert_close(kdv.dataset(2, 16, seed=1, fine=64, modes=8, time=0.1, cache=tmp_path).u1, made.u1)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CacheError, match=rf"{path}.*delete it"):
        kdv.dataset(2, 16, seed=1, fine=64, modes=8, time=0.1, cache=tmp_path)


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
        kdv.dataset(**args)  # type: ignore[arg-type]


def test_solver_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="delta must be a finite positive number"):
        kdv.solve(torch.zeros(1, 16), 1.0, 0.0)
    with pytest.raises(ValueError, match=r"u0 must be \(batch, N\)"):
        kdv.solve(torch.zeros(16), 1.0)
    with pytest.raises(ValueError, match="c must be a finite positive number"):
        kdv.soliton(torch.zeros(3), 0.0, -1.0)
    with pytest.raises(ValueError, match="times must be finite, >= 0 and increasing"):
        flux_1d.evolve(torch.zeros(1, 16), [0.5, 0.2], torch.zeros(6), what="test")
