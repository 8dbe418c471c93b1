r"""Exact Poisson solves on the square by Chebyshev collocation and fast diagonalisation.

Problem: :math:`\Delta g = g_{xx} + g_{yy} = f` on :math:`[-1, 1]^2`, :math:`g = 0` on the boundary.
(The design source writes the Laplacian with squared first derivatives, and the boundary condition
on ``f``; both are slips: this is the standard Dirichlet problem.)

Method (Trefethen, *Spectral Methods in MATLAB*, ch. 7; Haidvogel & Zang 1979). On the
Chebyshev--Lobatto points :math:`x_j = \cos(\pi j / N)`, :math:`j = 0..N`, let :math:`D` be the
collocation differentiation matrix and :math:`A = (D^2)_{1:N-1,\,1:N-1}` its second power with the
boundary rows and columns removed (the boundary values are zero). Collocating at interior points,

.. math::  A U + U A^T = F, \qquad F_{ij} = f(x_i, x_j),\ U_{ij} = g(x_i, x_j),

and with the eigendecomposition :math:`A = V \Lambda V^{-1}` (real, negative, distinct eigenvalues)

.. math::  U = V \left[ \frac{(V^{-1} F V^{-T})_{ij}}{\lambda_i + \lambda_j} \right] V^T .

The polynomial interpolant of ``U`` (degree ``N`` in each variable) is the spectral solution; it is
exact when ``g`` is such a polynomial and converges spectrally for smooth data. Everything after the
one-off eigendecomposition is batched matrix products in torch (float64, any device).
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import Tensor


def lobatto_points(n: int) -> np.ndarray:
    """The ``n + 1`` Chebyshev--Lobatto points ``cos(pi j / n)``, from 1 down to -1."""
    x: np.ndarray = np.cos(np.pi * np.arange(n + 1) / n)
    return x


def cheb_differentiation(n: int) -> np.ndarray:
    """Trefethen's ``cheb(n)``: the ``(n+1) x (n+1)`` differentiation matrix on :func:`lobatto_points`."""
    x = lobatto_points(n)
    c = np.ones(n + 1)
    c[0] = c[-1] = 2.0
    c *= (-1.0) ** np.arange(n + 1)
    dx = x[:, None] - x[None, :]
    d = np.outer(c, 1.0 / c) / (dx + np.eye(n + 1))
    out: np.ndarray = d - np.diag(d.sum(axis=1))  # negative-sum trick for the diagonal
    return out


def vandermonde(x: np.ndarray, terms: int) -> np.ndarray:
    """``T[j, k] = T_k(x_j)`` for ``k < terms``."""
    t: np.ndarray = np.cos(np.arccos(np.clip(x, -1.0, 1.0))[:, None] * np.arange(terms)[None, :])
    return t


class PoissonSolver:
    """Batched exact solver for ``Δg = f`` on ``[-1, 1]²`` with ``g = 0`` on the boundary.

    Args:
        n: collocation degree ``N`` (``N + 1`` Lobatto points per axis); the solution's
            Chebyshev series has ``N + 1`` terms per axis.
    """

    def __init__(self, n: int) -> None:
        if n < 2:
            raise ValueError(f"PoissonSolver needs degree n >= 2, got {n}")
        self.n = n
        d = cheb_differentiation(n)
        a = (d @ d)[1:-1, 1:-1]
        lam, v = np.linalg.eig(a)
        if np.abs(lam.imag).max() > 1e-8 * np.abs(lam).max():
            raise ArithmeticError("second-derivative collocation matrix has complex eigenvalues")
        order = np.argsort(lam.real)
        self._lam = lam.real[order]
        self._v = v.real[:, order]
        self._vinv = np.linalg.inv(self._v)
        self._denom = self._lam[:, None] + self._lam[None, :]
        x = lobatto_points(n)
        self.points = x
        self._vander = vandermonde(x, n + 1)  # values = T c
        self._vander_inv = np.linalg.inv(self._vander)  # the discrete Chebyshev transform (DCT-I)

    @functools.cache  # noqa: B019 -- one solver per degree, kept for the program's lifetime
    def _tensors(self, device: torch.device) -> tuple[Tensor, ...]:
        t = functools.partial(torch.as_tensor, dtype=torch.float64, device=device)
        return t(self._v), t(self._vinv), t(self._denom), t(self._vander), t(self._vander_inv)

    def solve_values(self, f_values: Tensor) -> Tensor:
        """Solve from the source's values on the Lobatto grid.

        Args:
            f_values: ``(..., N+1, N+1)``, ``f(x_i, y_j)`` with ``x_i, y_j`` the Lobatto points.

        Returns:
            ``(..., N+1, N+1)``: ``g`` at the same grid (zero on the boundary rows/columns).
        """
        v, vinv, denom, _, _ = self._tensors(f_values.device)
        f = f_values.to(torch.float64)[..., 1:-1, 1:-1]
        u = v @ ((vinv @ f @ vinv.mT) / denom) @ v.mT
        g = f.new_zeros(f_values.shape)
        g[..., 1:-1, 1:-1] = u
        return g

    def values_to_coefficients(self, values: Tensor) -> Tensor:
        """``(..., N+1, N+1)`` Lobatto-grid values -> Chebyshev coefficients ``c_kl`` of the interpolant."""
        *_, tinv = self._tensors(values.device)
        return tinv @ values.to(torch.float64) @ tinv.mT

    def coefficients_to_values(self, coefficients: Tensor) -> Tensor:
        """``(..., m, m')`` Chebyshev coefficients (``m, m' <= N+1``) -> values on the Lobatto grid."""
        _, _, _, t, _ = self._tensors(coefficients.device)
        m, mp = coefficients.shape[-2:]
        c = coefficients.to(torch.float64)
        return t[:, :m] @ c @ t[:, :mp].mT

    def solve(self, f_coefficients: Tensor) -> Tensor:
        """Solve from the source's Chebyshev coefficients.

        Args:
            f_coefficients: ``(..., m, m')``, ``f(x, y) = Σ f_kl T_k(x) T_l(y)``, ``m, m' <= N + 1``
                (for an exact solve of a polynomial ``f`` of degree ``d``, use ``N >= d + 2``).

        Returns:
            ``(..., N+1, N+1)``: the Chebyshev coefficients of ``g``.
        """
        return self.values_to_coefficients(self.solve_values(self.coefficients_to_values(f_coefficients)))


def evaluate_2d(coefficients: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """``Σ c_kl T_k(x_i) T_l(y_j)`` on the tensor grid ``x x y``: ``(..., m, m')`` -> ``(..., len(x), len(y))``."""
    m, mp = coefficients.shape[-2:]
    tx = torch.cos(torch.arccos(x.clamp(-1, 1))[:, None] * torch.arange(m, dtype=x.dtype, device=x.device))
    ty = torch.cos(torch.arccos(y.clamp(-1, 1))[:, None] * torch.arange(mp, dtype=y.dtype, device=y.device))
    return tx.to(coefficients.dtype) @ coefficients @ ty.to(coefficients.dtype).mT
