r"""Gaussian random fields on the periodic unit interval and torus, in the FNO paper's two conventions.

Both are mean-zero fields with covariance a multiple of :math:`(-\Delta + \tau^2 I)^{-\gamma}` on ``[0, 1)^d``,
whose eigenfunctions are :math:`e^{2\pi i k\cdot x}` with eigenvalues :math:`\lambda_k = 4\pi^2|k|^2 + \tau^2`;
the constant mode is left out. The two generators of Li et al. (2021) normalise them differently:

* **1D (Burgers; FNO's MATLAB ``GRF1``)**: :math:`u(x) = \sum_{k=1}^{K} \sqrt2\,\sigma\lambda_k^{-\gamma/2}
  (\xi_k \cos 2\pi kx + \eta_k \sin 2\pi kx)`, :math:`\xi, \eta \sim \mathcal N(0, 1)` i.i.d. Its covariance is
  exactly :math:`\sigma^2(-\Delta + \tau^2)^{-\gamma}` on mean-zero functions:
  :math:`\operatorname{Cov}(u(x), u(y)) = \sum_{k \ne 0} \sigma^2 \lambda_k^{-\gamma} e^{2\pi i k (x - y)}`.
  Note ``sigma`` is the *amplitude*: the paper's ":math:`\mathcal N(0, 625(-\Delta + 25I)^{-2})`" (625 the
  variance factor, as its first author answers in neuraloperator issue 24) is the call ``GRF1(·, 0, γ=2, τ=5,
  σ=25)``, pointwise standard deviation about 0.59.
* **2D (Navier--Stokes; FNO's torch ``GaussianRF``)**: independent complex normals
  :math:`c_k = \sqrt2\,\sigma\lambda_k^{-\alpha/2}(\xi_k + i\eta_k)` on every wavenumber of the box, and the
  real part of :math:`\sum_k c_k e^{2\pi i k\cdot x}`. Its covariance is
  :math:`2\sigma^2(-\Delta + \tau^2)^{-\alpha}`: twice the nominal one, because the modes ``k`` and ``-k`` are
  drawn independently. FNO's default amplitude is :math:`\sigma = \tau^{\alpha - d/2}`, ``7^{3/2}`` for
  ``α = 2.5, τ = 7`` (the paper's ":math:`7^{3/2}(-\Delta + 49I)^{-2.5}`").

Here the modes are truncated to a box of wavenumbers ``|k_i| ≤ K`` fixed by the caller (FNO: all the modes of
its generation grid); the standard normal draws ``normals`` are passed in, so a seed fixes the field
whatever grid it is evaluated on. Fields come back as samples at ``x_j = j / n`` (float64).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ._spectral import full_wavenumbers


def eigenvalues(k2: Tensor, tau: float) -> Tensor:
    """``λ_k = 4π²|k|² + τ²`` for squared integer wavenumbers ``k2``."""
    return 4 * math.pi**2 * k2 + tau**2


def grf_1d_coefficients(normals: Tensor, sigma: float, tau: float, gamma: float) -> Tensor:
    """The complex Fourier coefficients ``c_k`` ``(count, K + 1)`` of the 1D field (``c_0 = 0``).

    ``normals`` ``(count, 2, K)``: the draws ``ξ_k, η_k`` of ``k = 1 … K``. The field is
    ``u(x) = Σ_{k=1}^K 2 Re(c_k e^{2πikx})``, ``c_k = σ λ_k^{-γ/2} (ξ_k - i η_k) / √2``.
    """
    if normals.ndim != 3 or normals.shape[1] != 2:
        raise ValueError(f"normals must be (count, 2, modes), got {tuple(normals.shape)}")
    k = torch.arange(1, normals.shape[-1] + 1, dtype=torch.float64, device=normals.device)
    amp = sigma * eigenvalues(k**2, tau) ** (-gamma / 2) / math.sqrt(2)
    c = torch.complex(normals[:, 0].double(), -normals[:, 1].double()) * amp
    return torch.cat([torch.zeros_like(c[:, :1]), c], dim=1)


def grf_1d(normals: Tensor, n: int, sigma: float, tau: float, gamma: float) -> Tensor:
    """Samples ``(count, n)`` at ``j / n`` of the 1D field (MATLAB ``GRF1`` convention) from ``normals``.

    Exact point values of the truncated series (the coefficients are folded onto the grid when ``K ≥ n/2``).
    """
    c = grf_1d_coefficients(normals, sigma, tau, gamma)
    return modes_to_grid_1d(c, n)


def seeded_grf_1d(
    count: int, n: int, seed: int, modes: int, tag: int, sigma: float, tau: float, gamma: float
) -> Tensor:
    """``count`` samples ``(count, n)`` at ``j / n`` of the 1D field (:func:`grf_1d`) with ``modes`` modes, sample
    ``i`` drawn by its own generator seeded ``(tag, seed, i)`` mode by mode: the same whatever ``count``, and its
    first modes the same whatever ``modes``. ``tag`` keeps one generator's draws apart from another's."""
    normals = np.stack(
        [np.random.default_rng([tag, seed, i]).standard_normal((modes, 2)).T for i in range(count)]
    )  # (count, 2, modes)
    return grf_1d(torch.from_numpy(normals), n, sigma, tau, gamma)


def modes_to_grid_1d(c: Tensor, n: int) -> Tensor:
    """Samples ``(count, n)`` at ``j / n`` of ``c_0 + Σ_{k≥1} 2 Re(c_k e^{2πikx})`` (``c`` ``(count, K + 1)``)."""
    k = torch.arange(c.shape[-1], device=c.device)
    full = torch.zeros(c.shape[0], n, dtype=c.dtype, device=c.device)
    full.index_add_(1, k % n, c)  # folding: the value at the nodes is the aliased sum
    full.index_add_(1, (-k[1:]) % n, c[:, 1:].conj())
    u: Tensor = torch.fft.ifft(full * n).real
    return u


def grf_2d(normals: Tensor, n: int, sigma: float, tau: float, alpha: float) -> Tensor:
    """Samples ``(count, n, n)`` at ``(i / n, j / n)`` of the 2D field (torch ``GaussianRF`` convention).

    ``normals`` ``(count, 2, 2K + 1, 2K + 1)``: the real and imaginary draws of ``c_k`` for ``k_x, k_y`` in
    ``-K … K`` (axis 2 is ``k_x``, along the first grid axis; axis 3 is ``k_y``). Requires ``n > 2K``.
    """
    if normals.ndim != 4 or normals.shape[1] != 2 or normals.shape[2] != normals.shape[3] or normals.shape[2] % 2 != 1:
        raise ValueError(f"normals must be (count, 2, 2K + 1, 2K + 1), got {tuple(normals.shape)}")
    big_k = (normals.shape[2] - 1) // 2
    if n <= 2 * big_k:
        raise ValueError(f"n must exceed 2K = {2 * big_k} to hold the field's modes, got {n}")
    k = torch.arange(-big_k, big_k + 1, dtype=torch.float64, device=normals.device)
    amp = math.sqrt(2) * sigma * eigenvalues(k[:, None] ** 2 + k[None, :] ** 2, tau) ** (-alpha / 2)
    amp[big_k, big_k] = 0.0
    c = torch.complex(normals[:, 0].double(), normals[:, 1].double()) * amp
    # the real part of Σ c_k e^{2πik·x} has the Hermitian coefficients (c_k + conj(c_{-k})) / 2
    g = (c + c.flip(-2, -1).conj()) / 2
    full = torch.zeros(c.shape[0], n, n, dtype=c.dtype, device=c.device)
    idx = (k.long() % n).to(c.device)
    full[:, idx[:, None], idx[None, :]] = g
    w: Tensor = torch.fft.ifft2(full * n * n).real
    return w


def grf_2d_variance(big_k: int, sigma: float, tau: float, alpha: float) -> float:
    """The pointwise variance ``Σ_{0 < max|k_i| ≤ K} 2σ² λ_k^{-α}`` of :func:`grf_2d`'s field."""
    k = full_wavenumbers(2 * big_k + 1)
    lam = eigenvalues(k[:, None] ** 2 + k[None, :] ** 2, tau) ** (-alpha)
    return float(2 * sigma**2 * (lam.sum() - tau ** (-2 * alpha)))
