"""Seeded random smooth functions, sampled as scattered points or as a low-resolution image.

A function of one variable is a random Chebyshev series on [-1, 1],

    f(x) = Σ_{k<K} c_k T_k(x),    c_k ~ N(0, ρ^(2k)),

(``K = degree``, ``ρ = decay``: analytic, with geometrically decaying coefficients); one of two
variables is ``Σ c_kl T_k(x) T_l(y)`` with ``c_kl ~ N(0, ρ^(2(k+l)))``. Scattered samples are ``n``
points drawn uniformly on [-1, 1] (sorted, so that a spline can take them as they are), ``n`` itself
drawn per function; images are the values on the uniform ``r x r`` grid ``linspace(-1, 1, r)²``
(corners included). Everything is drawn from a ``torch.Generator``: training batches are fresh
functions every step, and the held-out set comes from a separate seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from instances.chebyshev import evaluate_2d, vandermonde

from .config import Config

#: the sample counts at which the points task is evaluated (those inside [min_points, max_points])
COUNTS = (6, 8, 12, 16, 24)
#: the output resolutions, as multiples of the input's, at which the grid task is evaluated
ZOOMS = (4, 8)
#: the uniform grid on which functions of one variable are compared
DENSE = 401
#: added to the seed for the held-out set
HELD_OUT = 1_000_003


@dataclass(frozen=True)
class Points:
    """Scattered samples of a batch of functions, padded to one length.

    Attributes:
        coefficients: ``(B, degree)`` the functions' Chebyshev coefficients.
        x, f: ``(B, n)`` sorted sample positions and values; zero after each row's length.
        lengths: ``(B,)`` samples per function.
    """

    coefficients: Tensor
    x: Tensor
    f: Tensor
    lengths: Tensor


@dataclass(frozen=True)
class Images:
    """Functions of two variables and their values on a uniform ``r x r`` grid.

    Attributes:
        coefficients: ``(B, degree, degree)`` the functions' Chebyshev coefficients.
        image: ``(B, r, r)``, ``image[b, i, j] = f_b(s_i, s_j)`` with ``s = linspace(-1, 1, r)``.
    """

    coefficients: Tensor
    image: Tensor


def series(config: Config, batch: int, generator: torch.Generator, dims: int = 1) -> Tensor:
    """``(batch, K)`` or ``(batch, K, K)`` random coefficients with standard deviations ``ρ^k`` (``ρ^(k+l)``)."""
    k = config.degree
    scale = config.decay ** torch.arange(k, dtype=torch.float64)
    c = torch.randn(batch, *([k] * dims), generator=generator, dtype=torch.float64)
    return c * (scale if dims == 1 else scale[:, None] * scale[None, :])


def sample_points(config: Config, c: Tensor, generator: torch.Generator, count: int | None = None) -> Points:
    """Sample each series in ``c`` ``(B, K)`` at ``count`` (default: random in [min, max]) uniform points."""
    b = c.shape[0]
    if count is None:
        lengths = torch.randint(config.min_points, config.max_points + 1, (b,), generator=generator)
    else:
        lengths = torch.full((b,), count)
    n = int(lengths.max())
    x = 2 * torch.rand(b, n, generator=generator, dtype=torch.float64) - 1
    valid = torch.arange(n) < lengths[:, None]
    # each row's valid points sorted into its prefix (padding, set past 1, sorts last), padding then zeroed
    x = torch.where(valid, x.masked_fill(~valid, 2.0).sort(-1).values, 0.0)
    f = (vandermonde(x, c.shape[-1]) @ c.unsqueeze(-1)).squeeze(-1)
    return Points(c, x, torch.where(valid, f, 0.0), lengths)


def grid(r: int) -> Tensor:
    """``linspace(-1, 1, r)`` in float64: the image's (and the comparison's) uniform grid."""
    return torch.linspace(-1, 1, r, dtype=torch.float64)


def sample_images(config: Config, c: Tensor) -> Images:
    """The series ``c`` ``(B, K, K)`` on the ``resolution x resolution`` uniform grid."""
    s = grid(config.resolution)
    return Images(c, evaluate_2d(c, s, s))


@dataclass(frozen=True)
class HeldOut:
    """The held-out functions: sampled at each of :data:`COUNTS` (points) and as images (grid)."""

    points: dict[int, Points]
    images: Images


def held_out(config: Config) -> HeldOut:
    """The seeded held-out set (the same functions for every sample count)."""
    g = torch.Generator().manual_seed(config.seed + HELD_OUT)
    c1 = series(config, config.test, g)
    counts = [n for n in COUNTS if config.min_points <= n <= config.max_points] or [config.max_points]
    points = {n: sample_points(config, c1, g, n) for n in counts}
    return HeldOut(points, sample_images(config, series(config, config.test, g, 2)))
