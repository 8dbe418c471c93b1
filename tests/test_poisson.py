"""The Poisson example: exact solver, data, and the training job (checkpoints, resumption, CLI).

References: analytic solutions (sines, polynomials vanishing on the boundary, differentiated with
``numpy.polynomial.chebyshev``), ``scipy.linalg.solve_sylvester`` on the collocation system, and a
scipy sparse finite-difference solve converging at second order.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
from pathlib import Path

import matplotlib.image
import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
import torch

from examples.poisson.__main__ import main
from instances.chebyshev import metric
from operators.poisson import families, norms, sources
from operators.poisson.solver import PoissonSolver, cheb_differentiation, lobatto_points
from training import ConfigError
from training.config import CONVENTIONS
from training.loop import Progress
from training.tasks.poisson import data, plot, train
from training.tasks.poisson.config import PRESETS
from training.tasks.poisson.model import CHECKPOINT


def _grid(s: PoissonSolver) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor(s.points)
    return torch.meshgrid(x, x, indexing="ij")


@pytest.mark.parametrize(("k", "l"), [(1, 1), (1, 2), (3, 2)])
def test_sine_solutions(k: int, l: int) -> None:
    s = PoissonSolver(48)
    x, y = _grid(s)
    g = torch.sin(k * math.pi * x) * torch.sin(l * math.pi * y)
    got = s.solve_values(-(k**2 + l**2) * math.pi**2 * g)
    assert float((got - g).norm() / g.norm()) <= 1e-10


@pytest.mark.parametrize(("a", "b"), [(0, 0), (1, 2), (3, 4), (6, 1)])
def test_polynomial_solutions_exact_in_coefficients(a: int, b: int) -> None:
    # g = (1 - x²) x^a (1 - y²) y^b vanishes on the boundary; f = g_xx + g_yy by numpy's chebder
    gx = C.poly2cheb(np.polymul([1, 0, -1], np.eye(a + 1)[a]))
    gy = C.poly2cheb(np.polymul([1, 0, -1], np.eye(b + 1)[b]))
    g = np.outer(gx, gy)
    f = np.zeros_like(g)
    f[: len(gx) - 2, :] += np.outer(C.chebder(gx, 2), gy)
    f[:, : len(gy) - 2] += np.outer(gx, C.chebder(gy, 2))
    s = PoissonSolver(16)
    got = s.solve(torch.tensor(f)).numpy()
    want = np.zeros_like(got)
    want[: g.shape[0], : g.shape[1]] = g
    assert np.linalg.norm(got - want) <= 1e-10 * np.linalg.norm(want)


def test_fast_diagonalisation_matches_scipy_sylvester() -> None:
    n = 24
    d2 = np.linalg.matrix_power(cheb_differentiation(n), 2)[1:-1, 1:-1]
    rng = np.random.default_rng(0)
    f = rng.standard_normal((3, n + 1, n + 1))
    got = PoissonSolver(n).solve_values(torch.tensor(f)).numpy()
    for i in range(3):
        u = scipy.linalg.solve_sylvester(d2, d2.T, f[i, 1:-1, 1:-1])
        assert np.abs(got[i, 1:-1, 1:-1] - u).max() <= 1e-10 * np.abs(u).max()
        assert np.all(got[i, [0, -1], :] == 0) and np.all(got[i, :, [0, -1]] == 0)


def _finite_difference(fc: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """5-point Laplacian on the uniform (m+1)² grid, Dirichlet zero; returns interior grid and solution."""
    h = 2.0 / m
    t = np.linspace(-1, 1, m + 1)[1:-1]
    lap1 = scipy.sparse.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(m - 1, m - 1)) / h**2
    eye = scipy.sparse.identity(m - 1)
    lap = scipy.sparse.kron(lap1, eye) + scipy.sparse.kron(eye, lap1)
    rhs = C.chebgrid2d(t, t, fc).ravel()
    return t, scipy.sparse.linalg.spsolve(lap.tocsc(), rhs).reshape(m - 1, m - 1)


def test_finite_differences_converge_to_spectral_solution() -> None:
    fc = sources.random_sources(sources.IN_DISTRIBUTION, 1, seed=5)[0]
    g = PoissonSolver(48).solve(fc).numpy()
    errs = []
    for m in (16, 32, 64):
        t, u = _finite_difference(fc.numpy(), m)
        errs.append(np.abs(u - C.chebgrid2d(t, t, g)).max() / np.abs(u).max())
    assert errs[-1] < 2e-3
    assert errs[0] / errs[1] > 3.5 and errs[1] / errs[2] > 3.5  # second order


def test_solution_satisfies_equation_and_boundary() -> None:
    fc = sources.random_sources(sources.OUT_OF_DISTRIBUTION, 2, seed=1)
    g = PoissonSolver(64).solve(fc).numpy()
    t = np.linspace(-1, 1, 9)
    for i in range(2):
        assert np.abs(C.chebgrid2d([-1.0, 1.0], t, g[i])).max() < 1e-12
        assert np.abs(C.chebgrid2d(t, [-1.0, 1.0], g[i])).max() < 1e-12
        # residual of Δg - f at Lobatto points of the solve (collocation holds there exactly)
        x = lobatto_points(64)[1:-1]
        lap = C.chebgrid2d(x, x, C.chebder(g[i], 2, axis=0)) + C.chebgrid2d(x, x, C.chebder(g[i], 2, axis=1))
        f = C.chebgrid2d(x, x, fc[i].numpy())
        assert np.abs(lap - f).max() < 1e-8 * np.abs(f).max()


def test_gram_and_norm_against_numpy_quadrature() -> None:
    n = 9
    w = metric(n).numpy()
    for k in range(n):
        for l in range(n):
            assert w[k, l] == pytest.approx(
                C.chebval(1, C.chebint(C.chebmul(np.eye(n)[k], np.eye(n)[l])))
                - C.chebval(-1, C.chebint(C.chebmul(np.eye(n)[k], np.eye(n)[l]))),
                abs=1e-13,
            )
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((11, 9))
    xg, wg = np.polynomial.legendre.leggauss(20)
    diff = np.zeros((11, 9))
    diff[:7, :5] = a
    diff -= b
    want = np.sqrt(
        np.einsum("i,j,ij->", wg, wg, C.chebgrid2d(xg, xg, diff) ** 2)
        / np.einsum("i,j,ij->", wg, wg, C.chebgrid2d(xg, xg, b) ** 2)
    )
    got = norms.relative_l2(torch.tensor(a)[None], torch.tensor(b)[None])[0]
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_sources_seeded_masked_normalised() -> None:
    spec = sources.IN_DISTRIBUTION
    a, b = sources.random_sources(spec, 4, seed=7), sources.random_sources(spec, 4, seed=7)
    assert torch.equal(a, b) and not torch.equal(a, sources.random_sources(spec, 4, seed=8))
    assert torch.all(a[:, spec.active :, :] == 0) and torch.all(a[:, :, spec.active :] == 0)
    assert torch.allclose(norms.l2_norm_sq(a), torch.ones(4, dtype=torch.float64))
    ood = sources.random_sources(sources.OUT_OF_DISTRIBUTION, 4, seed=7)
    assert torch.any(ood[:, -1, :] != 0)  # OOD uses the highest modes too


def test_splits_disjoint_and_cached(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = data.splits(8, 4, seed=3, n=8, cache=tmp_path)
    assert s.train.f.shape == (8, 8, 8) and s.test.g.shape == (4, 49, 49)
    assert not torch.equal(s.train.f[:4], s.test.f)
    again = data.splits(8, 4, seed=3, n=8, cache=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1 and torch.equal(again.ood.g, s.ood.g)


# ---- training ---------------------------------------------------------------

TINY = PRESETS["tiny"]


def test_short_training_reduces_loss() -> None:
    cfg = TINY.replace(steps=40, lr=1e-2, eval_every=20)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    state = train.build(cfg, splits, torch.device("cpu"))
    before = float(train.errors(state.model, splits.test, torch.device("cpu")).mean())
    state = train.train(cfg, splits, None, progress=False)
    after = float(train.errors(state.model, splits.test, torch.device("cpu")).mean())
    assert after < 0.5 * before


def test_divergence_stops_with_a_clear_error(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A step size far too large (no clipping) blows up; training says so instead of writing NaN checkpoints."""
    monkeypatch.setitem(CONVENTIONS, "lr", {"max": 1e31})  # a rate the configs refuse (lr <= 10), to force it
    cfg = TINY.replace(lr=1e30, clip=0.0, warmup=0.0, eval_every=5, checkpoint_every=1)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    with pytest.raises(FloatingPointError, match="diverged at step"):
        train.train(cfg, splits, tmp_path, progress=False)
    kept = torch.load(tmp_path / CHECKPOINT, weights_only=True)
    assert all(bool(torch.isfinite(p).all()) for p in kept["task"]["model"].values())


def test_clipping_bounds_the_step() -> None:
    """With ``clip`` the first step's update is at most lr per parameter (Adam) and gradients are clipped."""
    cfg = TINY.replace(steps=1, clip=1e-3, warmup=0.0)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    state = train.train(cfg, splits, None, progress=False)
    norm = torch.sqrt(sum(p.grad.square().sum() for p in state.model.parameters() if p.grad is not None))
    assert float(norm) <= 1e-3 * (1 + 1e-5)


def test_solutions_are_the_solvers_cut_to_out_modes() -> None:
    f = sources.training_law("mixed", 6, torch.Generator().manual_seed(1), 8)
    exact = norms.pad(PoissonSolver(sources.DEGREE).solve(f), 12)
    assert torch.allclose(sources.solutions(f, 12), exact, rtol=0, atol=1e-13 * float(exact.abs().max()))
    with pytest.raises(ValueError, match="expected sources"):
        sources.solutions(f[0], 12)


def test_training_law_is_the_splits_law() -> None:
    """The online draws come from the law the held-out set is drawn from (mixed: families.training_sources)."""
    g = lambda: torch.Generator().manual_seed(5)  # noqa: E731
    assert torch.equal(sources.training_law("mixed", 9, g(), 16), families.training_sources(9, g(), 16))
    decaying = sources.training_law("decaying", 50, g(), 16)
    assert torch.all(decaying[:, 12:, :] == 0) and torch.all(decaying[:, :, 12:] == 0)
    assert torch.allclose(norms.l2_norm_sq(decaying), torch.ones(50, dtype=torch.float64))
    with pytest.raises(ValueError, match="sources must be"):
        sources.training_law("flat", 1, g(), 16)


def test_online_batches_are_fresh_exact_and_resumable() -> None:
    """``online``: every batch is new sources of the training law with exact targets, drawn by the saved sampler."""
    cfg = TINY.replace(online=True, batch=16)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    task = train.build(cfg, splits, torch.device("cpu"))
    out = cfg.out_modes or cfg.modes
    first = task.batch()
    state = task.sampler.get_state()
    second, third = task.batch(), task.batch()
    assert first[0].shape == (16, cfg.modes, cfg.modes) and first[1].shape == (16, out, out)
    assert not torch.equal(first[0], second[0]) and not torch.equal(second[0], third[0])
    trained = splits.train.f.to(first[0].dtype)
    assert not any(torch.equal(row, t) for row in second[0] for t in trained)  # not the fixed training pairs
    exact = norms.pad(PoissonSolver(sources.DEGREE).solve(second[0].double()), out)
    assert torch.allclose(second[1].double(), exact, atol=1e-6 * float(exact.abs().max()))
    again = train.build(cfg, splits, torch.device("cpu"))
    again.sampler.set_state(state)  # as a resumed run restores it from the checkpoint
    for want in (second, third):
        got = again.batch()
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    offline = train.build(cfg.replace(online=False), splits, torch.device("cpu")).batch()[0]
    assert all(any(torch.equal(row, t) for t in trained) for row in offline)  # the fixed pairs otherwise


@pytest.mark.parametrize("online", [False, True])
def test_resume_after_ctrl_c_gives_identical_parameters(tmp_path, online) -> None:  # type: ignore[no-untyped-def]
    cfg = TINY.replace(checkpoint_every=7, online=online)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    straight = train.train(cfg, splits, tmp_path / "a", progress=False)

    def ctrl_c(state: Progress) -> None:
        if state.step == cfg.steps // 2:
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C: finish the step, checkpoint, stop

    with pytest.raises(KeyboardInterrupt):
        train.train(cfg, splits, tmp_path / "b", progress=False, on_step=ctrl_c)
    half = torch.load(tmp_path / "b" / CHECKPOINT, weights_only=True)
    assert half["step"] == cfg.steps // 2
    resumed = train.train(cfg, splits, tmp_path / "b", progress=False)
    assert resumed.step == cfg.steps
    for (k, p), (_, q) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items(), strict=True):
        assert torch.equal(p, q), k
    assert straight.history == resumed.history
    assert not list((tmp_path / "b").glob("*.tmp"))
    with pytest.raises(ConfigError, match=rf"another config \(lr: {cfg.lr} -> 0.5\)"):
        train.train(cfg.replace(lr=0.5), splits, tmp_path / "b", progress=False)


def _panels(png: np.ndarray) -> list[tuple[int, int]]:
    """Column spans of a picture's colour-map images: wide runs of columns that are mostly saturated colour."""
    rgb = png[..., :3]
    coloured = rgb.max(-1) - rgb.min(-1) > 0.15  # viridis is coloured; background, axes and text are grey
    columns = [*(coloured.mean(0) > 0.5), False]
    spans, start = [], None
    for j, c in enumerate(columns):
        if c and start is None:
            start = j
        elif not c and start is not None:
            if j - start > 100:  # an image, not a colour bar
                spans.append((start, j))
            start = None
    return spans


def _decode(rgb: np.ndarray, clim: tuple[float, float]) -> np.ndarray:
    """The values viridis pixels stand for under colour limits ``clim``: the nearest of its 256 colours."""
    lut = matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    k = np.stack([((row[:, None] - lut) ** 2).sum(-1).argmin(-1) for row in rgb])
    return clim[0] + (k + 0.5) / 256 * (clim[1] - clim[0])


def test_command_line_writes_report_and_figure(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    real, calls = plot.figure, []
    real_curves, curve_calls = plot.curves, []

    def spy(f: torch.Tensor, g: torch.Tensor, pred: torch.Tensor, path: Path, points: int = 101, **kw) -> object:  # type: ignore[no-untyped-def]
        drawn = real(f, g, pred, path, points, **kw)
        calls.append(((f, g, pred, path, points, kw), drawn))
        return drawn

    def spy_curves(history: list[dict[str, float]], path: Path) -> object:
        curve_calls.append((history, path))
        return real_curves(history, path)

    monkeypatch.setattr(plot, "figure", spy)
    monkeypatch.setattr(plot, "curves", spy_curves)
    assert main(["--preset", "tiny", "--steps", "4", "--out", str(tmp_path), "--no-progress", "--device", "cpu"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["steps"] == 4 and report["parameters"] > 0
    assert set(report["held_out_relative_l2"]) == {"mean", "median", "max"}
    out = capsys.readouterr().out
    assert "OOD relative L2" in out and "modes32" in out  # and the generalisation table
    assert set(report["families"]) == {
        "decaying",
        "ood",
        "flat",
        "rising",
        "sines",
        "polynomials",
        "amplitudes",
        "modes24",
        "modes32",
    }

    # the figure shows the worst held-out sample: its source, its exact solution, the trained model's prediction
    [((f, g, pred, path, points, kw), drawn)] = calls
    assert path == tmp_path / "poisson.png"
    cfg = TINY.replace(steps=4)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    model = train.train(cfg, splits, tmp_path, progress=False).model  # the finished run, from its checkpoint
    errs = train.errors(model, splits.test, torch.device("cpu"))
    i = int(errs.argmax())
    assert torch.equal(f, splits.test.f[i]) and torch.equal(g, splits.test.g[i])
    torch.testing.assert_close(pred, train.predict(model, splits.test.f[i : i + 1])[0], rtol=0, atol=0)

    # each panel holds its function on the grid, evaluated independently by numpy (imshow's (y, x) layout)
    t = np.linspace(-1, 1, points)

    def values(c: torch.Tensor) -> np.ndarray:
        return C.chebgrid2d(t, t, c.double().numpy()).T

    want = {
        "source f": values(f),
        "exact g": values(g),
        "Funcformer g": values(pred),
        "error |g - pred|": np.abs(values(pred) - values(g)),
    }
    panels = drawn.panels
    assert list(panels) == list(want)
    for title, w in want.items():
        np.testing.assert_allclose(panels[title], w, rtol=0, atol=1e-12 * np.abs(w).max(), err_msg=title)
    exact = panels["exact g"]
    edges = np.concatenate([exact[0], exact[-1], exact[:, 0], exact[:, -1]])
    assert np.abs(edges).max() < 1e-10 * np.abs(exact).max()  # the exact solution vanishes on the boundary
    assert panels["error |g - pred|"].max() > 1e-3 * np.abs(exact).max()  # 4 steps: the model is not exact

    # the exact solution and the prediction share one colour scale, spanning both; the others have their own
    both = np.concatenate([want["exact g"], want["Funcformer g"]])
    shared = drawn.clim["exact g"]
    assert drawn.clim["Funcformer g"] == shared
    for title, w in (("exact g", both), ("source f", want["source f"]), ("error |g - pred|", want["error |g - pred|"])):
        np.testing.assert_allclose(drawn.clim[title], (w.min(), w.max()), rtol=0, atol=1e-12 * np.abs(w).max())
    ranges = {k: want[k].max() - want[k].min() for k in ("exact g", "Funcformer g")}
    assert max(ranges.values()) > 1.5 * min(ranges.values())  # so that the picture tells one scale from two

    # and the picture written is those four panels side by side (each with its colour bar)
    png = matplotlib.image.imread(tmp_path / "poisson.png")
    assert png.shape[:2] == (420, 1600)
    spans = _panels(png)
    assert len(spans) == 4, spans
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    rows = np.flatnonzero((np.ptp(png[:, spans[0][0] : spans[0][1], :3], -1) > 0.15).mean(1) > 0.5)
    # the exact and predicted panels' colours read back, under the one scale, as their functions
    top, bottom = rows[0] + 2, rows[-1] - 1  # inside the frame
    for k, title in ((1, "exact g"), (2, "Funcformer g")):
        left, right = spans[k][0] + 2, spans[k][1] - 2
        seen = _decode(png[top:bottom, left:right, :3], shared)
        rows_, cols = (np.arange(a, b) + 0.5 for a, b in ((top, bottom), (left, right)))
        y = 1 - 2 * (rows_ - rows[0]) / (rows[-1] + 1 - rows[0])  # the picture's rows run top down
        x = -1 + 2 * (cols - spans[k][0]) / (spans[k][1] - spans[k][0])
        ix, iy = (np.rint((v + 1) / 2 * (points - 1)).astype(int) for v in (x, y))
        err = np.abs(seen - want[title][np.ix_(iy, ix)]) / (shared[1] - shared[0])
        # (resampling blurs the under-trained prediction's ripples: a few pixels are off, not the scale)
        assert np.median(err) < 0.01 and np.quantile(err, 0.9) < 0.05, (title, np.quantile(err, [0.5, 0.9]))

    # named by the sample and its error, as main passed them; the training curves written beside it
    assert kw == {"sample": i, "error": pytest.approx(float(errs[i]), rel=1e-9)}, "main names the sample"
    assert drawn.title.startswith(f"held-out sample {i}:"), drawn.title
    assert float(drawn.title.rsplit("error ", 1)[1]) == pytest.approx(float(errs[i]), rel=5e-3), drawn.title
    assert (png[: rows[0] - 30, :, :3].max(-1) < 0.5).any()  # drawn: text above the panels' own titles
    assert curve_calls == [(report["history"], tmp_path / "curves.png")]
    assert (tmp_path / "curves.png").is_file()


def test_curves(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the loss falls four decades and the held-out error two: on a log scale the loss falls twice as far
    history = [
        {"step": float(s), "loss": 10 ** (-s / 100), "held_out_rel_l2": 0.1 * 10 ** (-s / 200), "other": 7.0}
        for s in range(0, 401, 25)
    ]
    series = plot.curves(history, tmp_path / "curves.png")
    assert series == {k: [r[k] for r in history] for k in ("step", "loss", "held_out_rel_l2")}

    png = matplotlib.image.imread(tmp_path / "curves.png")[..., :3]
    assert png.shape[:2] == (500, 800)
    spines = png.max(-1) < 0.3  # the axes' frame: the long dark lines
    (left, *_, right), (top, *_, bottom) = (np.flatnonzero(spines.mean(a) > 0.5) for a in (0, 1))
    inside = png[top + 2 : bottom - 1, left + 2 : right - 1]
    drops = []
    for colour in ("C0", "C1"):  # the two lines, by their pixels within the axes
        rows, cols = np.nonzero((np.abs(inside - matplotlib.colors.to_rgb(colour)) < 0.1).all(-1))
        assert np.ptp(cols) > 0.8 * inside.shape[1], colour  # drawn across the axes
        first, last = (np.median(rows[np.abs(cols - c) <= 2]) for c in (cols.min(), cols.max()))
        drops.append(last - first)  # the picture's rows run top down: a falling line goes down
    assert all(d > 50 for d in drops), drops
    assert drops[0] / drops[1] == pytest.approx(2, rel=0.1), drops  # log scale (linear: 10)


@pytest.mark.slow
def test_default_config_reaches_target(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert main(["--out", str(tmp_path), "--no-progress"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    # issue 17's target is 1e-3: 9.6e-4 measured on one thread; the slack covers other thread counts' rounding
    assert report["held_out_relative_l2"]["mean"] <= 1.2e-3
