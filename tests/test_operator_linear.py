"""The least-squares baseline (``training.tasks.operator.linear``) against independent references: numpy's
``lstsq``, circular convolutions written out with ``np.roll``, and the heat equation's exact rollout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from operators.dataset import samples
from operators.layout import Axis
from tests.test_rollout import heat
from training.tasks.operator import InputError
from training.tasks.operator.linear import least_squares
from training.tasks.operator.rollout import horizon_errors, rollout, windows


def test_a_dense_map_is_numpys_least_squares() -> None:
    rng = np.random.default_rng(0)
    x, x_new = rng.standard_normal((80, 5, 2)), rng.standard_normal((10, 5, 2))
    w, bias = rng.standard_normal((10, 5)), rng.standard_normal(5)
    y = x.reshape(80, -1) @ w + bias + 0.1 * rng.standard_normal((80, 5))  # noise: the fit is not exact
    axes = (Axis("nodes"),)
    fit = least_squares(samples(x, y[..., None], axes), ridges=(1e-12,))
    design = np.concatenate([x.reshape(80, -1), np.ones((80, 1))], 1)
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    expected = np.concatenate([x_new.reshape(10, -1), np.ones((10, 1))], 1) @ coef
    got = fit(torch.from_numpy(x_new))[..., 0].numpy()
    assert not fit.modes
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def _circular(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """``y[i] = Σ_c Σ_j kernel[c, j] x[(i - j) mod P, c]``: ``x`` ``(N, P, C)``, ``kernel`` ``(C, P)``."""
    return sum(kernel[c, j] * np.roll(x[..., c], j, axis=1) for c in range(x.shape[-1]) for j in range(x.shape[1]))


def test_on_a_periodic_grid_the_map_is_the_convolution_that_made_the_data() -> None:
    rng = np.random.default_rng(1)
    kernel = rng.standard_normal((2, 16))
    x, x_new = rng.standard_normal((20, 16, 2)), rng.standard_normal((5, 16, 2))
    axes = (Axis("periodic"),)
    fit = least_squares(samples(x, (_circular(x, kernel) + 0.3)[..., None], axes))
    assert fit.modes
    np.testing.assert_allclose(fit(torch.from_numpy(x_new))[..., 0].numpy(), _circular(x_new, kernel) + 0.3, atol=1e-8)
    # the symmetry is what makes 20 samples enough: read on a bounded grid, the same data are fitted densely (33
    # unknowns per output value) and miss
    dense = least_squares(samples(x, _circular(x, kernel)[..., None], (Axis("nodes"),)))
    test = samples(x_new, _circular(x_new, kernel)[..., None], (Axis("nodes"),))
    assert float(dense.errors(test).mean()) > 1e-3


def test_in_two_dimensions_each_mode_has_its_own_channel_mixing() -> None:
    rng = np.random.default_rng(2)
    k = rng.standard_normal((3, 3))  # a 3x3 stencil on the 8x8 torus, from channel 0; channel 1 copied shifted

    def apply(x: np.ndarray) -> np.ndarray:
        y0 = sum(k[i, j] * np.roll(x[..., 0], (i - 1, j - 1), axis=(1, 2)) for i in range(3) for j in range(3))
        y1 = np.roll(x[..., 1], 2, axis=2) - x[..., 0]
        return np.stack([y0, y1], -1)

    x, x_new = rng.standard_normal((30, 8, 8, 2)), rng.standard_normal((4, 8, 8, 2))
    axes = (Axis("periodic"), Axis("periodic"))
    fit = least_squares(samples(x, apply(x), axes))
    np.testing.assert_allclose(fit(torch.from_numpy(x_new)).numpy(), apply(x_new), atol=1e-8)


def test_the_ridge_is_chosen_on_held_out_samples() -> None:
    # few noisy samples of a dense problem: no ridge at all interpolates the noise, a large one does better
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 20, 1))
    y = x[:, :1, 0] * np.ones((1, 20)) + rng.standard_normal((30, 20))
    fit = least_squares(samples(x, y[..., None], (Axis("nodes"),)))
    assert fit.ridge >= 1e-2


def test_the_linear_map_rolls_out_the_heat_equation_exactly() -> None:
    traj = heat(6, 8, 32, seed=4)
    axes = (Axis("periodic"),)
    fit = least_squares(windows(traj, 2, axes))
    pred = rollout(fit, traj[:, :2], 6, dims=1)
    per_step, total = horizon_errors(pred, traj[:, 2:, :, None], axes)
    assert float(total.max()) < 1e-8
    assert per_step.shape == (6, 6)


def test_bad_input_says_what_to_do() -> None:
    rng = np.random.default_rng(5)
    axes = (Axis("periodic"),)
    fit = least_squares(samples(rng.standard_normal((10, 8, 1)), rng.standard_normal((10, 8, 1)), axes))
    with pytest.raises(InputError, match="fit it again on"):
        fit(torch.zeros(2, 16, 1, dtype=torch.float64))
    with pytest.raises(InputError, match="at least 5"):
        least_squares(samples(rng.standard_normal((4, 8, 1)), rng.standard_normal((4, 8, 1)), axes))
    big = (Axis("nodes"), Axis("nodes"))
    with pytest.raises(InputError, match="coarser grid"):
        least_squares(samples(np.ones((6, 91, 91, 1)), np.ones((6, 91, 91, 1)), big))
    with pytest.raises(InputError, match="positive"):
        least_squares(samples(rng.standard_normal((10, 8, 1)), rng.standard_normal((10, 8, 1)), axes), ridges=())
