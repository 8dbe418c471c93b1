"""Fourier series as a structure, against numpy and scipy: transforms, integral, metric, products, laws, attention.

References are independent of the code under test: the series evaluated term by term with numpy, scipy's
adaptive quadrature for integrals, numpy's FFT for the discrete projection, and the quadrature of the
continuous softmax written out with numpy.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
import torch
from scipy import integrate

from applicative import REAL, Field, ScaledSoftmax, StructureError, _lowering, attention, counit, kernels, mul_mmt
from applicative.laws import check_laws
from instances import Chebyshev, Fourier, FourierArbitrary, Vector
from instances import fourier as F
from models import Funcformer, FuncformerConfig, gaussian_window

F64 = torch.float64


def series(c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``a_0 + Σ a_k cos kθ + b_k sin kθ`` at ``t`` (``θ = π(t + 1)``), term by term: ``c`` ``(..., n)``."""
    theta = math.pi * (np.asarray(t) + 1)
    out = np.multiply.outer(c[..., 0], np.ones_like(theta))
    for k in range(1, (c.shape[-1] - 1) // 2 + 1):
        out = out + np.multiply.outer(c[..., 2 * k - 1], np.cos(k * theta))
        out = out + np.multiply.outer(c[..., 2 * k], np.sin(k * theta))
    return out


def projection(v: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` real coefficients of samples ``v`` ``(..., m)`` at ``θ_j = 2πj/m`` by numpy's FFT."""
    x = np.fft.rfft(v, axis=-1) / v.shape[-1]
    k = (n - 1) // 2
    out = np.empty((*v.shape[:-1], n))
    out[..., 0] = x[..., 0].real
    out[..., 1::2] = 2 * x[..., 1 : k + 1].real
    out[..., 2::2] = -2 * x[..., 1 : k + 1].imag
    return out


@pytest.mark.parametrize(("n", "m"), [(1, 1), (3, 5), (7, 7), (7, 13), (9, 300), (101, 257), (101, 401)])
def test_values_are_the_series_at_equally_spaced_points(n: int, m: int) -> None:
    c = np.random.default_rng(n + m).standard_normal((2, 3, n))
    got = F.values(torch.from_numpy(c), -1, m).numpy()
    t = -1 + 2 * np.arange(m) / m
    np.testing.assert_allclose(got, series(c, t), rtol=1e-11, atol=1e-11)
    # along another axis (the dense path's other branches)
    moved = F.values(torch.from_numpy(c).movedim(-1, 0), 0, m).movedim(0, -1).numpy()
    np.testing.assert_allclose(moved, got, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize(("n", "m"), [(3, 3), (5, 12), (9, 17), (33, 300)])
def test_coefficients_are_numpys_discrete_projection(n: int, m: int) -> None:
    v = np.random.default_rng(m).standard_normal((4, m))
    got = F.coefficients(torch.from_numpy(v), -1, n).numpy()
    np.testing.assert_allclose(got, projection(v, n), rtol=1e-11, atol=1e-11)
    # a series sampled at m >= n points comes back exactly
    c = np.random.default_rng(n).standard_normal((4, n))
    back = F.coefficients(torch.from_numpy(series(c, -1 + 2 * np.arange(m) / m)), -1, n).numpy()
    np.testing.assert_allclose(back, c, rtol=1e-11, atol=1e-11)


def test_evaluate_is_the_series_anywhere_and_periodic() -> None:
    c = np.random.default_rng(0).standard_normal((3, 7))
    t = np.random.default_rng(1).uniform(-3, 3, (4, 5))
    got = Fourier(7).evaluate(torch.from_numpy(c), torch.from_numpy(t)).numpy()  # (3, 4, 5)
    np.testing.assert_allclose(got, series(c, t), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(series(c, t + 2), series(c, t), atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 9])
def test_counit_is_the_integral(n: int) -> None:
    c = np.random.default_rng(n).standard_normal(n)
    want, _ = integrate.quad(lambda t: float(series(c, np.array(t))), -1, 1, limit=200, epsabs=1e-13)
    got = Fourier(n).counit(torch.from_numpy(c)[None], -1, REAL)
    assert abs(float(got[0]) - want) < 1e-11
    # the derived counit (the measure at the points) agrees
    f = Field(torch.from_numpy(c)[None], (Fourier(n),))
    assert abs(float(counit(f).tensor[0]) - want) < 1e-11


@pytest.mark.parametrize("n", [1, 5, 9])
def test_metric_is_the_gram_matrix(n: int) -> None:
    t, w = np.polynomial.legendre.leggauss(64)  # exact far past the degree 2K of a product
    phi = series(np.eye(n), t)  # (n, 64)
    gram = (phi * w) @ phi.T
    got = Fourier(n).metric(F64, torch.device("cpu")).numpy()
    np.testing.assert_allclose(got, gram, atol=1e-13)
    assert float(kernels.mass(Fourier(n), torch.zeros(1, n, dtype=F64))[0]) == pytest.approx(2.0)


def test_zip_with_mul_is_the_truncated_product() -> None:
    n = 9
    a, b = np.random.default_rng(3).standard_normal((2, n))
    fine = -1 + 2 * np.arange(64) / 64
    want = projection(series(a, fine) * series(b, fine), n)  # the product's first n coefficients
    got = Fourier(n).zip_with(torch.mul, torch.from_numpy(a), torch.from_numpy(b), -1)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_even_sizes_and_integer_values_are_refused() -> None:
    with pytest.raises(StructureError, match=r"odd number of coefficients.*got 8; use 9"):
        Fourier(8)
    with pytest.raises(StructureError, match="real floating tensor"):
        F.values(torch.ones(3, dtype=torch.int64))
    with pytest.raises(StructureError, match="cannot hold a Fourier series of 7 terms"):
        F.values(torch.ones(7, dtype=F64), -1, 5)


def test_fourier_is_lawful() -> None:
    report = check_laws(FourierArbitrary(), max_examples=10)
    assert report.status("contract") != "n/a"
    assert report.status("fused = generic (S keys)") in ("exact", "approximate")


def test_attention_over_fourier_keys_is_one_sdpa_call_and_the_quadrature() -> None:
    """``∫ e^{s(t)} v(t) dt / ∫ e^{s(t)} dt`` by the periodic trapezoid rule on ``2n - 1`` points, with numpy."""
    n, e = 7, 3
    rng = np.random.default_rng(0)
    q, kc, vc = rng.standard_normal((5, e)), rng.standard_normal((n, e)), rng.standard_normal((n, 2))
    keys = Field(torch.from_numpy(kc), (Fourier(n), Vector(e)))
    values = Field(torch.from_numpy(vc), (Fourier(n), Vector(2)))
    queries = Field(torch.from_numpy(q), (Vector(5), Vector(e)))
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        got = attention(ScaledSoftmax(0.7), queries, keys, values).tensor.numpy()
    assert spy.call_count == 1
    assert spy.call_args.kwargs.get("attn_mask") is None  # an equal weight at every point: no bias to add
    t = -1 + 2 * np.arange(2 * n - 1) / (2 * n - 1)
    k_at, v_at = series(kc.T, t).T, series(vc.T, t).T  # (m, e), (m, 2)
    for i in range(5):
        z = np.exp(0.7 * k_at @ q[i])
        np.testing.assert_allclose(got[i], (z[:, None] * v_at).sum(0) / z.sum(), rtol=1e-12)


def test_the_periodic_window_is_the_von_mises_weight() -> None:
    """On a circle the window is ``-β (2/π²)(1 - cos π(t - s))``, up to a constant per query (which no softmax sees)."""
    s, betas = Fourier(9), torch.tensor([3.0, 12.0], dtype=F64)
    p, r = gaussian_window(betas, s, s)
    grid = kernels.grid(s)
    t = s.coordinates(F64, points=grid)
    score = torch.einsum("hqc,kc->hqk", kernels.positions(s, p, -2, grid), kernels.positions(s, r[0], -2, grid))
    want = -betas[:, None, None] * (2 / math.pi**2) * (1 - torch.cos(math.pi * (t[:, None] - t[None, :])))
    torch.testing.assert_close(score - score[..., :1], want - want[..., :1], rtol=1e-12, atol=1e-12)
    with pytest.raises(StructureError, match="disagree on periodicity"):
        gaussian_window(betas, s, Chebyshev(5))


def test_a_funcformer_over_a_periodic_sequence_with_a_window_fuses_every_layer() -> None:
    torch.manual_seed(0)
    cfg = FuncformerConfig(heads=2, depth=3, window=20.0)
    model = Funcformer(Fourier(9), Vector(2), Vector(8), Vector(16), cfg, dtype=F64)
    x = Field(torch.randn(4, 9, 2, dtype=F64), (Fourier(9), Vector(2)))
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        y = model(x)
    assert spy.call_count == 3
    assert y.structures == x.structures and torch.isfinite(y.tensor).all()
    # the first layer's embedding is the contraction over the features, as for any structure
    h = mul_mmt(model.transformer.embed.weight_field, x)
    assert h.structures == (Fourier(9), Vector(8))
