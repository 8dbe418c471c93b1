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
