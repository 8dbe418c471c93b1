r"""Real Fourier series on a periodic interval as a structure: periodic functions stored by their coefficients.

A value on the axis ``Fourier(n)`` (``n = 2K + 1`` odd) is a real trigonometric polynomial of degree ``K``,

$$ p(t) = a_0 + \sum_{k=1}^{K} a_k \cos k\theta + b_k \sin k\theta, \qquad \theta = \pi (t + 1) \in [0, 2\pi), $$

stored as its ``n`` coefficients interleaved by frequency, ``(a_0, a_1, b_1, a_2, b_2, ..., a_K, b_K)``, so the first
``2d + 1`` coefficients are the polynomials of degree ``≤ d`` (as a Chebyshev series's first terms are). The
coordinate ``t ∈ [-1, 1)`` is the one every structure with coordinates uses; a periodic axis of a user's data,
``x ∈ [lo, hi)``, maps to it by ``t = -1 + 2 (x - lo) / (hi - lo)``.

The structure writes only its contract (:class:`applicative.Structure`):

* basis: coefficients ↔ values at ``m ≥ n`` equally spaced points ``θ_j = 2πj/m`` (``t_j = -1 + 2j/m``), a real DFT
  (:class:`FourierBasis`; a cached dense matrix up to ``DENSE_MAX_POINTS`` points, ``torch.fft`` beyond). From
  ``m ≥ n`` values the coefficients are exact for every polynomial of degree ``< m/2``, so the product of two
  values -- degree ``2K`` -- is exact on the grid of ``2n - 1 = 4K + 1`` points and truncates to the first ``n``
  coefficients (the ``L²`` projection);
* measure: the periodic trapezoid rule, weight ``2/m`` at each point (exact for degree ``< m``; mass 2, as on
  ``[-1, 1]`` for a Chebyshev series), and the exact metric ``W = ∫ φ_i φ_j dt = diag(2, 1, ..., 1)``.

Everything else -- ``fmap`` through the point values, ``zip_with``, ``contract`` (the exact integral of the
product), ``softmax`` (the continuous ``e^p / ∫ e^p``), ``layer_norm`` and fused attention, where keys and values
are sampled at the ``4K + 1`` points with the bias ``log(2/m)`` -- is derived. ``pure`` (``a_0 = x``) and
``counit`` (``∫ p dt = 2 a_0``) are overridden, exact and transform-free; the law checker compares them with the
derived ones.

Capabilities: :attr:`Fourier.periodic` (a window on the distance ``t - s`` is taken modulo the period:
``1 - cos π(t - s)``), :meth:`Fourier.coordinates` (the points ``t_j``), the real ring only.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import Tensor

from applicative import Ring, Sized, StructureError
from applicative.tensors import constant

from ._series import SeriesBasis

__all__ = [
    "DENSE_MAX_POINTS",
    "Fourier",
    "FourierBasis",
    "basis_at",
    "coefficients",
    "convolve",
    "evaluate",
    "multiply",
    "multiply_plane",
    "values",
]

#: transforms with at most this many points use a cached dense matrix (one ``matmul``); ``torch.fft`` beyond
DENSE_MAX_POINTS = 256


def _degree(n: int) -> int:
    if n < 1 or n % 2 == 0:
        raise StructureError(
            f"Fourier: a real series has an odd number of coefficients (a_0, then a_k, b_k for k = 1..K), got {n}; "
            f"use {n + 1 if n >= 1 else 1}"
        )
    return (n - 1) // 2


def _real(op: str, x: Tensor) -> Tensor:
    if not x.dtype.is_floating_point:
        raise StructureError(
            f"{op}: Fourier coefficients and values must be a real floating tensor, got dtype {x.dtype}; "
            "convert with tensor.to(torch.float32)"
        )
    return x


def basis_at(t: Tensor, n: int) -> Tensor:
    """``φ_i(t)`` for the ``n`` basis functions ``1, cos θ, sin θ, ..., cos Kθ, sin Kθ`` (``θ = π(t + 1)``) at any
    points ``t``: shape ``(*t.shape, n)``."""
    k = torch.arange(1, _degree(n) + 1, dtype=t.dtype, device=t.device)
    theta = math.pi * (t[..., None] + 1) * k  # (..., K)
    pairs = torch.stack([torch.cos(theta), torch.sin(theta)], -1).flatten(-2)  # (..., 2K): cos, sin interleaved
    return torch.cat([torch.ones_like(t)[..., None], pairs], -1)


@constant
def _values_matrix(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``φ_i(t_j)`` at the ``m`` equally spaced points: ``(m, n)``."""
    with torch.inference_mode(False):
        t = -1 + 2 * torch.arange(m, dtype=torch.float64, device=device) / m
        return basis_at(t, n).to(dtype)


@constant
def _coefficients_matrix(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The discrete projection onto the first ``n`` basis functions from ``m >= n`` points: ``(n, m)``,
    ``(1/m) Σ_j v_j`` for ``a_0`` and ``(2/m) Σ_j v_j φ_i(t_j)`` for the others."""
    with torch.inference_mode(False):
        scale = torch.full((n, 1), 2.0 / m, dtype=torch.float64, device=device)
        scale[0] = 1.0 / m
        return (scale * _values_matrix(m, n, torch.float64, device).mT).to(dtype)


def _apply(mat: Tensor, x: Tensor, dim: int) -> Tensor:
    """``mat`` ``(p, q)`` applied along axis ``dim`` of ``x`` (size ``q`` there, ``p`` after)."""
    d = dim % x.ndim
    if d == x.ndim - 1:
        return x @ mat.mT
    if d == x.ndim - 2:
        return mat @ x if x.ndim == 2 else torch.einsum("pq,...qk->...pk", mat, x)
    return (x.movedim(d, -1) @ mat.mT).movedim(-1, d)


def values(c: Tensor, dim: int = -1, points: int | None = None) -> Tensor:
    """Values of Fourier series at ``m = points`` (default ``n``) equally spaced points ``t_j = -1 + 2j/m``.

    Args:
        c: coefficients, ``n`` (odd) along ``dim``.
        dim: the series' axis.
        points: ``m >= n``; ``m >= 2n - 1`` makes the values of products of two series exact.

    Returns:
        ``c`` with axis ``dim`` replaced by the ``m`` values ``p(t_j)``.
    """
    x = _real("values", c)
    n = x.shape[dim]
    m = n if points is None else points
    k = _degree(n)
    if m < n:
        raise StructureError(f"values: {m} points cannot hold a Fourier series of {n} terms; pass points >= {n}")
    if m <= DENSE_MAX_POINTS:
        return _apply(_values_matrix(m, n, x.dtype, x.device), x, dim)
    x = x.movedim(dim, -1)
    spectrum = torch.complex(x[..., 1::2], -x[..., 2::2]) * (m / 2)  # (a_k - i b_k) m / 2
    spectrum = torch.cat([x[..., :1].to(spectrum.dtype) * m, spectrum], -1)
    v: Tensor = torch.fft.irfft(spectrum, n=m)  # (1/m) Σ_k X_k e^{ikθ_j}, Hermitian-extended
    assert v.shape[-1] == m and spectrum.shape[-1] == k + 1
    return v.movedim(-1, dim)


def coefficients(v: Tensor, dim: int = -1, size: int | None = None) -> Tensor:
    """The Fourier series of ``size`` (odd, default the largest odd ``≤ m``) terms through values at ``m`` equally
    spaced points -- the discrete projection, exact for every series of degree ``< m/2``.

    Args:
        v: values at ``t_j = -1 + 2j/m``, ``m`` along ``dim``.
        dim: the values' axis.
        size: how many coefficients to keep (odd, ``≤ m``).

    Returns:
        ``v`` with axis ``dim`` replaced by the coefficients.
    """
    x = _real("coefficients", v)
    m = x.shape[dim]
    n = (m if m % 2 else m - 1) if size is None else size
    _degree(n)
    if n > m:
        raise StructureError(f"coefficients: cannot take {n} coefficients from {m} values; pass size <= {m}")
    if m <= DENSE_MAX_POINTS:
        return _apply(_coefficients_matrix(m, n, x.dtype, x.device), x, dim)
    x = x.movedim(dim, -1)
    spectrum = torch.fft.rfft(x)[..., : (n + 1) // 2] / m  # X_k / m, k = 0..K
    ab = torch.stack([2 * spectrum[..., 1:].real, -2 * spectrum[..., 1:].imag], -1).flatten(-2)
    return torch.cat([spectrum[..., :1].real, ab], -1).movedim(-1, dim)


def evaluate(c: Tensor, t: Tensor, dim: int = -1) -> Tensor:
    """Fourier series at arbitrary points ``t`` (any real ``t``; period 2); axis ``dim`` becomes ``t``'s axes."""
    x = _real("evaluate", c).movedim(dim, -1)
    phi = basis_at(t.to(dtype=x.dtype, device=x.device).reshape(-1), x.shape[-1])  # (p, n)
    r = (x @ phi.mT).reshape(*x.shape[:-1], *t.shape)
    d = dim % c.ndim
    return r.movedim(tuple(range(r.ndim - t.ndim, r.ndim)), tuple(range(d, d + t.ndim)))


def multiply(multiplier: Tensor, c: Tensor, dim: int = -1) -> Tensor:
    r"""A Fourier multiplier, exactly: each frequency of ``u`` scaled and turned. With ``m = (m_0, α_1, β_1, ...)``
    and ``u = (a_0, a_1, b_1, ...)``: ``a_0 ↦ m_0 a_0`` and ``(a_k, b_k) ↦ (α_k a_k - β_k b_k, β_k a_k + α_k b_k)``
    for ``k ≥ 1`` -- the coefficient of ``e^{ikθ}``, ``(a_k - i b_k) / 2``, multiplied by ``α_k - i β_k``. It is the
    convolution with the kernel ``(m_0, 2α_1, 2β_1, ...)`` (:func:`convolve`): the shift-equivariant linear maps of
    periodic functions.

    Args:
        multiplier: ``m``, ``n`` along ``dim`` (broadcast against ``c``).
        c: ``u``'s coefficients, ``n`` (odd) along ``dim``.
        dim: the series' axis.

    Returns:
        The product's coefficients, the broadcast shape of both.
    """
    x, w = _real("multiply", c), _real("multiply", multiplier)
    n = x.shape[dim]
    _degree(n)
    if w.shape[dim] != n:
        raise StructureError(f"multiply: a multiplier of {w.shape[dim]} terms against a series of {n}; pass {n}")
    x, w = x.movedim(dim, -1), w.movedim(dim, -1)
    a, b, p, q = x[..., 1::2], x[..., 2::2], w[..., 1::2], w[..., 2::2]
    turned = torch.stack([p * a - q * b, p * b + q * a], -1).flatten(-2)
    return torch.cat([w[..., :1] * x[..., :1], turned], -1).movedim(-1, dim)


def convolve(kernel: Tensor, c: Tensor, dim: int = -1) -> Tensor:
    r"""The circular convolution of two Fourier series, exactly, in coefficient space:

    $$ (\kappa \star u)(t) = \tfrac12 \int_{-1}^{1} \kappa(t - s)\, u(s)\, ds
       = \tfrac{1}{2\pi} \int_0^{2\pi} \kappa(\theta - \phi)\, u(\phi)\, d\phi . $$

    With ``κ = (p_0, p_1, q_1, ...)`` it is :func:`multiply` with the multiplier ``(p_0, p_1 / 2, q_1 / 2, ...)``.

    Args:
        kernel: ``κ``'s coefficients, ``n`` along ``dim`` (broadcast against ``c``).
        c: ``u``'s coefficients, ``n`` (odd) along ``dim``.
        dim: the series' axis.

    Returns:
        ``κ ⋆ u``'s coefficients, the broadcast shape of both.
    """
    w, n = _real("convolve", kernel).movedim(dim, -1), c.shape[dim]
    if w.shape[-1] != n:
        raise StructureError(f"convolve: a kernel of {w.shape[-1]} coefficients against a series of {n}; pass {n}")
    return multiply(torch.cat([w[..., :1], w[..., 1:] / 2], -1).movedim(-1, dim), c, dim)


def multiply_plane(multiplier: Tensor, c: Tensor, dims: tuple[int, int] = (-2, -1)) -> Tensor:
    r"""A Fourier multiplier of the plane, exactly: each frequency pair ``(k, l)`` of a doubly periodic ``u(θ, φ)``
    scaled and turned,

    $$ \hat u_{kl} \mapsto m_{kl}\, \hat u_{kl}, \qquad u(\theta, \phi) = \sum_{k, l} \hat u_{kl}\,
       e^{i(k\theta + l\phi)}: $$

    the shift-equivariant linear maps of the plane, which need not factor into one along each axis (:func:`multiply`
    along ``x`` then along ``y`` gives only ``m_{kl} = p_k q_l``; the Biot--Savart law's ``1 / (k² + l²)`` does not
    factor). Taken through the values on the ``n_x × n_y`` points, where the DFT of a series of ``n`` terms is exact.
    The output is real: on the column ``l = 0``, where ``\hat u_{-k,0} = \overline{\hat u_{k0}}``, what acts is
    ``m``'s Hermitian part ``(m_{k0} + \overline{m_{-k,0}}) / 2``.

    Args:
        multiplier: complex ``(..., n_x, K_y + 1)``, broadcast against ``c`` with ``dims`` moved last:
            ``torch.fft.rfft2``'s layout, ``k`` at ``torch.fft.fftfreq(n_x, 1 / n_x)``'s places, ``l = 0, ..., K_y``.
        c: coefficients, ``(n_x, n_y)`` (both odd) at ``dims``.
        dims: the two series' axes.

    Returns:
        The product's coefficients, ``c``'s shape.
    """
    x = _real("multiply_plane", c)
    dx, dy = (d % x.ndim for d in dims)
    n, m = x.shape[dx], x.shape[dy]
    _degree(n), _degree(m)
    if not multiplier.is_complex() or multiplier.ndim < 2 or tuple(multiplier.shape[-2:]) != (n, m // 2 + 1):
        raise StructureError(
            f"multiply_plane: a multiplier {tuple(multiplier.shape)} ({multiplier.dtype}) for series of {n} x {m} "
            f"terms; pass a complex one ending in ({n}, {m // 2 + 1})"
        )
    v = values(values(x, dx), dy).movedim((dx, dy), (-2, -1))
    w = torch.fft.irfft2(torch.fft.rfft2(v) * multiplier, s=(n, m))
    return coefficients(coefficients(w.movedim((-2, -1), (dx, dy)), dx, n), dy, m)


class FourierBasis(SeriesBasis):
    """Coefficients ``(a_0, a_1, b_1, ...)`` ↔ values at equally spaced points of the period (a real DFT)."""

    transforms = (values, coefficients)


@constant
def _metric(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        d = torch.ones(n, dtype=dtype, device=device)
        d[0] = 2.0
        return torch.diag(d)


class Fourier(Sized):
    """A real Fourier series of ``size = 2K + 1`` coefficients (degree ``K``) on the period ``t ∈ [-1, 1)``.

    Declare an axis nominally, ``class X(Fourier): size = 33``, or use an anonymous ``Fourier(33)``.
    """

    periodic: ClassVar[bool] = True
    real: ClassVar[bool] = True  # real coefficients

    def __init__(self, size: int | None = None) -> None:
        super().__init__(size)
        _degree(self.size)

    @property
    def degree(self) -> int:
        """``K``: the highest frequency."""
        return (self.size - 1) // 2

    @property
    def basis(self) -> FourierBasis:
        return FourierBasis(self.size)

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log(2/m)`` at each of the ``m`` (default ``size``) equally spaced points: the periodic trapezoid rule."""
        m = self.size if points is None else points
        return torch.full((m,), math.log(2.0 / m), dtype=dtype, device=device)

    def metric(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """The exact Gram matrix ``∫_{-1}^{1} φ_i φ_j dt = diag(2, 1, ..., 1)``."""
        return _metric(self.size, dtype, torch.device(device))

    def pure(self, x: Tensor, dim: int) -> Tensor:
        """The constant function: ``(x, 0, ..., 0)`` (no transform)."""
        d = dim % (x.ndim + 1)
        return torch.cat([x.unsqueeze(d), x.new_zeros((*x.shape[:d], self.size - 1, *x.shape[d:]))], d)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """``∫_{-1}^{1} p dt = 2 a_0`` (no transform)."""
        self.check_ring(ring, "Fourier.counit")
        return 2 * x.select(dim, 0)

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """Capability: the positions are ``t_j = -1 + 2j/m`` for ``m`` (default ``size``) points, ``j < m``."""
        m = self.size if points is None else points
        return -1 + 2 * torch.arange(m, dtype=torch.float64, device=device).to(dtype) / m

    def evaluate(self, c: Tensor, t: Tensor, dim: int = -1) -> Tensor:
        """The series along ``dim`` at arbitrary points ``t``; axis ``dim`` becomes ``t``'s axes."""
        return evaluate(c, t, dim)
