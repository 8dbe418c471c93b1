"""The Fourier reader against numpy's FFT, and the operator task's loss against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from applicative import InputError
from instances.axes import Axis
from models.operator import FourierReader, OperatorModel, Reading, fourier_coefficients, roughness
from operators.dataset import samples
from training import UserError
from training.tasks.operator import PRESETS
from training.tasks.operator.task import check_fit, objective, smoothing

PERIODIC = Axis("periodic")
ZERO = Axis("nodes", boundary="zero")


def _numpy_coefficients(v: np.ndarray, n: int) -> np.ndarray:
    """``a_0, a_1, b_1, ...`` of ``a_0 + Σ a_k cos 2πkj/P + b_k sin 2πkj/P`` through ``v`` ``(P,)``, by numpy."""
    f = np.fft.rfft(v) / len(v)
    out = [f[0].real]
    for k in range(1, (n + 1) // 2):
        out += [2 * f[k].real, -2 * f[k].imag]
    return np.array(out)


def test_fourier_coefficients_are_numpys_fft_on_one_and_two_periodic_axes() -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((3, 16, 2))
    got = fourier_coefficients(torch.from_numpy(v), [9]).numpy()
    for b in range(3):
        for c in range(2):
            np.testing.assert_allclose(got[b, :, c], _numpy_coefficients(v[b, :, c], 9), atol=1e-12)
    w = rng.standard_normal((2, 12, 10, 1))
    got2 = fourier_coefficients(torch.from_numpy(w), [7, 5]).numpy()
    for b in range(2):
        along_x = np.stack([_numpy_coefficients(w[b, :, j, 0], 7) for j in range(10)], 1)  # (7, 10)
        want = np.stack([_numpy_coefficients(along_x[k], 5) for k in range(7)])  # (7, 5)
        np.testing.assert_allclose(got2[b, :, :, 0], want, atol=1e-12)


def test_the_fourier_reader_reads_a_band_limited_input_alike_at_every_resolution() -> None:
    """``cos 2πx + 0.5 sin 6πx`` sampled at 16 or 64 points of the period: the same coefficients, the same reading."""
    kind = Reading(kind="fourier")
    model = OperatorModel([PERIODIC], 1, 1, modes=9, width=8, hidden=8, heads=2, reading=kind, dtype=torch.float64)
    assert isinstance(model.reader, FourierReader)

    def at(p: int) -> torch.Tensor:
        x = torch.arange(p, dtype=torch.float64) / p
        u = torch.cos(2 * torch.pi * x) + 0.5 * torch.sin(6 * torch.pi * x)
        return u[None, :, None]

    torch.testing.assert_close(model(at(16)), model(at(64)))
    want = torch.zeros(9, dtype=torch.float64)
    want[1], want[6] = 1.0, 0.5  # a_1 and b_3
    torch.testing.assert_close(fourier_coefficients(at(64), [9])[0, :, 0], want)


def test_the_fourier_reader_is_refused_off_periodic_axes_and_on_too_few_samples() -> None:
    with pytest.raises(InputError, match=r"Fourier reader needs every axis periodic"):
        OperatorModel([ZERO], 1, 1, modes=8, width=8, heads=2, reading=Reading(kind="fourier"))
    model = OperatorModel([PERIODIC], 1, 1, modes=9, width=8, heads=2, reading=Reading(kind="fourier"))
    with pytest.raises(InputError, match=r"axis x has 8 samples, fewer than the Fourier reader's 9"):
        model(torch.randn(2, 8, 1))
    free = (Axis("nodes"),)
    bounded = samples(torch.randn(4, 17), torch.randn(4, 17), free, where="t")
    with pytest.raises(UserError, match=r"reader=fourier needs every axis periodic"):
        check_fit(PRESETS["tiny"].replace(reader="fourier"), bounded)


def test_the_loss_by_hand_and_smoothing_only_on_a_bounded_axis() -> None:
    """The objective by hand: per sample ``r² = Σ w (u - e)² / Σ w e²`` with the layout's weights (the periodic
    trapezoid rule: equal weights), or ``r`` with ``relative``, averaged; ``smooth`` adds nothing on a periodic axis
    and ``λ roughness(u) / mean(e²)`` on a bounded one."""
    torch.manual_seed(0)
    model = OperatorModel([PERIODIC], 1, 1, modes=7, width=8, hidden=8, heads=2, dtype=torch.float64)
    x, exact = torch.randn(4, 16, 1, dtype=torch.float64), torch.randn(4, 16, 1, dtype=torch.float64)
    with torch.no_grad():
        pred = model.values(model(x), (16,)).numpy()[..., 0]
        e = exact.numpy()[..., 0]
        r2 = ((pred - e) ** 2).sum(1) / (e**2).sum(1)
        np.testing.assert_allclose(float(objective(model, x, exact, 0.0)), np.mean(r2), rtol=1e-12)
        np.testing.assert_allclose(float(objective(model, x, exact, 5.0)), np.mean(r2), rtol=1e-12)
        relative = float(objective(model, x, exact, 5.0, relative=True))
        np.testing.assert_allclose(relative, np.mean(np.sqrt(r2)), rtol=1e-12)
    assert smoothing(5.0, [PERIODIC]) == 0.0 and smoothing(5.0, [ZERO]) == 5.0
    bounded = OperatorModel([ZERO], 1, 1, modes=7, width=8, hidden=8, heads=2, dtype=torch.float64)
    xz, ez = torch.randn(3, 17, 1, dtype=torch.float64), torch.randn(3, 17, 1, dtype=torch.float64)
    with torch.no_grad():
        u = bounded(xz)
        extra = (roughness(u, [ZERO.boundary]) / ez.pow(2).flatten(1).mean(-1)).mean()
        torch.testing.assert_close(objective(bounded, xz, ez, 2.0) - objective(bounded, xz, ez, 0.0), 2.0 * extra)
