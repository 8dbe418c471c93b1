"""Every kernel of a structure, derived once from its contract: positions and a measure.

With ``P`` the map from stored values to positions (the identity unless the
structure has a :class:`~applicative.Basis`), ``S`` its inverse and ``w`` the
measure at the positions (``None``: counting)::

    pure x            = S (x at every position)
    fmap f x          = S (f (P x))
    zip_with f a b    = S (f (P a) (P b))                  on the product grid
    counit x          = Σ_j w_j ⊗ (P x)_j
    contract a b      = a diag(w) b                        (stored = positions)
                      = a W b,  W = Pᵀ diag(w) P            (another basis: the metric)
    affine x W b      = contract x Wᵀ + b
    mass              = Σ_j w_j
    softmax x         = e^x / Σ_j w_j e^{x_j}              at the positions (0 where w_j = 0)
    layer_norm x      = (x - μ) / sqrt(σ² + ε) · γ + β,    μ = counit x / mass,  σ² = contract (x-μ) (x-μ) / mass

``pure``, ``fmap``, ``zip_with``, ``counit``, ``contract`` and ``affine`` are what a structure's methods of
those names run unless it overrides them (for speed; the law checker compares the override with these).
``positions``, ``stored``, ``grid``, ``mass``, ``softmax`` and ``layer_norm`` are free functions of the
structure only (public in :mod:`applicative.kernels`); the last three use the structure's ``pure``,
``counit`` and ``contract``, overrides included. :func:`batch_shape` is the batch of a structure's
per-example data (a :class:`~applicative.DataStructure`'s), ``()`` for one without any.

The generic definitions -- ``contract = counit (zip_with mul a b)`` and so on,
written from ``pure``, ``zip_with``, ``fmap`` and ``counit`` alone -- are the
``generic_*`` functions: the specification the law checker compares every
kernel against. ``factor`` and ``lowered_keys`` are the attention lowering
(:mod:`applicative._attention`): a metric ``M = L Lᵀ`` on the heads, and keys
and values at their positions with the additive bias ``log w``.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as nnf
from torch import Tensor

from ._errors import StructureError
from ._ring import REAL, Capability, Ring
from ._tensor import aligned, broadcast_batch, broadcast_pair, pad_before

if TYPE_CHECKING:
    from ._contract import Contract, Pointwise, Pointwise2


def _real_dtype(x: Tensor) -> torch.dtype:
    return x.real.dtype if x.is_complex() else x.dtype


_NO_BATCH = torch.Size()


def batch_shape(s: Contract) -> torch.Size:
    """The leading batch shape of the per-example data of ``s``: ``()`` for a structure without any.

    Only a :class:`~applicative.DataStructure` holds per-example data and declares ``batch_shape``; the kernels
    see structures through ``Contract`` and read it where it is declared.
    """
    shape: torch.Size | None = getattr(s, "batch_shape", None)
    return _NO_BATCH if shape is None else shape


def grid(s: Contract) -> int:
    """Positions on which products of two stored values are exact: ``size``, or its basis's ``grid``."""
    b = s.basis
    return s.size if b is None else b.grid


def positions(s: Contract, x: Tensor, dim: int, points: int | None = None) -> Tensor:
    """``P x``: stored values along ``dim`` at the positions (``points`` of them on an oversampled grid).

    The identity for a structure stored at its positions; else its basis's ``positions`` (default ``size`` points).
    """
    b = s.basis
    return x if b is None else b.positions(x, dim, s.size if points is None else points)


def stored(s: Contract, v: Tensor, dim: int) -> Tensor:
    """``S v``: values at positions along ``dim`` (any number ``>= size`` of them) back to the stored values."""
    b = s.basis
    return v if b is None else b.stored(v, dim)


def measure(s: Contract, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor | None:
    """``s.log_measure(...)``, its shape checked against the contract: ``(*batch, points or size)``.

    A wrong shape would broadcast silently into a wrong result; the error names the structure.
    """
    lw = s.log_measure(dtype, device, points)
    if lw is None:
        return None
    n = points if points is not None else s.size
    batch = tuple(lw.shape[:-1])
    if lw.ndim == 0 or lw.shape[-1] != n or broadcast_batch(batch, tuple(batch_shape(s))) is None:
        raise StructureError(
            f"{s!r}.log_measure(points={points}) returned shape {tuple(lw.shape)}, expected (*batch, {n}) with "
            f"batch {tuple(batch_shape(s))} (the structure's batch_shape): log w at each of the "
            f"{'requested points' if points is not None else 'positions'}; fix the structure's log_measure"
        )
    return lw


def log_weights(s: Contract, x: Tensor, d: int, points: int | None = None) -> tuple[Tensor, int, Tensor | None]:
    """``(x, d, log w)``: ``x`` padded so the batch fits before axis ``d``, and ``log w`` aligned to act on it."""
    lw = measure(s, _real_dtype(x), x.device, points)
    if lw is None:
        return x, d, None
    x, d = pad_before(x, d, lw.ndim - 1)
    return x, d, aligned(lw, d, x.ndim - d - 1)


def check_ring(s: Contract, ring: Ring, op: str) -> None:
    """A structure with a basis other than its positions needs the real ring (the change of basis is real-linear)."""
    if s.basis is not None and not ring.has(Capability.SOFTMAX):
        raise StructureError(
            f"{op}: {s!r} stores values in a basis other than its positions, and changing basis needs "
            f"the real ring, not {ring!r}; use a structure stored at its positions (a Vector) for other rings"
        )
    if not ring.has(Capability.WEIGHS):
        lw = measure(s, torch.float64, torch.device("cpu"))
        if lw is not None:
            ring.weights(lw)  # raises, naming the ring


# ---- Applicative and Counit --------------------------------------------------


def pure(s: Contract, x: Tensor, dim: int) -> Tensor:
    """``pure x``: ``x`` at every position, in the stored basis."""
    d = dim % (x.ndim + 1)
    t = x.unsqueeze(d).expand(*x.shape[:d], s.size, *x.shape[d:])
    return t if s.basis is None else stored(s, t, d)


def fmap(s: Contract, f: Pointwise, x: Tensor, dim: int) -> Tensor:
    """``fmap f``: ``f`` at the positions."""
    if s.basis is None:
        return f(x)
    d = dim % x.ndim
    return stored(s, f(positions(s, x, d)), d)


def zip_with(s: Contract, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
    """``fmap (uncurry f) (pair a b)``: ``f`` at the positions of the product grid, back to the stored basis."""
    if s.basis is None:
        return f(a, b)
    d, m = dim % a.ndim, grid(s)
    return stored(s, f(positions(s, a, d, m), positions(s, b, d, m)), d)


def counit(s: Contract, x: Tensor, dim: int, ring: Ring) -> Tensor:
    """``Σ_j w_j ⊗ x_j`` at the positions (positions of weight zero contribute the ring's zero)."""
    d = dim % x.ndim
    if s.basis is not None:
        check_ring(s, ring, "counit")
        x = positions(s, x, d)
    x, d, lw = log_weights(s, x, d)
    if lw is None:
        return ring.sum(x, d)
    hidden = torch.isneginf(lw)
    y = ring.mul(ring.weights(lw), torch.where(hidden, 0, x))  # selected before any arithmetic: no 0 · NaN
    return ring.sum(torch.where(hidden, ring.zero(y), y), d)


def cleared(s: Contract, x: Tensor, dim: int) -> Tensor:
    """``x`` with its values at the positions of weight zero along ``dim`` set to ``0`` by selection.

    What a model does to its input (:func:`applicative.clear_padding`): whatever the padding held (NaN,
    infinities), neither it nor its gradient reaches anything. A structure stored in another basis, or
    without zero weights, leaves ``x`` as it is.
    """
    if s.basis is not None:
        return x
    lined_up, _, lw = log_weights(s, x, dim % x.ndim)  # x with the structure's batch axes in front, and log w
    return x if lw is None else torch.where(torch.isneginf(lw), 0, lined_up)


# ---- derived kernels ------------------------------------------------------------


def contract(s: Contract, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
    """``counit (zip_with mul a b)`` as one matrix product against the measure: ``(..., m, n) x (..., n, k)``."""
    if s.basis is not None:
        check_ring(s, ring, "contract")
        if not batch_shape(s):
            w = s.metric(a.dtype, a.device)
            return (a @ w) @ b if a.shape[-2] <= b.shape[-1] else a @ (w @ b)
        return generic_contract(s, a, b, ring)
    lw = measure(s, _real_dtype(a), a.device)
    if lw is None:
        return ring.matmul(a, b)
    q = lw.ndim - 1
    a, da = pad_before(a, a.ndim - 2, q)  # the weights line up with the batch, not with m
    b, db = pad_before(b, b.ndim - 2, q)
    lwa, lwb = aligned(lw, da, 0).unsqueeze(-2), aligned(lw, db, 1)  # (*batch, 1.., 1, n), (*batch, 1.., n, 1)
    hidden_a, hidden_b = torch.isneginf(lwa), torch.isneginf(lwb)
    wa = ring.mul(ring.weights(lwa), torch.where(hidden_a, 0, a))  # selected before any arithmetic
    wa = torch.where(hidden_a, ring.zero(wa), wa)
    return ring.matmul(wa, torch.where(hidden_b, ring.zero(b), b))


def affine(s: Contract, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
    """``x Wᵀ + b`` contracting the last axis of ``x``: ``nnf.linear`` against the measure where it can."""
    if ring.has(Capability.SOFTMAX) and weight.ndim == 2 and not batch_shape(s):
        if s.basis is not None:
            return nnf.linear(x, weight @ s.metric(weight.dtype, weight.device), bias)
        lw = measure(s, _real_dtype(x), x.device)
        if lw is None:
            return nnf.linear(x, weight, bias)
        return nnf.linear(torch.where(torch.isneginf(lw), 0, x) * lw.exp(), weight, bias)  # exp(-inf) = 0
    return affine_by_contract(s, x, weight, bias, ring)


def affine_by_contract(s: Contract, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
    """``contract x Wᵀ`` plus the bias."""
    y = s.contract(x.unsqueeze(-2), weight.transpose(-1, -2), ring).squeeze(-2)
    return y if bias is None else ring.add(y, bias)


def mass(s: Contract, like: Tensor) -> Tensor:
    """``counit (pure 1) = Σ_j w_j``, broadcasting against ``like.shape[:-1]``."""
    lw = measure(s, _real_dtype(like), like.device)
    if lw is None:
        return like.new_full(like.shape[:-1], float(s.size))
    total = lw.exp().sum(-1)  # (*batch,)
    if like.ndim - 1 < total.ndim:  # a value shared by every example: one mass per example
        return total
    return total.reshape((*total.shape, *([1] * (like.ndim - 1 - total.ndim)))).expand(like.shape[:-1])


def softmax(s: Contract, x: Tensor, dim: int) -> Tensor:
    """``e^x / counit(e^x)`` along ``dim`` against the measure (over the real ring).

    Stored at positions: ``exp(x - logsumexp(x + log w))``. In another basis: ``e^x``
    at the product grid, back to the stored basis, divided by its counit.
    """
    d = dim % x.ndim
    if s.basis is not None:
        v = positions(s, x, d, grid(s))
        e = stored(s, torch.exp(v - v.amax(d, keepdim=True).detach()), d)  # a constant shift of the function
        return e / s.counit(e, d, REAL).unsqueeze(d)
    x, d, lw = log_weights(s, x, d)
    if lw is None:
        return torch.softmax(x, d)
    hidden = torch.isneginf(lw)
    x = torch.where(hidden, 0, x)  # selected before any arithmetic: neither the padding nor its gradient is read
    lse = torch.logsumexp(torch.where(hidden, -math.inf, x + lw), d, keepdim=True)
    return torch.where(hidden, 0, torch.exp(x - lse))


def layer_norm(s: Contract, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """Layer norm over the last axis; mean by the counit, variance by the contraction (exact in any basis)."""
    if s.basis is None and not batch_shape(s) and measure(s, _real_dtype(x), x.device) is None:
        return nnf.layer_norm(x, (s.size,), weight, bias, eps)
    x = cleared(s, x, -1)  # positions of weight zero: selected out before any arithmetic
    m = mass(s, x)
    centred = x - s.pure(s.counit(x, -1, REAL) / m, -1)
    var = s.contract(centred.unsqueeze(-2), centred.unsqueeze(-1), REAL)[..., 0, 0] / m
    return scale_shift(s, centred * torch.rsqrt(var + eps).unsqueeze(-1), weight, bias)


def scale_shift(s: Contract, y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``y * weight + bias`` along the last axis (the product is a zip: a product of functions)."""
    if weight is not None:
        y = s.zip_with(torch.mul, y, weight.expand_as(y), -1)
    return y if bias is None else y + bias


# ---- the metric, and the attention lowering ----------------------------------------


def metric(s: Contract, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``W = Pᵀ diag(w) P`` on the product grid: the Gram matrix of the stored basis, ``(n, n)``."""
    if batch_shape(s):
        raise StructureError(f"{s!r}: a metric is per structure, but this one carries per-example data")
    return _metric(s, dtype, device)


@functools.lru_cache(maxsize=256)
def _metric64(s: Contract, device: torch.device) -> Tensor:
    # built where it is used: under torch.compile a constant computed on the CPU and moved to a GPU is a
    # graph the compiler cannot always lower (a reduction)
    with torch.inference_mode(False):
        eye = torch.eye(s.size, dtype=torch.float64, device=device)
        p = positions(s, eye, 0, grid(s))  # (grid, n): the basis functions at the positions
        lw = measure(s, torch.float64, device, grid(s))
        wp = p if lw is None else p * lw.exp().unsqueeze(-1)
        return p.transpose(0, 1) @ wp


def _metric(s: Contract, dtype: torch.dtype, device: torch.device) -> Tensor:
    return _metric64(s, device).to(dtype=dtype)


@functools.lru_cache(maxsize=256)
def _factor64(s: Contract) -> Tensor:
    with torch.inference_mode(False):
        factor: Tensor = torch.linalg.cholesky(s.metric(torch.float64, torch.device("cpu")))
        return factor


def factor(s: Contract, x: Tensor) -> Tensor:
    """``x L`` along the last axis, with ``L Lᵀ`` the metric of the contraction (heads of attention)."""
    if s.basis is not None and batch_shape(s):
        # a metric per example, possibly singular (padding): factor through the product grid instead,
        # x L = (P x) sqrt(w) with P the positions there, so (x L)(y L)ᵀ = x Pᵀ diag(w) P y = x W y
        v, _, lw = log_weights(s, positions(s, x, -1, grid(s)), x.ndim - 1, grid(s))
        return v if lw is None else torch.where(torch.isneginf(lw), 0, v) * (0.5 * lw).exp()
    if s.basis is not None:
        if torch.compiler.is_compiling():
            chol: Tensor = torch.linalg.cholesky(s.metric(torch.float64, x.device))
            return x @ chol.to(x.dtype)
        return x @ _factor64(s).to(dtype=x.dtype, device=x.device)
    x, _, lw = log_weights(s, x, x.ndim - 1)
    if lw is None:
        return x
    return torch.where(torch.isneginf(lw), 0, x) * (0.5 * lw).exp()  # selected first; exp(-inf) = 0


def lowered_keys(s: Contract, tk: Tensor, tv: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
    """Keys ``(..., n, e)`` and values ``(..., n, g)`` at the positions of ``s``, and the bias ``log w`` ``(..., n)``.

    Another basis is sampled at its product grid (the quadrature points of its measure).
    Keys and values at positions of weight zero (padding) are selected out (set to ``0`` before any
    arithmetic): the bias ``-inf`` gives them weight zero, but a zero weight times a NaN or an infinity held
    there is NaN, and padding must reach neither a valid output nor a gradient, whatever it holds.
    """
    points = None
    if s.basis is not None:
        points = grid(s)
        tk, tv = positions(s, tk, -2, points), positions(s, tv, -2, points)
    lw = measure(s, _real_dtype(tk), tk.device, points)
    if lw is None:
        return tk, tv, None
    tk, d = pad_before(tk, tk.ndim - 2, lw.ndim - 1)
    tv, dv = pad_before(tv, tv.ndim - 2, lw.ndim - 1)
    # no position hidden, nothing to select: tested where it costs no device sync and no graph break
    plain = lw.device.type == "cpu" and lw.ndim == 1 and not torch.compiler.is_compiling()
    if not (plain and bool(torch.isfinite(lw).all())):
        hidden = torch.isneginf(lw)
        tk = torch.where(aligned(hidden, d, 1), 0, tk)
        tv = torch.where(aligned(hidden, dv, 1), 0, tv)
    return tk, tv, aligned(lw, d, 0)


# ---- the generic definitions: the specification ---------------------------------------


def generic_contract(s: Contract, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
    """``counit (zip_with mul a b)``, materialising the ``m x n x k`` products."""
    pa, pb = broadcast_pair(a.unsqueeze(-1), b.unsqueeze(-3))  # (..., m, n, k)
    return s.counit(s.zip_with(ring.mul, pa, pb, -2), -2, ring)


def generic_affine(s: Contract, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
    """``counit (zip_with mul x w)`` for each row ``w`` of the weight, plus the bias."""
    y = generic_contract(s, x.unsqueeze(-2), weight.transpose(-1, -2), ring).squeeze(-2)
    return y if bias is None else ring.add(y, bias)


def generic_mass(s: Contract, like: Tensor) -> Tensor:
    """``counit (pure 1)``."""
    return s.counit(s.pure(like.new_ones(like.shape[:-1]), -1), -1, REAL)


def generic_softmax(s: Contract, x: Tensor, dim: int) -> Tensor:
    """``e / counit e`` with ``e = fmap exp (x - pure m)``, ``m`` the largest stored value (for stability)."""
    e = s.fmap(torch.exp, x - s.pure(x.amax(dim).detach(), dim), dim)
    return e / s.counit(e, dim, REAL).unsqueeze(dim)


def generic_layer_norm(s: Contract, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """``μ = counit x / counit (pure 1)``, ``σ² = counit ((x - μ)²) / counit (pure 1)``, then scale and shift."""
    m = generic_mass(s, x)
    centred = x - s.pure(s.counit(x, -1, REAL) / m, -1)
    var = s.counit(s.zip_with(torch.mul, centred, centred, -1), -1, REAL) / m
    return scale_shift(s, centred * torch.rsqrt(var + eps).unsqueeze(-1), weight, bias)
