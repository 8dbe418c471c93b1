r"""Norms of functions on the square given as Chebyshev coefficient matrices.

A function is :math:`g(x, y) = \sum_{k,l} c_{kl} T_k(x) T_l(y)` on :math:`[-1, 1]^2`, stored as ``c``
``(..., m, m')``. Its squared :math:`L^2` norm is

.. math::  \|g\|^2 = \iint g^2 = \mathrm{tr}(c^T W c\, W),

with the Chebyshev Gram matrix :math:`W_{kl} = \int_{-1}^1 T_k T_l` (:func:`instances.chebyshev.metric`, zero
when ``k + l`` is odd). Matrices of different sizes are compared by zero-padding (:func:`pad`): a series cut
to fewer terms is the same function less its tail.
"""

from __future__ import annotations

import torch
from torch import Tensor

from instances.chebyshev import metric


def l2_norm_sq(c: Tensor) -> Tensor:
    """``∫∫ g²`` for coefficient matrices ``c`` ``(..., m, m')``: ``tr(cᵀ W c W)``."""
    wx, wy = metric(c.shape[-2], c.dtype, c.device), metric(c.shape[-1], c.dtype, c.device)
    return ((wx @ c @ wy) * c).sum((-2, -1))


def pad(c: Tensor, m: int) -> Tensor:
    """Zero-pad (or truncate) the last two axes of a coefficient matrix to ``m x m``."""
    c = c[..., :m, :m]
    return torch.nn.functional.pad(c, (0, m - c.shape[-1], 0, m - c.shape[-2]))


def relative_l2(pred: Tensor, exact: Tensor) -> Tensor:
    """``‖pred - exact‖ / ‖exact‖`` in ``L²([-1,1]²)``, per sample; coefficient matrices of any sizes."""
    m = max(pred.shape[-1], exact.shape[-1], pred.shape[-2], exact.shape[-2])
    p, e = pad(pred.to(exact.dtype), m), pad(exact, m)
    return (l2_norm_sq(p - e) / l2_norm_sq(e)).sqrt()


def unit(f: Tensor) -> Tensor:
    """Each source ``(count, m, m)`` scaled to unit ``L²([-1,1]²)`` norm."""
    return f / l2_norm_sq(f).sqrt()[:, None, None]
