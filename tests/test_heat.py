"""The exact heat map (:mod:`operators.heat`) against the closed-form solution, and its files against numpy."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from operators import heat


def test_a_fourier_mode_decays_as_the_closed_form_says() -> None:
    p = 16
    x = np.arange(p) / p
    gx, gy = np.meshgrid(x, x, indexing="ij")
    for kx, ky in ((0, 0), (1, 0), (3, -5), (7, 8), (8, 8)):  # (8, 8): the Nyquist cosine of an even grid
        u0 = np.cos(2 * np.pi * (kx * gx + ky * gy)) + 0.5 * np.sin(2 * np.pi * kx * gx)
        t, nu = 0.3, 0.02
        want = np.exp(-4 * np.pi**2 * nu * (kx**2 + ky**2) * t) * np.cos(2 * np.pi * (kx * gx + ky * gy))
        want += 0.5 * np.exp(-4 * np.pi**2 * nu * kx**2 * t) * np.sin(2 * np.pi * kx * gx)
        np.testing.assert_allclose(heat.evolve(u0[None], 2, nu, t)[0], want, rtol=0, atol=1e-12)
    u1 = np.sin(2 * np.pi * 3 * x)[None]
    np.testing.assert_allclose(heat.evolve(u1, 1, 0.1, 0.2)[0], np.exp(-4 * np.pi**2 * 0.9 * 0.2) * u1[0], atol=1e-12)


def test_blocks_are_exact_seeded_and_band_limited() -> None:
    u0, u = heat.block(4, 2, 8, 32, 2)
    np.testing.assert_allclose(u, heat.evolve(u0.astype(np.float64), 2), rtol=0, atol=1e-5 * float(np.abs(u).max()))
    again, _ = heat.block(4, 2, 8, 32, 2)
    other, _ = heat.block(4, 3, 8, 32, 2)
    assert np.array_equal(u0, again) and not np.array_equal(u0, other)
    spectrum = np.abs(np.fft.rfftn(u0.astype(np.float64), axes=(1, 2)))
    assert spectrum[:, 9:-8].max() < 1e-4 * spectrum.max()  # |k_x| <= 8 = P / 4


def test_files_hold_the_blocks(tmp_path: Path) -> None:
    for name in ("h.npz", "h.h5"):
        heat.write(tmp_path / name, 70, 8, 1, seed=1, rows=32)
    with np.load(tmp_path / "h.npz") as z:
        u0, u = z["u0"], z["u"]
    assert u0.shape == (70, 8) and u0.dtype == np.float32
    assert np.array_equal(u0[32:64], heat.field(1, 1, 32, 8, 1, 0.0))
    assert np.array_equal(u[64:], heat.field(1, 2, 6, 8, 1, heat.TIME))
    with h5py.File(tmp_path / "h.h5") as f:
        assert np.array_equal(f["u0"][:], u0) and np.array_equal(f["u"][:], u)
