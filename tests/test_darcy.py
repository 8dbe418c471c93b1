"""The Darcy example: finite-difference solver, Gaussian random coefficients, the zero boundary, training job.

References: manufactured solutions (``u``, ``a`` chosen, ``f = -∇·(a∇u)`` differentiated by hand) with
second-order convergence; a layered discontinuous ``a(x)`` whose exact solution is known in closed form;
the operator assembled by a plain Python loop over the stencil; the GRF's coefficient variances measured
by an independent quadrature projection; numpy's ``chebmul`` for the zero boundary's factor ``1 - t²``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch

from examples.darcy.__main__ import main
from instances.axes import ZERO
from operators import symmetry
from operators.darcy import data
from operators.darcy.solver import DarcySolver
from training import load_checkpoint
from training.checkpoint import save_checkpoint
from training.loop import CHECKPOINT
from training.tasks.darcy import load
from training.tasks.darcy.config import PRESETS
from training.tasks.darcy.model import SHAPE
from training.tasks.darcy.train import train

pytestmark = pytest.mark.usefixtures("one_thread")


def _smooth_error(n: int) -> float:
    s = DarcySolver(n + 1)
    x, y = np.meshgrid(s.grid, s.grid, indexing="ij")
    e, sx, cx, s2, c2 = np.exp(x), np.sin(np.pi * x), np.cos(np.pi * x), np.sin(2 * np.pi * y), np.cos(2 * np.pi * y)
    u = sx * s2 * e
    ux, uy = (np.pi * cx + sx) * e * s2, sx * e * 2 * np.pi * c2
    lap = (-(np.pi**2) * sx + 2 * np.pi * cx + sx) * e * s2 - 4 * np.pi**2 * u
    a, ax, ay = 2 + np.sin(3 * x + y), 3 * np.cos(3 * x + y), np.cos(3 * x + y)
    f = -(a * lap + ax * ux + ay * uy)
    return float(np.abs(s.solve(a, f) - u).max())


def _layered_error(n: int, xi: float, lo: float = 3.0, hi: float = 12.0) -> float:
    # a = lo for x < xi, hi beyond; u = φ(x)/a(x) sin(πy) with φ(0) = φ(xi) = φ(1) = 0 is continuous, a u_x is
    # continuous (φ'), and f = (-φ'' + π² φ) sin(πy) is smooth: the exact solution has a kink at x = xi
    s = DarcySolver(n + 1)
    x, y = np.meshgrid(s.grid, s.grid, indexing="ij")
    a = np.where(x < xi, lo, hi)
    phi, phi2 = x * (x - xi) * (x - 1), 6 * x - 2 * (1 + xi)
    f = (-phi2 + np.pi**2 * phi) * np.sin(np.pi * y)
    return float(np.abs(s.solve(a, f) - phi / a * np.sin(np.pi * y)).max())


def _orders(errors: list[float], sizes: list[int]) -> list[float]:
    return [math.log(errors[i] / errors[i + 1]) / math.log(sizes[i + 1] / sizes[i]) for i in range(len(sizes) - 1)]


def test_manufactured_smooth_second_order() -> None:
    sizes = [16, 32, 64]
    errors = [_smooth_error(n) for n in sizes]
    assert errors[-1] < 2e-3
    assert all(1.9 < p < 2.1 for p in _orders(errors, sizes))


def test_layered_interface_between_nodes_second_order() -> None:
    # xi = 5/24 lies half-way between two nodes for N = 12, 36, 108: the harmonic mean is the exact conductance
    sizes = [12, 36, 108]
    errors = [_layered_error(n, 5 / 24) for n in sizes]
    assert errors[-1] < 5e-6
    assert all(p > 1.8 for p in _orders(errors, sizes))


def test_layered_interface_anywhere_converges() -> None:
    sizes = [20, 40, 80]
    errors = [_layered_error(n, 0.3) for n in sizes]
    assert all(p > 0.7 for p in _orders(errors, sizes))  # first order where the jump is not at a face


def test_operator_matches_stencil_loop() -> None:
    s = DarcySolver(7)
    rng = np.random.default_rng(0)
    a = np.exp(rng.standard_normal((7, 7)))
    m, h2 = 5, s.h**2
    want = np.zeros((m * m, m * m))
    for i in range(1, 6):
        for j in range(1, 6):
            r = (i - 1) * m + (j - 1)
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                p, q = a[i, j], a[i + di, j + dj]
                c = 2 * p * q / (p + q) / h2
                want[r, r] += c
                if 1 <= i + di <= 5 and 1 <= j + dj <= 5:
                    want[r, (i + di - 1) * m + (j + dj - 1)] -= c
    np.testing.assert_allclose(s.operator(a).toarray(), want, rtol=1e-12)
    u = s.solve_batch(np.stack([a, 2 * a]))
    np.testing.assert_allclose(u[1], u[0] / 2, rtol=1e-10)  # u scales as 1/a
    assert np.all(u[:, [0, -1], :] == 0) and np.all(u[:, :, [0, -1]] == 0)


def test_solver_rejects_bad_input() -> None:
    s = DarcySolver(5)
    with pytest.raises(ValueError, match="positive"):
        s.solve(-np.ones((5, 5)))
    with pytest.raises(ValueError, match=r"\(5, 5\)"):
        s.solve(np.ones((4, 4)))
    with pytest.raises(ValueError, match="at least 3"):
        DarcySolver(2)


def test_grf_spectrum_by_projection() -> None:
    # project samples on φ_k φ_l with the midpoint rule on M points (exact for cosines of index < M)
    k, count, m = 8, 3000, 64
    xi = np.random.default_rng(1).standard_normal((count, k, k))
    x = (np.arange(m) + 0.5) / m
    g = data.grf(xi, x, x)
    phi = np.cos(np.pi * x[:, None] * np.arange(k)) * np.where(np.arange(k) == 0, 1.0, math.sqrt(2))
    coef = phi.T @ g @ phi / m**2
    sigma = data.spectrum(k)
    emp = coef.var(0)
    rel = np.abs(emp - sigma**2)[sigma > 0] / (sigma**2)[sigma > 0]
    assert rel.max() < 0.15  # 3000 samples: standard error of a variance ~ sqrt(2/3000) = 2.6%
    assert np.abs(coef[:, 0, 0]).max() < 1e-12  # zero mean field, no constant mode
    # pointwise covariance against the closed form
    p = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.3]])
    gp = np.stack([data.grf(xi, p[i : i + 1, 0], p[i : i + 1, 1])[:, 0, 0] for i in range(3)], 1)
    np.testing.assert_allclose(np.cov(gp.T), data.covariance(p, p, k), atol=0.1 * data.covariance(p, p, k).max())


def test_families_and_seeds() -> None:
    pw = data.sample("piecewise", 40, points=9, seed=3, refine=1)
    assert set(np.unique(pw.a.numpy())) == {data.LOW, data.HIGH}
    assert 0.35 < float((pw.a == data.HIGH).double().mean()) < 0.65  # P(g >= 0) = 1/2
    ln = data.sample("lognormal", 40, points=9, seed=3, refine=1)
    np.testing.assert_allclose(
        np.log(ln.a.numpy()), data.grf(ln.xi.numpy(), np.linspace(0, 1, 9), np.linspace(0, 1, 9))
    )
    assert torch.equal(data.sample("lognormal", 40, points=9, seed=3, refine=1).u, ln.u)
    sp = data.splits("lognormal", 5, 5, points=9, refine=1)
    assert not torch.equal(sp.train.xi, sp.test.xi)
    with pytest.raises(ValueError, match="family"):
        data.sample("uniform", 1)  # type: ignore[arg-type]


def test_refined_solution_is_closer() -> None:
    # solving on a finer grid and sampling back moves u toward the 4x finer reference
    coarse, fine, ref = (data.sample("lognormal", 4, points=9, refine=r) for r in (1, 2, 8))
    e1, e2 = (data.relative_l2(d.u, ref.u).max() for d in (coarse, fine))
    assert e2 < e1 / 3


def test_the_zero_boundary_is_chebmul() -> None:
    v = np.random.default_rng(2).standard_normal(7)
    want = C.chebmul(C.poly2cheb([1, 0, -1]), v)
    imposed = ZERO.imposition(7)
    assert imposed is not None and ZERO.coefficients(7) == 9
    np.testing.assert_allclose(imposed.numpy() @ v, want, atol=1e-13)


@pytest.mark.parametrize("family", data.FAMILIES)
def test_the_solver_commutes_with_the_squares_symmetries(family: data.Family) -> None:
    """``u(g·a) = g·u(a)`` for each of the eight moves, to the solver's rounding: the augmentation is exact."""
    d = data.sample(family, 8, points=9, refine=1)
    which = torch.tensor([[t, x, y] for t in (0, 1) for x in (0, 1) for y in (0, 1)], dtype=torch.bool)
    a = symmetry.move(d.a[..., None], which, "square", SHAPE.axes)[..., 0]
    u = symmetry.move(d.u[..., None], which, "square", SHAPE.axes)[..., 0]
    solved = torch.from_numpy(DarcySolver(9).solve_batch(a.numpy()))
    torch.testing.assert_close(solved, u, rtol=1e-9, atol=1e-12)


def test_tiny_training_loss_falls(tmp_path: Path) -> None:
    config = PRESETS["tiny"]
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    run = train(config, splits, tmp_path, progress=False)
    losses = [r["loss"] for r in run.trained.history]
    assert losses[-1] < 0.5 * losses[0]
    model = load(tmp_path)
    x = splits.test.a[..., None]
    torch.testing.assert_close(model(x), run.task.model(x))


def test_a_checkpoint_written_before_the_norms_field_loads_with_them(tmp_path: Path) -> None:
    """Earlier releases built every Funcformer layer with layer norms and did not record it: such a checkpoint
    loads as the model it was, and predicts what that model predicts."""
    config = PRESETS["tiny"].replace(norms=True)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    run = train(config, splits, tmp_path, progress=False, stop_after=2)
    path = tmp_path / CHECKPOINT
    blob = load_checkpoint(path)
    del blob["config"]["norms"]
    save_checkpoint(path, blob)
    model = load(tmp_path)
    x = splits.test.a[..., None]
    torch.testing.assert_close(model(x), run.task.model.eval()(x))


def test_an_axial_checkpoint_of_either_default_loads_as_the_model_it_was(tmp_path: Path) -> None:
    """In the axial form ``channels=0`` now builds ``width`` functions and the checkpoint records the count; one
    written before (four functions, the ``0`` recorded) loads as the four-function model it was."""
    config = PRESETS["tiny"].replace(axial=True, channels=0)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    x = splits.test.a[..., None]
    run = train(config, splits, tmp_path / "new", progress=False, stop_after=2)
    assert run.task.model.channels == config.width
    assert load_checkpoint(tmp_path / "new" / CHECKPOINT)["config"]["channels"] == config.width
    torch.testing.assert_close(load(tmp_path / "new")(x), run.task.model.eval()(x))
    run = train(config.replace(channels=4), splits, tmp_path / "old", progress=False, stop_after=2)
    path = tmp_path / "old" / CHECKPOINT
    blob = load_checkpoint(path)
    blob["config"]["channels"] = 0  # as the earlier default recorded it
    save_checkpoint(path, blob)
    torch.testing.assert_close(load(tmp_path / "old")(x), run.task.model.eval()(x))


def test_cli_user_error_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--preset", "tiny", "--config", "heads=3", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "heads must divide width" in err
