"""Chebyshev series on [-1, 1]: the discrete Chebyshev transform and the series' linear maps.

A series with ``n`` coefficients ``c_k`` (degree ``n - 1``) is

    p(t) = Σ_{k<n} c_k T_k(t),    T_k(cos θ) = cos(k θ),    t ∈ [-1, 1].

Grid. Values live at the ``m`` Chebyshev points of the first kind (the
Chebyshev--Gauss points, numpy's ``chebpts1``), in increasing order:

    t_j = -cos(π (2j + 1) / (2m)) = sin(π (2j + 1 - m) / (2m)),    j = 0, ..., m - 1.

They never include the end points, exist for every ``m >= 1``, and the
``m``-point interpolant is numpy's ``chebinterpolate``.

Transforms. With ``T_k(t_j) = (-1)^k cos(π k (2j + 1) / (2m))``,

* values (a DCT-III, :func:`values`): ``p(t_j) = Σ_k (-1)^k c_k cos(π k (2j+1) / (2m))``
  for ``m >= n`` (the series is zero-padded to ``m`` terms);
* coefficients (a DCT-II, :func:`coefficients`): the unique series of ``m`` terms
  through ``m`` values, ``c_k = (2 - δ_k0)/m · (-1)^k Σ_j v_j cos(π k (2j+1) / (2m))``,
  optionally truncated to its first ``size`` terms.

Both are computed with one real FFT of length ``2m`` (``torch.fft``), so they
run on CPU and CUDA, are differentiable, and cost ``O(m log m)`` per series:

    Σ_j v_j cos(π k (2j+1)/(2m)) = Re(e^{-iπk/(2m)} · rfft(v, 2m)_k),
    Σ_k z_k cos(π k (2j+1)/(2m)) = m · irfft(z'_k, 2m)_j,   z'_k = e^{iπk/(2m)} z_k, z'_0 = 2 z_0.

For small transforms (``m <= DENSE_MAX_POINTS``, the Funcformer's sizes) the
same DCT is applied by default as a cached dense matrix, one ``matmul``: on
CPU it is 2--15x faster than the FFT there (measured for ``m = 2n - 1``, ``n <= 128``); pass
``fft=True`` or ``fft=False`` to choose. Both paths are tested against numpy.

float16 and bfloat16 are transformed in float32 (``torch.fft`` has no
half-precision kernels on CPU) and cast back.

Integrals. ``w_k = ∫ T_k = 2 / (1 - k²)`` for even ``k`` and ``0`` for odd ``k``
(:func:`integral_weights`). Since ``T_n T_m = (T_{n+m} + T_{|n-m|}) / 2``, the
Gram matrix of the basis (the metric of ``∫ p q``, :func:`metric`) is

    W_nm = ∫ T_n T_m = (w_{n+m} + w_{|n-m|}) / 2,

which equals the design source's closed form
``(1 + (-1)^{n+m})(1 - n² - m²) / ((1 - (n+m)²)(1 - (m-n)²))`` wherever that is
defined and is ``0`` where the closed form is ``0/0`` (``n + m`` odd, ``|n - m| = 1``).
``W`` is symmetric positive definite; :func:`metric_factor` is its Cholesky
factor ``L`` (``W = L Lᵀ``).

Derivative. ``T_k' = 2k Σ_{j<k, k-j odd} T_j / (1 + δ_j0)`` (numpy's ``chebder``);
:func:`derivative` keeps the series' length and zeroes its top ``order`` terms.

Constant matrices and phases are built in float64 and cached per
``(size, dtype, device)``.

References: J. C. Mason and D. C. Handscomb, *Chebyshev Polynomials* (2003);
L. N. Trefethen, *Approximation Theory and Approximation Practice* (2013), ch. 3, 19.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from applicative import StructureError
from applicative.tensors import constant

__all__ = [
    "DENSE_MAX_POINTS",
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

_HALF = (torch.float16, torch.bfloat16)


def _sign(k: Tensor) -> Tensor:
    """``(-1)^k`` for integral ``k`` (written without ``pow``, which dynamo mis-traces for a negative base)."""
    return 1.0 - 2.0 * (k % 2)


def points(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The ``n`` Chebyshev points of the first kind in increasing order (numpy's ``chebpts1``); shape ``(n,)``."""
    if n < 1:
        raise StructureError(f"points: need at least one point, got n={n}")
    j = torch.arange(n, dtype=torch.float64, device=device)
    return torch.sin(math.pi * (2 * j + 1 - n) / (2 * n)).to(dtype=dtype)


def _real(op: str, x: Tensor) -> tuple[Tensor, torch.dtype]:
    """``x`` in a dtype ``torch.fft`` accepts, and the dtype to cast the result back to."""
    if not x.dtype.is_floating_point:
        raise StructureError(
            f"{op}: Chebyshev coefficients and values must be a real floating tensor, got dtype {x.dtype}; "
            "convert with tensor.to(torch.float32)"
        )
    return (x.float(), x.dtype) if x.dtype in _HALF else (x, x.dtype)


def _complex(dtype: torch.dtype) -> torch.dtype:
    return torch.complex128 if dtype == torch.float64 else torch.complex64


def _const(t: Tensor, dtype: torch.dtype, device: torch.device) -> Tensor:
    return t.to(dtype=dtype, device=device)


def _index(n: int, device: torch.device) -> Tensor:
    """``0, ..., n-1`` in float64, built where the constant is used: under ``torch.compile`` a constant
    computed on the CPU and moved to a GPU is a graph the compiler cannot always lower (a reduction)."""
    return torch.arange(n, dtype=torch.float64, device=device)


@constant
def _values_phase(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``z'_k / c_k`` for :func:`values`: ``(-1)^k e^{iπk/(2m)}``, with ``2`` at ``k = 0``; shape ``(n,)``."""
    with torch.inference_mode(False):
        k = _index(n, device)
        ph = torch.polar(_sign(k), math.pi * k / (2 * m))
        ph[0] = 2.0
        return _const(ph, _complex(dtype), device)


@constant
def _coefficients_phase(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``c_k / rfft(v)_k`` for :func:`coefficients`: ``(2 - δ_k0)/m (-1)^k e^{-iπk/(2m)}``; shape ``(n,)``."""
    with torch.inference_mode(False):
        k = _index(n, device)
        scale = (2.0 - (k == 0).double()) / m * _sign(k)
        return _const(torch.polar(scale, -math.pi * k / (2 * m)), _complex(dtype), device)


#: transforms with at most this many points use a cached dense DCT matrix by default (``fft=None``)
DENSE_MAX_POINTS = 256


@constant
def _values_matrix(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``T_k(t_j)``: shape ``(m, n)``."""
    with torch.inference_mode(False):
        j = _index(m, device)[:, None]
        k = _index(n, device)[None, :]
        return _const(_sign(k) * torch.cos(math.pi * k * (2 * j + 1) / (2 * m)), dtype, device)


@constant
def _coefficients_matrix(m: int, n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The first ``n`` rows of the inverse of the ``m``-point :func:`_values_matrix`: shape ``(n, m)``."""
    with torch.inference_mode(False):
        k = _index(n, device)[:, None]
        j = _index(m, device)[None, :]
        scale = (2.0 - (k == 0).double()) / m * _sign(k)
        return _const(scale * torch.cos(math.pi * k * (2 * j + 1) / (2 * m)), dtype, device)


def _apply(mat: Tensor, x: Tensor, dim: int) -> Tensor:
    """``mat`` ``(p, q)`` applied along axis ``dim`` of ``x`` (size ``q`` there, ``p`` after)."""
    d = dim % x.ndim
    if d == x.ndim - 1:
        return x @ mat.transpose(0, 1)
    if d == x.ndim - 2:
        if x.ndim == 2:
            return mat @ x
        # batched: one GEMM over every leading axis (a broadcast `mat @ x` runs one small GEMM per matrix)
        return torch.einsum("pq,...qk->...pk", mat, x)
    return (x.movedim(d, -1) @ mat.transpose(0, 1)).movedim(-1, d)


def _use_fft(fft: bool | None, m: int) -> bool:
    return m > DENSE_MAX_POINTS if fft is None else fft


def values(c: Tensor, dim: int = -1, points: int | None = None, *, fft: bool | None = None) -> Tensor:
    """Values of Chebyshev series at the first-kind Chebyshev points (a DCT-III).

    Args:
        c: coefficients, ``n`` along ``dim``.
        dim: the series' axis.
        points: the number ``m >= n`` of points (default ``n``); ``m >= 2n - 1``
            makes the values of products of two series exact.
        fft: ``True``: one ``irfft`` of length ``2m``; ``False``: a cached dense ``m x n``
            matrix; ``None`` (default): the matrix up to ``DENSE_MAX_POINTS`` points.

    Returns:
        ``c`` with axis ``dim`` replaced by the ``m`` values ``p(t_j)`` at :func:`points` ``(m)``.
    """
    n = c.shape[dim]
    m = n if points is None else points
    if m < n:
        raise StructureError(f"values: {m} points cannot hold a series of {n} terms; pass points >= {n}")
    x, dtype = _real("values", c)
    if not _use_fft(fft, m):
        return _apply(_values_matrix(m, n, x.dtype, x.device), x, dim).to(dtype)
    x = x.movedim(dim, -1)
    z = x * _values_phase(m, n, x.dtype, x.device)  # (..., n) complex
    v: Tensor = m * torch.fft.irfft(z, n=2 * m)[..., :m]
    return v.to(dtype).movedim(-1, dim)


def coefficients(v: Tensor, dim: int = -1, size: int | None = None, *, fft: bool | None = None) -> Tensor:
    """The Chebyshev series interpolating values at the first-kind points (a DCT-II).

    Args:
        v: values at :func:`points` ``(m)``, ``m`` along ``dim``.
        dim: the values' axis.
        size: keep only the first ``size <= m`` coefficients (default all ``m``).
        fft: ``True``: one ``rfft`` of length ``2m``; ``False``: a cached dense ``size x m``
            matrix; ``None`` (default): the matrix up to ``DENSE_MAX_POINTS`` points.

    Returns:
        ``v`` with axis ``dim`` replaced by the coefficients (``m`` or ``size`` of them).
    """
    m = v.shape[dim]
    n = m if size is None else size
    if not 1 <= n <= m:
        raise StructureError(f"coefficients: cannot take {n} coefficients from {m} values; pass 1 <= size <= {m}")
    x, dtype = _real("coefficients", v)
    if not _use_fft(fft, m):
        return _apply(_coefficients_matrix(m, n, x.dtype, x.device), x, dim).to(dtype)
    x = x.movedim(dim, -1)
    y: Tensor = torch.fft.rfft(x, n=2 * m)[..., :n]
    c: Tensor = (y * _coefficients_phase(m, n, x.dtype, x.device)).real
    return c.to(dtype).movedim(-1, dim)


def vandermonde(t: Tensor, n: int) -> Tensor:
    """``T_k(t)`` for ``k < n`` by the three-term recurrence; shape ``(*t.shape, n)`` (numpy's ``chebvander``)."""
    cols = [torch.ones_like(t)]
    if n > 1:
        cols.append(t)
    for _ in range(2, n):
        cols.append(2 * t * cols[-1] - cols[-2])
    return torch.stack(cols[:n], -1)


def evaluate(c: Tensor, t: Tensor, dim: int = -1) -> Tensor:
    """Chebyshev series at arbitrary points ``t`` in [-1, 1] (numpy's ``chebval``).

    Args:
        c: coefficients, ``n`` along ``dim``.
        t: points, any shape.
        dim: the series' axis.

    Returns:
        ``c`` with axis ``dim`` replaced by ``t``'s axes: ``Σ_k c_k T_k(t)``.
    """
    n = c.shape[dim]
    x = c.movedim(dim, -1)
    vt = vandermonde(t.to(dtype=x.dtype, device=x.device).reshape(-1), n)  # (p, n)
    r = x @ vt.transpose(0, 1)  # (..., p)
    r = r.reshape(*r.shape[:-1], *t.shape)
    d = dim % c.ndim
    return r.movedim(tuple(range(r.ndim - t.ndim, r.ndim)), tuple(range(d, d + t.ndim)))


def evaluate_2d(c: Tensor, tx: Tensor, ty: Tensor) -> Tensor:
    """A 2-D series ``Σ c_kl T_k(x) T_l(y)`` on the tensor grid ``tx × ty``.

    Args:
        c: ``(..., nx, ny)`` coefficients (a ``Field[X, Y]`` tensor).
        tx: ``(px,)`` points for the first axis; ty: ``(py,)`` for the second.

    Returns:
        ``(..., px, py)`` values.
    """
    vx = vandermonde(tx.to(dtype=c.dtype, device=c.device), c.shape[-2])  # (px, nx)
    vy = vandermonde(ty.to(dtype=c.dtype, device=c.device), c.shape[-1])  # (py, ny)
    return vx @ c @ vy.transpose(0, 1)


@constant
def _weights64(n: int, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        k = _index(n, device)
        return torch.where(k % 2 == 0, 2.0 / (1.0 - k * k), torch.zeros_like(k))


@constant
def _cached_weights(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return _const(_weights64(n, device), dtype, device)


@constant
def _quadrature64(m: int, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return _coefficients_matrix(m, m, torch.float64, device).transpose(0, 1) @ _weights64(m, device)


def quadrature_weights(m: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """Fejér's first rule: ``ρ_j`` with ``Σ_j ρ_j f(t_j) = ∫ f`` for degree ``< m`` at :func:`points` ``(m)``; ``(m,)``.

    ``ρ = Cᵀ w``: interpolate (the DCT-II ``C``), then integrate term by term. All
    ``ρ_j > 0`` (Fejér 1933), so a softmax weighted by them stays positive.
    """
    return _quadrature64(m, torch.device(device) if device is not None else torch.device("cpu")).to(dtype=dtype)


def integral_weights(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """``w_k = ∫_{-1}^{1} T_k = 2/(1 - k²)`` (even ``k``), ``0`` (odd ``k``); shape ``(n,)``."""
    return _cached_weights(n, dtype, torch.device(device) if device is not None else torch.device("cpu"))


@constant
def _metric64(n: int, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        w = _weights64(2 * n, device)
        i = torch.arange(n, device=device)
        return 0.5 * (w[i[:, None] + i[None, :]] + w[(i[:, None] - i[None, :]).abs()])


@constant
def _cached_metric(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return _const(_metric64(n, device), dtype, device)


@constant
def _cached_factor(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return _const(torch.linalg.cholesky(_metric64(n, device)), dtype, device)


def metric(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The Gram matrix ``W_nm = ∫_{-1}^{1} T_n T_m``; shape ``(n, n)``, symmetric positive definite."""
    return _cached_metric(n, dtype, torch.device(device) if device is not None else torch.device("cpu"))


def metric_factor(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The lower-triangular Cholesky factor ``L`` of :func:`metric` (``W = L Lᵀ``); shape ``(n, n)``."""
    return _cached_factor(n, dtype, torch.device(device) if device is not None else torch.device("cpu"))


@constant
def _derivative64(n: int, order: int, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        j = torch.arange(n, device=device)[:, None]
        k = torch.arange(n, device=device)[None, :]
        d = torch.where((k > j) & ((k - j) % 2 == 1), 2.0 * k.double(), 0.0)
        d[0] /= 2
        power: Tensor = torch.linalg.matrix_power(d, order)
        return power


@constant
def _cached_derivative(n: int, order: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return _const(_derivative64(n, order, device), dtype, device)


def derivative(c: Tensor, dim: int = -1, order: int = 1) -> Tensor:
    """The ``order``-th derivative of Chebyshev series (numpy's ``chebder``, zero-padded to length ``n``).

    Args:
        c: coefficients, ``n`` along ``dim``.
        dim: the series' axis.
        order: how many times to differentiate (``>= 0``).

    Returns:
        coefficients of ``p^{(order)}``, same shape as ``c`` (the top ``order`` terms are zero).
    """
    if order < 0:
        raise StructureError(f"derivative: order must be >= 0, got {order}")
    x = c.movedim(dim, -1)
    d = _cached_derivative(x.shape[-1], order, x.dtype, x.device)
    return (x @ d.transpose(0, 1)).movedim(-1, dim)


def bubble(n: int) -> Tensor:
    """``B`` ``(n + 2, n)``: the coefficients of ``(1 - t²) Σ_k v_k T_k`` are ``B v`` (exact), float64.

    From ``(1 - t²) T_k = T_k / 2 - T_{k+2} / 4 - T_{|k-2|} / 4``: a series that vanishes at ``t = ±1``.
    """
    b = torch.zeros(n + 2, n, dtype=torch.float64)
    for k in range(n):
        b[k, k] += 0.5
        b[k + 2, k] -= 0.25
        b[abs(k - 2), k] -= 0.25
    return b
