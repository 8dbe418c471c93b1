"""The tree inner product ``counit (zip_with mul a b)`` on the CPU in one compiled walk, never building the pairing.

Pairing two trees is their common refinement: the sorted union of the two
rows of breakpoints (:mod:`instances._tree_partition`). The unfused path
builds it -- a merge writing two index rows and a mask -- then gathers both
values onto it, multiplies and sums, each pass over a refined tree as wide
as both inputs together. The contraction needs none of that memory: the
two-pointer walk of :mod:`instances._tree_linear_merge` meets the refined
leaves in order, each with the two source leaves containing it, so it can
multiply and add as it goes. One walk per tree pair reads each input once
and writes one number (per feature). On one core of a shared 2-core VM,
4096 pairs of trees of up to 64 leaves take about 0.6 ms this way, against
8-12 ms unfused (``benchmarks/tree_ops.py``).

Weights. ``SUM`` trees (the design source's counit) weigh every refined leaf
1; ``MEAN`` trees weigh a refined leaf ``2^-d``, ``d`` its depth: the larger
of the depths of its two source leaves. Both are exact in ``float64``, the
accumulator; the result is cast to the inputs' (promoted) dtype.

Gradients. :func:`inner_linear` is differentiable in both values (not in
the integer trees): ``∂/∂xa[i] = Σ w · xb[ib] · g`` over the refined leaves
inside leaf ``i`` of ``a``, and likewise for ``b`` -- one more walk, computing
both. Values and depths at padding positions are never read (a walk stops
when both rows reach ``SENTINEL``), so they may be anything, ``nan``
included, and the gradient there is zero. Second derivatives are not
supported (``once_differentiable``).

Preconditions, not checked (the trees come from :class:`~instances.Tree`):
each row of breakpoints is a valid tree, sorted and ``SENTINEL``-padded,
with depths in ``[0, MAX_DEPTH]``.

Scope: CPU tensors of dtype ``float32`` / ``float64``. On any other device
or dtype :func:`inner_linear` returns ``None`` and the caller falls back to
the generic ``counit (zip_with mul a b)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numba import njit
from torch import Tensor
from torch.autograd.function import once_differentiable

from applicative.tensors import broadcast_batch

from ._tree_partition import MAX_DEPTH, SENTINEL

#: ``2^-d`` for every depth a leaf may have (exact in float64)
_HALF_POWERS = np.ldexp(1.0, -np.arange(MAX_DEPTH + 1)).astype(np.float64)

_SUPPORTED = (torch.float32, torch.float64)

__all__ = ["inner_linear"]


@njit(inline="always")
def _at(row: np.ndarray, k: int) -> int:  # pragma: no cover
    """``row[k]``, or ``SENTINEL`` past the row's end (the walk's view of a full row)."""
    return row[k] if k < row.shape[0] else SENTINEL


@njit(cache=True, nogil=True)
def _forward(
    a: np.ndarray,
    b: np.ndarray,
    da: np.ndarray,
    db: np.ndarray,
    mean: bool,
    xa: np.ndarray,
    xb: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover
    """``out[r, c] = Σ_refined w · xa[r, ia, c] · xb[r, ib, c]``, one two-pointer walk per row.

    ``a`` ``(rows, Na)``, ``b`` ``(rows, Nb)`` sorted breakpoints; ``da``, ``db``
    their depths (read only if ``mean``); ``xa`` ``(rows, Na, K)``, ``xb``
    ``(rows, Nb, K)``; ``out`` ``(rows, K)`` float64.

    The walk stands on one refined leaf at a time: ``i``, ``j`` the leaves of
    ``a``, ``b`` containing it, ``ea``, ``eb`` where those leaves end (the next
    breakpoint of each row; ``SENTINEL`` past the last). The refined leaf ends
    at the nearer of the two, and the walk steps past it: on ``i`` if
    ``ea <= eb``, on ``j`` if ``eb <= ea`` (both on a shared breakpoint); it
    stops when both ends are ``SENTINEL``. The end after ``ea`` (``fa``) is
    held too, and the one after that loaded before the comparison resolves,
    so a step waits on a comparison, not on a load (1.5x faster than loading
    ``a[i + 1]`` after stepping).
    """
    rows = a.shape[0]
    k = out.shape[1]
    for r in range(rows):
        ar, br = a[r], b[r]
        i = j = 0
        ea, fa, eb, fb = _at(ar, 1), _at(ar, 2), _at(br, 1), _at(br, 2)
        acc = 0.0
        if k != 1:
            out[r, :] = 0.0
        while True:
            w = _HALF_POWERS[max(da[r, i], db[r, j])] if mean else 1.0
            if k == 1:  # scalar leaves: a register accumulator
                acc += w * xa[r, i, 0] * xb[r, j, 0]
            else:
                for c in range(k):
                    out[r, c] += w * xa[r, i, c] * xb[r, j, c]
            if (ea & eb) == SENTINEL:  # both ends are SENTINEL (every breakpoint is <= SENTINEL, a single bit)
                break
            step_a, step_b = ea <= eb, eb <= ea
            next_a, next_b = _at(ar, i + 3), _at(br, j + 3)
            i += step_a
            j += step_b
            if step_a:
                ea, fa = fa, next_a
            if step_b:
                eb, fb = fb, next_b
        if k == 1:
            out[r, 0] = acc


@njit(cache=True, nogil=True)
def _backward(
    a: np.ndarray,
    b: np.ndarray,
    da: np.ndarray,
    db: np.ndarray,
    mean: bool,
    xa: np.ndarray,
    xb: np.ndarray,
    g: np.ndarray,
    want_a: bool,
    want_b: bool,
    ga: np.ndarray,
    gb: np.ndarray,
) -> None:  # pragma: no cover
    """``ga[r, ia, c] += w · xb[r, ib, c] · g[r, c]`` and ``gb[r, ib, c] += w · xa[r, ia, c] · g[r, c]``.

    The walk of :func:`_forward`; ``ga`` ``(rows, Na, K)`` and ``gb``
    ``(rows, Nb, K)`` float64, zero on entry (written only if wanted).
    """
    rows = a.shape[0]
    k = g.shape[1]
    for r in range(rows):
        ar, br = a[r], b[r]
        i = j = 0
        ea, fa, eb, fb = _at(ar, 1), _at(ar, 2), _at(br, 1), _at(br, 2)
        while True:
            w = _HALF_POWERS[max(da[r, i], db[r, j])] if mean else 1.0
            for c in range(k):
                wg = w * g[r, c]
                if want_a:
                    ga[r, i, c] += wg * xb[r, j, c]
                if want_b:
                    gb[r, j, c] += wg * xa[r, i, c]
            if (ea & eb) == SENTINEL:
                break
            step_a, step_b = ea <= eb, eb <= ea
            next_a, next_b = _at(ar, i + 3), _at(br, j + 3)
            i += step_a
            j += step_b
            if step_a:
                ea, fa = fa, next_a
            if step_b:
                eb, fb = fb, next_b


class _Inner(torch.autograd.Function):
    """``(rows, K)`` inner products of ``xa`` ``(rows, Na, K)`` and ``xb`` ``(rows, Nb, K)`` over paired trees."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, da: Tensor, db: Tensor, mean: bool, xa: Tensor, xb: Tensor) -> Tensor:
        out = torch.empty(xa.shape[0], xa.shape[2], dtype=torch.float64)
        _forward(
            a.numpy(), b.numpy(), da.numpy(), db.numpy(), mean, xa.detach().numpy(), xb.detach().numpy(), out.numpy()
        )
        ctx.save_for_backward(a, b, da, db, xa, xb)
        ctx.mean = mean
        return out.to(xa.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        a, b, da, db, xa, xb = (t.detach() for t in ctx.saved_tensors)
        want_a, want_b = ctx.needs_input_grad[5], ctx.needs_input_grad[6]
        ga = torch.zeros(xa.shape if want_a else (0, 0, 0), dtype=torch.float64)
        gb = torch.zeros(xb.shape if want_b else (0, 0, 0), dtype=torch.float64)
        g64 = g.to(torch.float64).contiguous()
        _backward(
            a.numpy(),
            b.numpy(),
            da.numpy(),
            db.numpy(),
            ctx.mean,
            xa.numpy(),
            xb.numpy(),
            g64.numpy(),
            want_a,
            want_b,
            ga.numpy(),
            gb.numpy(),
        )
        return (None, None, None, None, None, ga.to(xa.dtype) if want_a else None, gb.to(xb.dtype) if want_b else None)


def _rows(t: Tensor, batch: tuple[int, ...], tail: tuple[int, ...]) -> Tensor:
    """``t`` ``(*b, *tail)`` broadcast left-aligned to ``(*batch, *tail)``, flattened to contiguous ``(rows, *tail)``.

    No copy when ``t`` already has that shape and is contiguous (the common case: two batches of equal shape).
    """
    q = t.ndim - len(tail)
    t = t.reshape(*t.shape[:q], *([1] * (len(batch) - q)), *t.shape[q:]).expand(*batch, *tail)
    return t.reshape(-1, *tail).contiguous()


def inner_linear(
    start_a: Tensor,
    start_b: Tensor,
    depth_a: Tensor | None,
    depth_b: Tensor | None,
    xa: Tensor,
    xb: Tensor,
    *,
    features: bool = False,
) -> Tensor | None:
    """``counit (zip_with mul a b)`` for two batches of trees with values at their leaves, in one walk per tree.

    Args:
        start_a: ``(*batch_a, Na)`` sorted ``int64`` breakpoints of the first
            trees (``SENTINEL``-padded), as :attr:`Tree.start`.
        start_b: ``(*batch_b, Nb)`` those of the second trees.
        depth_a: ``None`` for ``SUM`` trees (every refined leaf weighs 1), or
            the ``(*batch_a, Na)`` leaf depths of ``MEAN`` trees (a refined leaf
            weighs ``2^-max(depth_a, depth_b)`` of its two source leaves).
        depth_b: likewise for the second trees (``None`` exactly when
            ``depth_a`` is).
        xa: ``(*batch_xa, Na)`` real values at the leaves of the first trees
            (``(*batch_xa, Na, K)`` with ``features=True``); padding values are
            never read.
        xb: ``(*batch_xb, Nb)`` (or ``(*batch_xb, Nb, K)``) values at the
            leaves of the second trees.
        features: whether ``xa`` and ``xb`` carry a trailing feature axis ``K``
            (sizes equal or 1), contracted featurewise.

    All four batch shapes broadcast left-aligned as :class:`~instances.Tree`'s
    do (missing trailing axes count as 1) to one ``batch``.

    Returns:
        ``(*batch,)`` (``(*batch, K)`` with ``features``) the sums over the
        common refinement of ``w · xa · xb``, accumulated in ``float64`` and
        returned in the promoted dtype of ``xa`` and ``xb``; differentiable in
        ``xa`` and ``xb`` (once). ``None`` when the kernel does not apply:
        a tensor not on the CPU, or values not ``float32`` / ``float64`` --
        the caller then takes the generic path.

    Raises:
        ValueError: if the shapes do not fit together, or only one depth is given.
    """
    if (depth_a is None) != (depth_b is None):
        raise ValueError("inner_linear: give both depths (MEAN trees) or neither (SUM trees)")
    tensors = [t for t in (start_a, start_b, depth_a, depth_b, xa, xb) if t is not None]
    if any(t.device.type != "cpu" for t in tensors):
        return None
    dtype = torch.promote_types(xa.dtype, xb.dtype)
    if dtype not in _SUPPORTED:
        return None
    na, nb = start_a.shape[-1], start_b.shape[-1]
    lead = 2 if features else 1
    if xa.ndim < lead or xb.ndim < lead or xa.shape[xa.ndim - lead] != na or xb.shape[xb.ndim - lead] != nb:
        raise ValueError(
            f"inner_linear: values {tuple(xa.shape)}, {tuple(xb.shape)} do not fit trees of {na}, {nb} leaves"
            + (" (with a trailing feature axis)" if features else "")
        )
    for s, d in ((start_a, depth_a), (start_b, depth_b)):
        if d is not None and d.shape != s.shape:
            raise ValueError(f"inner_linear: depths {tuple(d.shape)} do not match breakpoints {tuple(s.shape)}")
    batch: tuple[int, ...] | None = ()
    for shape in (start_a.shape[:-1], start_b.shape[:-1], xa.shape[: xa.ndim - lead], xb.shape[: xb.ndim - lead]):
        batch = None if batch is None else broadcast_batch(torch.Size(batch), shape)
    if batch is None:
        raise ValueError(
            f"inner_linear: batch shapes of {tuple(start_a.shape)}, {tuple(start_b.shape)}, {tuple(xa.shape)}, "
            f"{tuple(xb.shape)} do not broadcast"
        )
    if features:
        ka, kb = xa.shape[-1], xb.shape[-1]
        if ka != kb and 1 not in (ka, kb):
            raise ValueError(f"inner_linear: feature sizes {ka} and {kb} do not broadcast")
        k = max(ka, kb)
        va, vb = _rows(xa.to(dtype), batch, (na, k)), _rows(xb.to(dtype), batch, (nb, k))
    else:
        va, vb = _rows(xa.to(dtype).unsqueeze(-1), batch, (na, 1)), _rows(xb.to(dtype).unsqueeze(-1), batch, (nb, 1))
    a, b = _rows(start_a.to(torch.int64), batch, (na,)), _rows(start_b.to(torch.int64), batch, (nb,))
    if depth_a is not None and depth_b is not None:  # MEAN: the kernel reads the depths
        mean, da, db = True, _rows(depth_a.to(torch.int64), batch, (na,)), _rows(depth_b.to(torch.int64), batch, (nb,))
    else:  # SUM: never read
        mean, da, db = False, torch.zeros(0, 0, dtype=torch.int64), torch.zeros(0, 0, dtype=torch.int64)
    out: Tensor = _Inner.apply(a, b, da, db, mean, va, vb)  # type: ignore[no-untyped-call]
    return out.reshape(*batch, -1) if features else out.reshape(batch)
