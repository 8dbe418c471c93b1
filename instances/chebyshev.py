"""Chebyshev series on [-1, 1] as a structure: functions stored by their coefficients.

A value on the axis ``Chebyshev(n)`` is a polynomial of degree ``n - 1``,

    p(t) = Σ_{k<n} c_k T_k(t),    t ∈ [-1, 1],

stored as its ``n`` coefficients ``c_k`` in the basis of Chebyshev polynomials
of the first kind. A value on ``Chebyshev(n) × Chebyshev(m)`` (a
``Field[X, Y]``) is a function of two variables ``Σ c_kl T_k(x) T_l(y)``.

The transforms between coefficients and values at the Chebyshev points of the
first kind ``t_j = -cos(π(2j+1)/(2m))`` are DCTs computed with ``torch.fft``
(see :mod:`instances._chebtransform`, re-exported here).

The structure (the design source's ``CVector``):

* ``pure x`` -- the constant function ``x``: ``c = (x, 0, ..., 0)``.
* ``fmap f`` -- values at the ``n`` points, ``f`` pointwise, interpolate back:
  the design source's ReLU. Conjugation by an invertible transform, so
  ``fmap id = id`` and ``fmap (g . f) = fmap g . fmap f`` hold exactly.
* ``zip_with f a b`` -- values of both at ``2n - 1`` points, ``f`` pointwise,
  interpolate and truncate to ``n`` terms. For ``f = *`` the values of the
  product (degree ``2n - 2``) are exact, so the result is the product series
  truncated to ``n`` terms (numpy's ``chebmul`` truncated).
* ``counit p = ∫_{-1}^{1} p = Σ_k w_k c_k`` with ``w_k = 2/(1 - k²)`` (even ``k``), ``0`` (odd ``k``).

Fused kernels, against the exact metric ``W_nm = ∫ T_n T_m``:

* ``contract(a, b) = a W b`` -- the exact integral of the (untruncated)
  product. It equals the generic definition ``counit(zip_with(*))`` exactly
  when the product of the two series has degree ``< n`` (e.g. both have
  degree ``< n/2``); otherwise the two differ by ``∫`` of the product's
  truncated tail, ``Σ_{k>=n} (ab)_k w_k``, and the fused one is the true integral.
* ``affine(x, A, b) = x W Aᵀ + b`` (rows of ``A`` are functions too).
* ``softmax`` -- the faithful continuous softmax ``e^{p(t)} / ∫ e^{p(s)} ds``:
  ``e^p`` sampled at ``2n - 1`` points, interpolated, truncated to ``n``
  terms (``q``) and divided by ``∫ q``, so the result integrates to exactly 1.
  ``∫ q = Σ_j ρ_j e^{p(t_j)}`` is a quadrature on the ``2n - 1`` points whose
  weights ``ρ_j`` are all positive (checked numerically up to ``n = 600``;
  ``min ρ_j > 1/n²``), so the normaliser never vanishes.
* ``layer_norm`` -- mean ``∫p / 2``, variance ``∫(p - mean)² / 2 = c W c / 2``
  (exact), then the weight as a function product (``zip_with``) and the bias
  as a function sum.
* Attention: ``sdpa_factor(x) = x L`` with ``W = L Lᵀ`` (Cholesky), so
  Chebyshev *heads* lower to a fused kernel; ``W`` is not diagonal, so
  :meth:`Chebyshev.sdpa_log_measure` raises ``NotImplementedError`` and
  attention over Chebyshev *keys* runs the generic definition.

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
from typing import TypeVar, TypeVarTuple

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import REAL, Field, Normalise, Real, Ring, Sized, Structure, StructureError
from applicative._structure import Pointwise, Pointwise2

from ._chebtransform import (
    coefficients,
    derivative,
    evaluate,
    evaluate_2d,
    integral_weights,
    metric,
    metric_factor,
    points,
    values,
    vandermonde,
)

__all__ = [
    "Chebyshev",
    "ChebyshevArbitrary",
    "CoefficientSoftmax",
    "coefficients",
    "derivative",
    "evaluate",
    "evaluate_2d",
    "integral_weights",
    "metric",
    "metric_factor",
    "points",
    "values",
    "vandermonde",
]

F = TypeVar("F", bound=Structure)
I = TypeVarTuple("I")


def _check_ring(op: str, ring: Ring) -> None:
    if not isinstance(ring, Real):
        raise StructureError(
            f"Chebyshev.{op}: a Chebyshev series integrates over the real ring only, got {ring!r}; "
            "use a Vector axis for other rings"
        )


class Chebyshev(Sized):
    """A Chebyshev series of ``size`` coefficients (degree ``size - 1``) on [-1, 1].

    Declare an axis nominally, ``class X(Chebyshev): size = 16``, or use an
    anonymous ``Chebyshev(16)`` (equal to any other anonymous ``Chebyshev(16)``,
    never to ``X``).
    """

    stores_positions = False  # coefficients: pure is the constant function, not a broadcast

    @property
    def grid(self) -> int:
        """Points of the oversampled grid, ``2n - 1``: products of two series are exact there."""
        return 2 * self.size - 1

    # ---- transforms (thin wrappers over the module functions) --------------

    def points(self, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The ``n`` first-kind Chebyshev points, increasing; shape ``(n,)``."""
        return points(self.size, dtype, device)

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

    # ---- Applicative / Counit ----------------------------------------------

    def check(self, x: Tensor, dim: int, where: str) -> None:
        super().check(x, dim, where)
        if not x.dtype.is_floating_point:
            raise StructureError(
                f"{where}: {self!r} holds real coefficients, got dtype {x.dtype}; convert with tensor.to(torch.float32)"
            )

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        rest = x.new_zeros((*x.shape[:d], self.size - 1, *x.shape[d:]))
        return torch.cat([x.unsqueeze(d), rest], d)

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        return coefficients(f(values(x, dim)), dim)

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        m = self.grid
        return coefficients(f(values(a, dim, m), values(b, dim, m)), dim, self.size)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        _check_ring("counit", ring)
        return x.movedim(dim, -1) @ integral_weights(self.size, x.dtype, x.device)

    # ---- fused kernels -------------------------------------------------------

    def mass(self, like: Tensor) -> Tensor:
        return like.new_full(like.shape[:-1], 2.0)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        _check_ring("contract", ring)
        w = metric(self.size, a.dtype, a.device)
        if a.shape[-2] <= b.shape[-1]:
            return (a @ w) @ b
        return a @ (w @ b)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        _check_ring("affine", ring)
        if weight.ndim == 2:
            return nnf.linear(x, weight @ metric(self.size, weight.dtype, weight.device), bias)
        return super().affine(x, weight, bias, ring)

    def softmax(self, x: Tensor, dim: int) -> Tensor:
        v = values(x, dim, self.grid)
        e = torch.exp(v - v.amax(dim, keepdim=True).detach())  # a constant shift of the function
        c = coefficients(e, dim, self.size)  # the (2n-1)-point interpolant of e^p, truncated
        return c / self.counit(c, dim, REAL).unsqueeze(dim)

    def layer_norm(self, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
        w = metric(self.size, x.dtype, x.device)
        mean = (x @ integral_weights(self.size, x.dtype, x.device)) / 2
        centred = torch.cat([(x[..., 0] - mean).unsqueeze(-1), x[..., 1:]], -1)
        var = ((centred @ w) * centred).sum(-1) / 2
        return self.scale_shift(centred * torch.rsqrt(var + eps).unsqueeze(-1), weight, bias)

    def sdpa_factor(self, x: Tensor) -> Tensor | None:
        return x @ metric_factor(self.size, x.dtype, x.device)

    def sdpa_log_measure(self, like: Tensor) -> Tensor | None:
        raise NotImplementedError("the Chebyshev metric W is not diagonal: attention over Chebyshev keys is generic")


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


from ._chebarbitrary import ChebyshevArbitrary  # noqa: E402 -- it needs Chebyshev defined
