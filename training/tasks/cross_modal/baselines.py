"""The references: scipy's interpolators at the same samples, and the Bayes-optimal estimate.

* points: :class:`scipy.interpolate.CubicSpline` (not-a-knot; extrapolated outside the samples) and
  :class:`scipy.interpolate.RBFInterpolator` (thin-plate spline with a linear term), one per function;
* grid: bicubic interpolation, :class:`scipy.interpolate.RectBivariateSpline` with ``kx = ky = 3``, ``s = 0``;
* oracle: the posterior mean of the coefficients under the data's own Gaussian prior,
  ``ĉ = Σ Vᵀ (V Σ Vᵀ)⁻¹ f`` (``V`` the Chebyshev Vandermonde matrix at the samples, ``Σ = diag(ρ^(2k))``),
  which minimises the expected squared error of *any* estimator given the samples: no method trained on
  these functions can beat it on average. On an image with ``r >= K`` it is the exact series (least squares).
"""

from __future__ import annotations

import numpy as np
import numpy.polynomial.chebyshev as cheb
from scipy.interpolate import CubicSpline, RBFInterpolator, RectBivariateSpline

from .config import Config
from .data import Images, Points

Array = np.ndarray


def _rows(p: Points) -> list[tuple[Array, Array]]:
    x, f = p.x.numpy(), p.f.numpy()
    return [(x[i, :n], f[i, :n]) for i, n in enumerate(p.lengths.tolist())]


def spline(p: Points, t: Array) -> Array:
    """``(B, len(t))``: a cubic spline through each function's samples, evaluated at ``t``."""
    return np.stack([CubicSpline(x, f)(t) for x, f in _rows(p)])


def rbf(p: Points, t: Array) -> Array:
    """``(B, len(t))``: scipy's default radial basis interpolant (thin-plate spline + linear) at ``t``."""
    return np.stack([RBFInterpolator(x[:, None], f)(t[:, None]) for x, f in _rows(p)])


def posterior_mean(config: Config, p: Points, t: Array) -> Array:
    """``(B, len(t))``: the posterior mean under the prior ``c_k ~ N(0, ρ^(2k))``, evaluated at ``t``."""
    var = config.decay ** (2 * np.arange(config.degree))
    out = []
    for x, f in _rows(p):
        v = cheb.chebvander(x, config.degree - 1)
        gram = (v * var) @ v.T
        gram += 1e-12 * np.trace(gram) * np.eye(len(x))  # noiseless samples; a jitter keeps it invertible
        out.append(cheb.chebval(t, var * (v.T @ np.linalg.solve(gram, f))))
    return np.stack(out)


def bicubic(images: Images, m: int) -> Array:
    """``(B, m, m)``: bicubic interpolation of each image onto ``linspace(-1, 1, m)²``."""
    img = images.image.numpy()
    s, t = np.linspace(-1, 1, img.shape[-1]), np.linspace(-1, 1, m)
    return np.stack([RectBivariateSpline(s, s, a, kx=3, ky=3, s=0)(t, t) for a in img])


def least_squares_2d(config: Config, images: Images, m: int) -> Array:
    """``(B, m, m)``: the degree-``K`` series fitted to each image by least squares (exact when ``r >= K``)."""
    img = images.image.numpy()
    s, t = np.linspace(-1, 1, img.shape[-1]), np.linspace(-1, 1, m)
    pinv = np.linalg.pinv(cheb.chebvander(s, config.degree - 1))  # (K, r)
    c = pinv @ img @ pinv.T
    return np.stack([cheb.chebgrid2d(t, t, a) for a in c])


def relative_l2(pred: Array, true: Array) -> Array:
    """``‖pred - true‖ / ‖true‖`` per function, over all but the first axis."""
    axes = tuple(range(1, true.ndim))
    out: Array = np.sqrt(((pred - true) ** 2).sum(axes) / (true**2).sum(axes))
    return out
