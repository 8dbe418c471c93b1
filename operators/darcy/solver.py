r"""Darcy flow on the unit square by second-order finite differences (5-point, harmonic-mean faces).

Problem: :math:`-\nabla\cdot(a \nabla u) = f` on :math:`[0, 1]^2`, :math:`u = 0` on the boundary,
with a positive coefficient :math:`a` given at the grid's nodes (the data of Li et al. 2020, "Fourier
Neural Operator", are made the same way, with :math:`f = 1`).

Grid: ``N + 1`` nodes per axis, :math:`x_i = i h`, :math:`h = 1/N`; the unknowns are the
:math:`(N-1)^2` interior values. With the one-sided difference :math:`D` from interior nodes (boundary
values zero) to the ``N`` faces between neighbours of one axis, :math:`(D u)_{i+1/2} = (u_{i+1} -
u_i)/h`, the flux form of the operator is

.. math::  A(a) = D_x^T \operatorname{diag}(a_{x\text{-faces}}) D_x + D_y^T \operatorname{diag}(a_{y\text{-faces}}) D_y,

symmetric positive definite, with the face coefficient the harmonic mean of its two nodes,
:math:`a_{i+1/2} = 2 a_i a_{i+1} / (a_i + a_{i+1})`: the conductance of two half-cells in series, which
keeps the flux continuous across a jump in :math:`a`. For smooth :math:`a, u` the nodal error is
:math:`O(h^2)`; for a coefficient that jumps across a line half-way between nodes it stays
:math:`O(h^2)` (the harmonic mean is then the exact flux conductance), elsewhere it drops to
:math:`O(h)`.

The difference operators are built once per grid (:class:`DarcySolver`); each sample is then three
sparse products and one sparse LU (``scipy.sparse.linalg.splu``), in a loop over the batch.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
import scipy.sparse.linalg as spla

Array = npt.NDArray[np.float64]


def _face_difference(n: int) -> sp.csr_matrix:
    """``(n, n - 1)``: interior nodes ``1..n-1`` -> the ``n`` faces ``i + 1/2`` of one axis (times ``h``)."""
    rows = np.arange(n)
    upper = sp.csr_matrix((np.ones(n - 1), (rows[:-1], np.arange(n - 1))), shape=(n, n - 1))
    lower = sp.csr_matrix((np.ones(n - 1), (rows[1:], np.arange(n - 1))), shape=(n, n - 1))
    return (upper - lower).tocsr()


def harmonic_faces(a: Array, axis: int) -> Array:
    """Harmonic means of neighbouring nodes along ``axis`` of ``a`` ``(N+1, N+1)``, at interior rows of the other axis.

    Returns ``(N, N-1)`` for ``axis=0`` (x-faces ``i + 1/2``, interior ``j``) and ``(N-1, N)`` for ``axis=1``.
    """
    if axis == 0:
        lo, hi = a[:-1, 1:-1], a[1:, 1:-1]
    else:
        lo, hi = a[1:-1, :-1], a[1:-1, 1:]
    out: Array = 2.0 * lo * hi / (lo + hi)
    return out


class DarcySolver:
    """The 5-point flux-form solver on ``points x points`` nodes of ``[0, 1]²`` (``points = N + 1``).

    Args:
        points: nodes per axis, boundary included (at least 3).
    """

    def __init__(self, points: int) -> None:
        if points < 3:
            raise ValueError(f"DarcySolver: need at least 3 nodes per axis (one interior), got points={points}")
        self.points = points
        n = points - 1
        self.h = 1.0 / n
        d = _face_difference(n) / self.h  # (N, N-1)
        eye = sp.identity(n - 1, format="csr")
        # unknowns in C order over (i, j): x-faces are (i+1/2, j), y-faces (i, j+1/2)
        self.dx = sp.kron(d, eye, format="csr")  # (N (N-1), (N-1)²)
        self.dy = sp.kron(eye, d, format="csr")  # ((N-1) N, (N-1)²)

    @property
    def grid(self) -> Array:
        """The node coordinates ``i h``, shape ``(points,)``."""
        out: Array = np.linspace(0.0, 1.0, self.points)
        return out

    def operator(self, a: Array) -> sp.csc_matrix:
        """The matrix ``A(a)`` on the interior unknowns, for nodal ``a`` ``(points, points)``."""
        self._check("a", a)
        if not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError("DarcySolver: the coefficient a must be finite and positive at every node")
        ax, ay = harmonic_faces(a, 0).ravel(), harmonic_faces(a, 1).ravel()
        mat = self.dx.T @ sp.diags(ax) @ self.dx + self.dy.T @ sp.diags(ay) @ self.dy
        return mat.tocsc()

    def solve(self, a: Array, f: Array | float = 1.0) -> Array:
        """``u`` at all nodes ``(points, points)`` (zero on the boundary) for one coefficient ``a`` and source ``f``.

        ``f`` is a scalar (the FNO benchmark's ``f = 1``) or nodal values ``(points, points)``.
        """
        m = self.points - 2
        rhs = (
            np.full(m * m, float(f)) if isinstance(f, int | float) else self._interior(np.asarray(f, dtype=np.float64))
        )
        u = np.zeros((self.points, self.points))
        u[1:-1, 1:-1] = spla.splu(self.operator(np.asarray(a, dtype=np.float64))).solve(rhs).reshape(m, m)
        return u

    def solve_batch(self, a: Array, f: Array | float = 1.0) -> Array:
        """:meth:`solve` for ``a`` ``(batch, points, points)`` (one LU per sample, the pattern shared)."""
        if a.ndim != 3:
            raise ValueError(
                f"DarcySolver.solve_batch: expected a of shape (batch, {self.points}, {self.points}), got {a.shape}"
            )
        return np.stack([self.solve(ai, f) for ai in a])

    def _interior(self, f: Array) -> Array:
        self._check("f", f)
        out: Array = f[1:-1, 1:-1].ravel()
        return out

    def _check(self, name: str, v: Array) -> None:
        if v.shape != (self.points, self.points):
            raise ValueError(
                f"DarcySolver: {name} must hold the nodal values ({self.points}, {self.points}), got shape {v.shape}"
            )
