"""Typed wrappers for the few torch functions whose stubs are untyped."""

from __future__ import annotations

import torch
from torch import Tensor


def unflatten(t: Tensor, dim: int, sizes: tuple[int, ...] | torch.Size) -> Tensor:
    """Split axis ``dim`` of ``t`` into ``sizes``."""
    d = dim % t.ndim
    return t.reshape(*t.shape[:d], *sizes, *t.shape[d + 1 :])


def broadcast_shape(*shapes: tuple[int, ...] | torch.Size) -> torch.Size:
    """The shape all ``shapes`` broadcast to (numpy rules)."""
    return torch.broadcast_shapes(*shapes)  # type: ignore[no-untyped-call,no-any-return]


def broadcast_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Expand ``a`` and ``b`` to their common shape (views, no copies)."""
    shape = broadcast_shape(a.shape, b.shape)
    return a.expand(shape), b.expand(shape)


def aligned(t: Tensor, before: int, after: int) -> Tensor:
    """Per-example data ``(*batch, n)`` shaped to act on an axis with ``before`` axes before it and ``after`` after.

    Per-example data lines up with the *leading* axes of a tensor (its untyped
    batch); further axes before the structure's own (typed outer axes, attention
    heads, query positions) all see the same data. Needs ``before >=`` the batch
    rank (see :func:`pad_before`).
    """
    q = t.ndim - 1
    assert before >= q, (before, q)
    return t.reshape(*t.shape[:-1], *([1] * (before - q)), t.shape[-1], *([1] * after))


def pad_before(x: Tensor, d: int, q: int) -> tuple[Tensor, int]:
    """Insert size-1 axes before axis ``d`` of ``x`` so that at least ``q`` axes precede it."""
    if d >= q:
        return x, d
    return x.reshape(*x.shape[:d], *([1] * (q - d)), *x.shape[d:]), q


def broadcast_batch(a: tuple[int, ...] | torch.Size, b: tuple[int, ...] | torch.Size) -> tuple[int, ...] | None:
    """Left-aligned broadcast of two per-example batch shapes (missing trailing axes count as 1), or ``None``."""
    n = max(len(a), len(b))
    pa, pb = (*a, *([1] * (n - len(a)))), (*b, *([1] * (n - len(b))))
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)
