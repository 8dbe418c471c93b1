"""Continuous distributions as weighted point sets: quadrature rules onto :class:`Distribution`.

A continuous random variable ``X`` is represented by ``n`` points ``x_i`` with
weights ``w_i`` (non-negative, summing to 1): a :class:`~applicative.Field` of
values ``(*batch, n)`` on a :class:`Distribution` axis, so ``E[f(X)] ≈ Σ w_i f(x_i)``
is the structure's counit of ``fmap f``, and everything built on distributions
(pairing, attention over outcomes, :func:`~instances.distribution.pushforward`)
applies unchanged. The rules:

* **Gauss–Hermite** (``"gauss-hermite"``) for ``Normal(μ, σ)``: nodes ``z_i`` and
  weights ``h_i`` of ``numpy.polynomial.hermite_e.hermegauss(n)`` (weight
  ``e^{-z²/2}``), points ``μ + σ z_i``, probabilities ``h_i / √(2π)``. Exact for
  polynomials of degree ``≤ 2n - 1``; for smooth ``f`` the error falls
  faster than any power of ``n`` (``E[e^X]`` to ~1e-15 with ``n = 20``, ``σ ≤ 1``).
* **Gaussian mixtures** ``Σ_k π_k N(μ_k, σ_k²)`` (:func:`gaussian_mixture`, or a
  ``MixtureSameFamily`` of ``Normal``): Gauss–Hermite per component, ``K·n``
  points component-major (``k·n + i``) with probabilities ``π_k h_i / √(2π)``;
  exact for polynomials of degree ``≤ 2n - 1``.
* **Gauss–Legendre in the CDF** (``"gauss-legendre-cdf"``) for any other
  distribution with ``icdf``: ``E[f(X)] = ∫₀¹ f(F⁻¹(u)) du`` by the ``n``-point
  Gauss–Legendre rule on ``(0, 1)`` (``numpy.polynomial.legendre.leggauss``),
  points ``F⁻¹(u_i)``. Exact for bounded support with ``f∘F⁻¹`` polynomial
  (``Uniform``); for unbounded support ``f∘F⁻¹`` is singular at the ends and
  the error falls algebraically (``Exponential`` mean: relative ~2e-4 at ``n = 64``).
* **Sampling** (``"sampling"``) otherwise (``Gamma``, ``Beta``): ``n`` draws,
  weight ``1/n`` each, seeded (``seed``) without touching the global generator's
  state; error ``O(n^{-1/2})``.

Only scalar (``event_shape == ()``) distributions; a batch of them gives values
``(*batch, n)``. The probabilities are shared across the batch except for a
mixture's (per example, its mixing weights).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from numpy.polynomial.hermite_e import hermegauss
from numpy.polynomial.legendre import leggauss
from torch import Tensor
from torch import distributions as td

from applicative import Field, StructureError

from .distribution import Distribution

Rule = Literal["gauss-hermite", "gauss-legendre-cdf", "sampling"]


def hermite_rule(n: int, dtype: torch.dtype = torch.float64) -> tuple[Tensor, Tensor]:
    """Standard-normal Gauss–Hermite nodes ``(n,)`` and probabilities ``(n,)`` (summing to 1)."""
    _check_points(n)
    z, w = hermegauss(n)
    return torch.from_numpy(z).to(dtype), torch.from_numpy(w / math.sqrt(2 * math.pi)).to(dtype)


def normal_points(loc: Tensor, scale: Tensor, n: int) -> Field[Distribution]:
    """``N(loc, scale²)`` as ``n`` Gauss–Hermite points: values ``(*batch, n)`` on one shared :class:`Distribution`."""
    loc, scale = torch.broadcast_tensors(torch.as_tensor(loc), torch.as_tensor(scale))  # type: ignore[no-untyped-call]
    _check_scale(scale)
    z, p = hermite_rule(n, loc.dtype)
    return Field(loc.unsqueeze(-1) + scale.unsqueeze(-1) * z.to(loc.device), (Distribution(p),))


def gaussian_mixture(weights: Tensor, loc: Tensor, scale: Tensor, n: int) -> Field[Distribution]:
    """``Σ_k weights_k N(loc_k, scale_k²)`` as ``K·n`` Gauss–Hermite points, component-major.

    Args:
        weights: mixing probabilities ``(*batch, K)`` (non-negative, summing to 1).
        loc, scale: ``(*batch, K)`` (broadcast with ``weights``); ``scale > 0``.
        n: points per component.

    Returns:
        values ``(*batch, K·n)`` on a per-example :class:`Distribution` with probabilities ``weights_k h_i/√(2π)``.
    """
    weights, loc, scale = torch.broadcast_tensors(weights, loc, scale)  # type: ignore[no-untyped-call]
    _check_scale(scale)
    z, p = hermite_rule(n, loc.dtype)
    z, p = z.to(loc.device), p.to(loc.device)
    values = (loc.unsqueeze(-1) + scale.unsqueeze(-1) * z).flatten(-2)  # (*batch, K*n)
    probs = (weights.detach().to(loc.dtype).unsqueeze(-1) * p).flatten(-2)
    return Field(values, (Distribution(probs),))


def rule(dist: td.Distribution) -> Rule:
    """The rule :func:`quadrature` uses for ``dist`` (see the module docstring)."""
    if isinstance(dist, td.Normal) or (
        isinstance(dist, td.MixtureSameFamily) and isinstance(dist.component_distribution, td.Normal)
    ):
        return "gauss-hermite"
    try:
        like = _like(dist)
        dist.icdf(torch.full(dist.batch_shape, 0.5, dtype=like.dtype, device=like.device))
    except NotImplementedError:
        return "sampling"
    return "gauss-legendre-cdf"


def quadrature(dist: td.Distribution, n: int, *, seed: int = 0) -> Field[Distribution]:
    """``dist`` as ``n`` weighted points (``K·n`` for a Gaussian mixture): values ``(*dist.batch_shape, n)``.

    Raises:
        StructureError: for a distribution with an event shape (not scalar), or ``n < 1``.
    """
    _check_points(n)
    if dist.event_shape != torch.Size():
        raise StructureError(
            f"quadrature: scalar distributions only, got {type(dist).__name__} with event shape "
            f"{tuple(dist.event_shape)}; integrate each coordinate, or pair scalar ones with product()"
        )
    how = rule(dist)
    if isinstance(dist, td.Normal):
        return normal_points(dist.loc, dist.scale, n)
    if isinstance(dist, td.MixtureSameFamily):
        c = dist.component_distribution
        assert isinstance(c, td.Normal)
        return gaussian_mixture(dist.mixture_distribution.probs, c.loc, c.scale, n)
    if how == "gauss-legendre-cdf":
        t, w = leggauss(n)
        like = _like(dist)
        u = torch.from_numpy((t + 1) / 2).to(like).reshape(n, *([1] * len(dist.batch_shape)))
        values = dist.icdf(u.expand(n, *dist.batch_shape)).movedim(0, -1)  # (*batch, n)
        return Field(values, (Distribution(torch.from_numpy(w / 2).to(values.dtype)),))
    device = _like(dist).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        values = dist.sample(torch.Size([n])).movedim(0, -1)  # (*batch, n)
    return Field(values, (Distribution(torch.full((n,), 1.0 / n, dtype=values.dtype)),))


def _like(dist: td.Distribution) -> Tensor:
    """The distribution's first floating parameter (its dtype and device; a default-dtype CPU scalar if none)."""
    for name in dist.arg_constraints:
        try:
            v = getattr(dist, name)
        except (AttributeError, NotImplementedError):
            continue
        if isinstance(v, Tensor) and v.dtype.is_floating_point:
            return v
    return torch.zeros(())


def _check_points(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise StructureError(f"quadrature: the number of points must be an int >= 1, got {n!r}")


def _check_scale(scale: Tensor) -> None:
    if not bool((scale > 0).all()) or not bool(torch.isfinite(scale).all()):
        raise StructureError(f"a Gaussian needs finite scales > 0, got {np.asarray(scale.detach().cpu())}")
