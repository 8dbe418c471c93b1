"""Chebyshev series on [-1, 1] as a structure: functions stored by their coefficients.

A value on the axis ``Chebyshev(n)`` is a polynomial of degree ``n - 1``,

    p(t) = Σ_{k<n} c_k T_k(t),    t ∈ [-1, 1],

stored as its ``n`` coefficients ``c_k`` in the basis of Chebyshev polynomials
of the first kind. A value on ``Chebyshev(n) × Chebyshev(m)`` (a
``Field[X, Y]``) is a function of two variables ``Σ c_kl T_k(x) T_l(y)``.

The transforms between coefficients and values at the Chebyshev points of the
first kind ``t_j = -cos(π(2j+1)/(2m))`` are DCTs computed with ``torch.fft``
(see ``instances._chebtransform``, re-exported here).

The structure (the design source's ``CVector``) writes only its contract
(:class:`applicative.Structure`):

* basis: coefficients <-> values at first-kind points (:class:`ChebyshevBasis`),
  products exact on the ``2n - 1``-point grid;
* measure: Fejér's first quadrature rule at those points (all weights
  positive; :func:`quadrature_weights`), and the exact metric ``W_nm = ∫ T_n T_m``.

Everything else is derived from it (:mod:`applicative.kernels`):

* ``fmap f`` -- values at the ``n`` points, ``f`` pointwise, interpolate back:
  the design source's ReLU. ``zip_with f a b`` -- values of both at ``2n - 1``
  points, ``f`` pointwise, interpolate and truncate to ``n`` terms (for
  ``f = *``: numpy's ``chebmul`` truncated).
* ``contract(a, b) = a W b`` -- the exact integral of the (untruncated)
  product. It equals the generic definition ``counit(zip_with(*))`` exactly
  when the product of the two series has degree ``< n``; otherwise the two
  differ by ``∫`` of the product's truncated tail, and the fused one is the
  true integral. ``affine(x, A, b) = x W Aᵀ + b`` (rows of ``A`` are functions too).
* ``softmax`` -- the faithful continuous softmax ``e^{p(t)} / ∫ e^{p(s)} ds``:
  ``e^p`` sampled at ``2n - 1`` points, interpolated, truncated to ``n``
  terms (``q``) and divided by ``∫ q``.
* ``layer_norm`` -- mean ``∫p / 2``, variance ``∫(p - mean)² / 2 = c W c / 2`` (exact).
* Attention: Chebyshev *heads* lower with the factor ``W = L Lᵀ`` (Cholesky);
  Chebyshev *keys* lower through their quadrature points: keys and values
  sampled at the ``2n - 1`` points with the bias ``log ρ_j`` -- the quadrature
  of ``∫ e^{s(t)} v(t) dt / ∫ e^{s(t)} dt``, whose weights ``ρ_j e^{s(t_j)}`` are
  positive (the truncated series ``q`` is not: it dips below zero where
  ``e^s`` is sharp).

``pure`` (the constant function ``(x, 0, ..., 0)``) and ``counit``
(``∫ p = Σ_k w_k c_k``, ``w_k = 2/(1 - k²)`` for even ``k``) are overridden:
exact and transform-free; the law checker compares them with the derived ones.

:class:`CoefficientSoftmax` is the design source's shortcut: a softmax applied
directly to the rows of coefficients, as if the coefficients were positions.
It is cheap and keeps the coefficients (hence the function) bounded, but it is
not ``e^{p}`` normalised; use it as an attention normalisation where the
design source does.

Only the real ring: ``W`` and ``w`` are real integrals, so other rings raise
:class:`~applicative.StructureError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar, TypeVarTuple

import torch
from torch import Tensor

from applicative import Field, Normalise, Ring, Sized, Structure

from ._chebtransform import (
    bubble,
    coefficients,
    derivative,
    evaluate,
    evaluate_2d,
    integral_weights,
    metric,
    metric_factor,
    points,
    quadrature_weights,
    values,
    vandermonde,
)
from ._chebtransform import points as _points
from ._series import SeriesBasis

__all__ = [
    "Chebyshev",
    "ChebyshevBasis",
    "CoefficientSoftmax",
    "bubble",
    "coefficients",
    "derivative",
    "evaluate",
    "evaluate_2d",
    "integral_weights",
    "metric",
    "metric_factor",
    "points",
    "quadrature_weights",
    "values",
    "vandermonde",
]

F = TypeVar("F", bound=Structure)
I = TypeVarTuple("I")


class ChebyshevBasis(SeriesBasis):
    """Coefficients of ``T_0..T_{n-1}`` <-> values at first-kind Chebyshev points (DCTs)."""

    transforms = (values, coefficients)


class Chebyshev(Sized):
    """A Chebyshev series of ``size`` coefficients (degree ``size - 1``) on [-1, 1].

    Declare an axis nominally, ``class X(Chebyshev): size = 16``, or use an
    anonymous ``Chebyshev(16)`` (equal to any other anonymous ``Chebyshev(16)``,
    never to ``X``).
    """

    real: ClassVar[bool] = True  # real coefficients

    @property
    def basis(self) -> ChebyshevBasis:
        return ChebyshevBasis(self.size)

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log ρ_j``: Fejér's first rule on ``points`` (default ``n``) first-kind points."""
        return quadrature_weights(self.size if points is None else points, dtype, device).log()

    def metric(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """The exact Gram matrix ``W_nm = ∫ T_n T_m`` (the derived one equals it up to rounding)."""
        return metric(self.size, dtype, device)

    # ---- overrides measured faster (and exact): law-checked against the derived kernels ----

    def pure(self, x: Tensor, dim: int) -> Tensor:
        """The constant function: ``c = (x, 0, ..., 0)`` (no transform)."""
        d = dim % (x.ndim + 1)
        rest = x.new_zeros((*x.shape[:d], self.size - 1, *x.shape[d:]))
        return torch.cat([x.unsqueeze(d), rest], d)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """``∫ p = Σ_k w_k c_k`` on the coefficients (no transform)."""
        self.check_ring(ring, "Chebyshev.counit")
        return x.movedim(dim, -1) @ integral_weights(self.size, x.dtype, x.device)

    # ---- transforms (thin wrappers over the module functions) --------------

    def points(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The ``n`` first-kind Chebyshev points, increasing; shape ``(n,)``."""
        return points(self.size, dtype, device)

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """Capability: the positions are first-kind Chebyshev points (:meth:`points` for the default ``n``)."""
        return _points(self.size if points is None else points, dtype, device)

    def values(self, c: Tensor, dim: int = -1, points: int | None = None) -> Tensor:
        """Coefficients -> values at ``points`` (default ``n``) first-kind points along ``dim``."""
        return values(c, dim, points)

    def coefficients(self, v: Tensor, dim: int = -1) -> Tensor:
        """Values at ``m >= n`` first-kind points along ``dim`` -> this structure's ``n`` coefficients."""
        return coefficients(v, dim, self.size)

    def evaluate(self, c: Tensor, t: Tensor, dim: int = -1) -> Tensor:
        """The series along ``dim`` at arbitrary points ``t`` in [-1, 1]; axis ``dim`` becomes ``t``'s axes."""
        return evaluate(c, t, dim)

    def derivative(self, c: Tensor, dim: int = -1, order: int = 1) -> Tensor:
        """Coefficients of the ``order``-th derivative, same length (top ``order`` terms zero)."""
        return derivative(c, dim, order)


@dataclass(frozen=True)
class CoefficientSoftmax(Normalise):
    """The design source's softmax for Chebyshev keys: ``softmax(scale * s)`` over the coefficient row.

    A deliberate shortcut that treats the keys' coefficients as if they were
    positions: each row of the result sums to 1 as a vector of coefficients,
    not as a function (its integral is ``Σ_k w_k p_k``). It is never lowered
    to a fused kernel; the weights then multiply the values through the keys'
    contraction (``P W v`` for Chebyshev keys).
    """

    scale: float = 1.0

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return scores.with_tensor(torch.softmax(scores.tensor * self.scale, -1))
