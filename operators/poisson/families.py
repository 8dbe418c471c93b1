r"""Source families beyond the training distribution: spectra, structure and amplitude the model never saw.

Every family draws Chebyshev coefficient matrices ``(count, m, m)`` (float64, seeded); the exact solutions
come from :class:`~operators.poisson.solver.PoissonSolver` (:func:`operators.poisson.sources.make`). The families:

* ``decaying``: the training family's first half, ``f_kl = z_kl ρ^{k+l}`` (``ρ = 0.7``, modes ``< 12``);
* ``ood``: the historical out-of-distribution set: ``ρ = 0.85``, all ``n`` modes;
* ``flat``: ``f_kl = z_kl`` for every resolved mode: a flat spectrum (white noise up to mode ``n - 1``);
* ``rising``: ``f_kl = z_kl (k + 1)(l + 1)``: energy *growing* towards the highest resolved modes;
* ``sines``: ``Σ_{j<3} a_j sin(ω_j x + φ_j) sin(ν_j y + ψ_j)``, ``ω, ν ~ U[1, 8]`` (non-polynomial, rank 3);
* ``polynomials``: ``Σ_{j<3} p_j(x) q_j(y)``, ``p, q`` of degree ``n - 1`` with ``N(0, 1)`` *monomial*
  coefficients (most of their energy near ``x = ±1``);
* ``amplitudes``: ``decaying`` and ``flat`` sources scaled by ``10^U[-2, 2]`` (all others have unit L² norm);
* ``modes24``, ``modes32``: the ``ood`` law with 24 and 32 modes (``ρ = 0.85^{16/m}``): finer sources than
  the model reads.

``sines`` are interpolated at ``4n`` first-kind points and truncated to ``n`` terms; the dropped tail of
their series is below ``2e-4`` of the source's norm (:func:`truncation_of_sines` measures it). The
training family (:func:`training_sources`) is half ``decaying`` and half ``ρ ~ U[0.6, 1]`` over all
``n`` modes, so no family above is drawn from it except ``decaying``, and ``flat`` is its edge ``ρ = 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from instances.chebyshev import coefficients, points

from .norms import l2_norm_sq, unit

Draw = Callable[[int, torch.Generator, int], Tensor]


def gaussian(count: int, g: torch.Generator, n: int, std: Tensor) -> Tensor:
    """``z_kl · std_kl`` with ``z ~ N(0, 1)``, unit norm; ``std`` ``(n, n)`` or ``(count, n, n)``."""
    return unit(torch.randn(count, n, n, generator=g, dtype=torch.float64) * std)


def decay(n: int, rho: float | Tensor, active: int) -> Tensor:
    """``ρ^{k+l}`` on modes ``k, l < active`` (zero above); a tensor ``ρ`` ``(count,)`` gives ``(count, n, n)``."""
    k = torch.arange(n, dtype=torch.float64)
    r = torch.as_tensor(rho, dtype=torch.float64)[..., None, None]
    mask = (k[:, None] < active) & (k[None, :] < active)
    return r ** (k[:, None] + k[None, :]) * mask


def _decaying(count: int, g: torch.Generator, n: int) -> Tensor:
    return gaussian(count, g, n, decay(n, 0.7 ** (16 / n), 12 * n // 16))


def _ood(count: int, g: torch.Generator, n: int) -> Tensor:
    return gaussian(count, g, n, decay(n, 0.85 ** (16 / n), n))


def _flat(count: int, g: torch.Generator, n: int) -> Tensor:
    return gaussian(count, g, n, torch.ones(n, n, dtype=torch.float64))


def _rising(count: int, g: torch.Generator, n: int) -> Tensor:
    k = torch.arange(1, n + 1, dtype=torch.float64)
    return gaussian(count, g, n, k[:, None] * k[None, :])


def _sine_factors(count: int, g: torch.Generator, n: int, grid: int) -> Tensor:
    """Coefficients ``(count, 3, n)`` of ``sin(ω t + φ)`` interpolated on ``grid`` points (not truncated yet)."""
    t = points(grid)
    w = 1 + 7 * torch.rand(count, 3, 1, generator=g, dtype=torch.float64)
    phase = 2 * np.pi * torch.rand(count, 3, 1, generator=g, dtype=torch.float64)
    return coefficients(torch.sin(w * t + phase), -1)


def _sines(count: int, g: torch.Generator, n: int) -> Tensor:
    a = torch.randn(count, 3, generator=g, dtype=torch.float64)
    p, q = (_sine_factors(count, g, n, 4 * n)[..., :n] for _ in range(2))
    return unit(torch.einsum("bj,bjk,bjl->bkl", a, p, q))


def truncation_of_sines(count: int, n: int, seed: int = 0) -> float:
    """The largest relative L² norm of the sines' series beyond ``n`` terms (what ``sines`` leaves out)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(count, 3, generator=g, dtype=torch.float64)
    p, q = (_sine_factors(count, g, n, 4 * n) for _ in range(2))
    full = torch.einsum("bj,bjk,bjl->bkl", a, p, q)
    kept = torch.nn.functional.pad(full[:, :n, :n], (0, 3 * n, 0, 3 * n))
    return float((l2_norm_sq(full - kept) / l2_norm_sq(full)).sqrt().max())


def _polynomials(count: int, g: torch.Generator, n: int) -> Tensor:
    mono = torch.randn(count, 2, 3, n, generator=g, dtype=torch.float64)
    # monomial -> Chebyshev coefficients (numpy's poly2cheb, as a matrix: column j is x^j)
    to_cheb = torch.zeros(n, n, dtype=torch.float64)
    for j in range(n):
        c = np.polynomial.chebyshev.poly2cheb(np.eye(n)[j])
        to_cheb[: len(c), j] = torch.from_numpy(c)
    p, q = (mono[:, i] @ to_cheb.mT for i in range(2))
    return unit(torch.einsum("bjk,bjl->bkl", p, q))


def _amplitudes(count: int, g: torch.Generator, n: int) -> Tensor:
    half = count // 2
    f = torch.cat([_decaying(half, g, n), _flat(count - half, g, n)])
    return f * 10 ** (4 * torch.rand(count, 1, 1, generator=g, dtype=torch.float64) - 2)


def training_sources(count: int, g: torch.Generator, n: int) -> Tensor:
    """The training law, in equal thirds: ``decaying``; ``ρ ~ U[0.6, 1]`` over all ``n`` modes; and
    ``f_kl = z_kl ((k + 1)(l + 1))^α`` with ``α ~ U[0, 1]`` (flat to rising), so every resolved mode is excited."""
    third = count // 3
    rho = 0.6 + 0.4 * torch.rand(third, generator=g, dtype=torch.float64)
    k = torch.arange(1, n + 1, dtype=torch.float64)
    alpha = torch.rand(count - 2 * third, generator=g, dtype=torch.float64)[:, None, None]
    parts = [
        _decaying(third, g, n),
        gaussian(third, g, n, decay(n, rho ** (16 / n), n)),
        gaussian(count - 2 * third, g, n, (k[:, None] * k[None, :]) ** alpha),
    ]
    return torch.cat(parts)[torch.randperm(count, generator=g)]


#: name -> (how to draw it, the number of modes it is drawn with relative to the model's: ``None`` = the model's)
FAMILIES: dict[str, tuple[Draw, int | None]] = {
    "decaying": (_decaying, None),
    "ood": (_ood, None),
    "flat": (_flat, None),
    "rising": (_rising, None),
    "sines": (_sines, None),
    "polynomials": (_polynomials, None),
    "amplitudes": (_amplitudes, None),
    "modes24": (_ood, 24),
    "modes32": (_ood, 32),
}


def draw(name: str, count: int, seed: int, n: int = 16) -> Tensor:
    """``count`` sources of family ``name`` for an ``n``-mode model: ``(count, m, m)`` float64 (``m >= n``)."""
    if name not in FAMILIES:
        raise ValueError(f"unknown source family {name!r}; expected one of {', '.join(FAMILIES)}")
    fn, modes = FAMILIES[name]
    return fn(count, torch.Generator().manual_seed(seed), n if modes is None else max(modes, n))
