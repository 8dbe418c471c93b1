"""Cross-modal models: Chebyshev queries attending to padded points against a hand-written numpy reference,
invariance to padding and to the order of the points, affine equivariance, the data against numpy, the
baselines against closed forms, the exact L² loss against quadrature, and a short training run that learns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch

from applicative import Field, ScaledSoftmax, StructureError, attention
from examples.cross_modal.__main__ import main
from instances import Chebyshev, Padded, Vector
from models.crossmodal import CrossModal
from training.tasks.cross_modal import baselines, data, train
from training.tasks.cross_modal.config import PRESETS, TaskKind
from training.tasks.cross_modal.model import GridModel, PointsModel

TINY = PRESETS["tiny"]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("fused", [True, False])
def test_chebyshev_queries_attend_to_padded_points(fused: bool) -> None:
    """``attention`` with queries on Chebyshev(n) and keys on Padded: per query point, a softmax over valid points."""
    torch.manual_seed(1)
    n, h, g, lengths = 7, 3, 2, [5, 3]
    q = torch.randn(2, n, h, dtype=torch.float64)
    k, v = torch.randn(2, 5, h, dtype=torch.float64), torch.randn(2, 5, g, dtype=torch.float64)
    p = Padded(5, lengths)
    out = attention(ScaledSoftmax(0.7), Field(q, (Chebyshev(n), Vector(h))), Field(k, (p, Vector(h))),
                    Field(v, (p, Vector(g))), fused=fused)  # fmt: skip
    assert out.structures == (Chebyshev(n), Vector(g))
    t = C.chebpts1(n)  # the query's values at its Chebyshev points, attention there, interpolated back
    for b, m in enumerate(lengths):
        qv = C.chebvander(t, n - 1) @ q[b].numpy()  # (n, h)
        s = 0.7 * qv @ k[b, :m].numpy().T
        w = np.exp(s - s.max(1, keepdims=True))
        ov = (w / w.sum(1, keepdims=True)) @ v[b, :m].numpy()
        ref = C.chebfit(t, ov, n - 1)
        np.testing.assert_allclose(out.tensor[b].numpy(), ref, atol=1e-10)


def _points(n: int, lengths: list[int], seed: int = 0) -> data.Points:
    g = torch.Generator().manual_seed(seed)
    c = data.series(TINY, len(lengths), g)
    x = torch.zeros(len(lengths), n, dtype=torch.float64)
    for i, m in enumerate(lengths):
        x[i, :m] = (2 * torch.rand(m, generator=g, dtype=torch.float64) - 1).sort().values
    f = torch.stack([torch.tensor(C.chebval(x[i].numpy(), c[i].numpy())) for i in range(len(lengths))])
    f = f * (torch.arange(n) < torch.tensor(lengths)[:, None])
    return data.Points(c, x, f, torch.tensor(lengths))


def test_points_model_ignores_padding_and_order() -> None:
    torch.manual_seed(0)
    model = PointsModel(TINY).double()
    p = _points(9, [9, 4, 6])
    batch = model(p.x, p.f, p.lengths)
    assert batch.shape == (3, TINY.modes)
    for i, m in enumerate([9, 4, 6]):
        perm = torch.randperm(m)
        alone = model(p.x[i : i + 1, :m][:, perm], p.f[i : i + 1, :m][:, perm], torch.tensor([m]))
        torch.testing.assert_close(alone[0], batch[i], atol=1e-10, rtol=0)
    junk = p.f.clone()
    junk[1, 4:] = 1e3  # values at padding positions change nothing
    torch.testing.assert_close(model(p.x, junk, p.lengths), batch, atol=1e-10, rtol=0)


def test_affine_equivariance() -> None:
    """Predicting from ``a f + b`` gives ``a f̂ + b`` for ``a > 0`` (the standardisation); for images too."""
    torch.manual_seed(0)
    model = PointsModel(TINY).double()
    p = _points(8, [8, 5])
    base = model(p.x, p.f, p.lengths)
    shifted = model(p.x, 3 * p.f + 2, p.lengths)
    expect = 3 * base
    expect[:, 0] += 2
    torch.testing.assert_close(shifted, expect, atol=1e-9, rtol=1e-9)
    grid = GridModel(TINY).double()
    img = data.sample_images(TINY, data.series(TINY, 2, torch.Generator().manual_seed(3), 2)).image
    c, c2 = grid(img), grid(0.5 * img + 1)
    e = 0.5 * c
    e[:, 0, 0] += 1
    torch.testing.assert_close(c2, e, atol=1e-9, rtol=1e-9)


def test_data_against_numpy() -> None:
    g = torch.Generator().manual_seed(5)
    c = data.series(TINY, 6, g)
    p = data.sample_points(TINY, c, g)
    for i, m in enumerate(p.lengths.tolist()):
        assert TINY.min_points <= m <= TINY.max_points
        x = p.x[i, :m].numpy()
        assert np.all(np.diff(x) > 0) and np.all(np.abs(x) <= 1)
        np.testing.assert_allclose(p.f[i, :m].numpy(), C.chebval(x, c[i].numpy()), atol=1e-12)
        assert not p.f[i, m:].any() and not p.x[i, m:].any()
    c2 = data.series(TINY, 2, g, 2)
    img = data.sample_images(TINY, c2).image
    s = np.linspace(-1, 1, TINY.resolution)
    np.testing.assert_allclose(img.numpy(), np.stack([C.chebgrid2d(s, s, a) for a in c2.numpy()]), atol=1e-12)


def test_baselines_against_closed_forms() -> None:
    """Splines reproduce cubics; the oracle reproduces any series of the prior's degree from >= K samples."""
    t = np.linspace(-1, 1, 57)
    cubic = np.array([0.3, -1.0, 0.5, 2.0])  # power-series coefficients of a cubic
    x = torch.tensor([[-0.9, -0.4, 0.1, 0.35, 0.8]], dtype=torch.float64)
    f = torch.tensor(np.polyval(cubic, x.numpy()))
    p = data.Points(torch.zeros(1, TINY.degree), x, f, torch.tensor([5]))
    np.testing.assert_allclose(baselines.spline(p, t)[0], np.polyval(cubic, t), atol=1e-12)
    exact = _points(TINY.degree + 2, [TINY.degree + 2], seed=4)
    np.testing.assert_allclose(baselines.posterior_mean(TINY, exact, t)[0],
                               C.chebval(t, exact.coefficients[0].numpy()), atol=1e-6)  # fmt: skip
    s = torch.linspace(-1, 1, TINY.resolution, dtype=torch.float64)
    img = (s[:, None] ** 3 - s[:, None]) * (2 * s[None, :] ** 2 + s[None, :])  # bicubic in x and y
    images = data.Images(torch.zeros(1, 1, 1), img[None])
    u = np.linspace(-1, 1, 4 * TINY.resolution)
    np.testing.assert_allclose(baselines.bicubic(images, len(u))[0], np.outer(u**3 - u, 2 * u**2 + u), atol=1e-12)


def test_exact_l2_against_quadrature() -> None:
    g = torch.Generator().manual_seed(2)
    pred, c = torch.randn(3, 9, dtype=torch.float64, generator=g), data.series(TINY, 3, g)
    x, w = np.polynomial.legendre.leggauss(40)
    d = C.chebval(x, pred.numpy().T) - C.chebval(x, train.padded(c, 9).numpy().T)
    np.testing.assert_allclose(train.squared_l2(pred, c).numpy(), (d**2 * w).sum(-1), rtol=1e-10)
    pred2, c2 = torch.randn(2, 9, 9, dtype=torch.float64, generator=g), data.series(TINY, 2, g, 2)
    d2 = np.stack([C.chebgrid2d(x, x, a) for a in (pred2 - train.padded(c2, 9)).numpy()])
    np.testing.assert_allclose(train.squared_l2(pred2, c2).numpy(), np.einsum("bij,i,j->b", d2**2, w, w), rtol=1e-10)


def test_grid_prediction_evaluates_like_numpy() -> None:
    torch.manual_seed(0)
    model = GridModel(TINY).double()
    img = data.sample_images(TINY, data.series(TINY, 2, torch.Generator().manual_seed(1), 2)).image
    m = 4 * TINY.resolution
    s = np.linspace(-1, 1, m)
    with torch.no_grad():
        c = model(img).numpy()
    np.testing.assert_allclose(train.predict_grid(model, img, m).numpy(),
                               np.stack([C.chebgrid2d(s, s, a) for a in c]), atol=1e-10)  # fmt: skip


@pytest.mark.parametrize("task", ["points", "grid"])
def test_short_training_learns(task: TaskKind) -> None:
    """A few dozen steps lower the held-out error of the freshly initialised model (same seed)."""
    config = TINY.replace(steps=80, eval_every=80, lr=3e-3)
    held = data.held_out(config)
    fresh = train.CrossModalTask(config, task, held).model
    before = {k: float(v.median()) for k, v in train.errors(fresh, held).items()}
    trained = train.train(config, task, held, None, progress=False)
    after = {k: float(v.median()) for k, v in train.errors(trained.model, held).items()}
    assert after.keys() == before.keys()
    assert all(after[k] < 0.8 * before[k] for k in after), (before, after)


def test_cli_tiny_run_and_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["--task", "grid", "--preset", "tiny", "--steps", "4", "--out", str(out), "--no-progress"]) == 0
    report = (out / "report.json").read_text()
    assert '"bicubic_median"' in report and '"model_over_bicubic_median"' in report
    assert main(["--task", "points", "--preset", "tiny", "--config", "modes=2", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "modes" in err[0]


def test_cross_modal_rejects_tokens_of_another_structure() -> None:
    model = CrossModal(Vector(3), Chebyshev(5), Vector(1), Vector(4), Vector(8))
    with pytest.raises(StructureError, match="tokens"):
        model(Field(torch.randn(2, 6, 4), (Vector(6), Vector(4))))
