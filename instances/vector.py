"""Fixed-size vectors: the index set ``{0, ..., n-1}`` with the counting measure.

Declared nominally, one class per axis, so that mypy tells axes apart::

    class Model(Vector):
        size = 64

    class Hidden(Vector):
        size = 256

``Vector(n)`` makes an anonymous axis of size ``n`` (equal to any other
anonymous ``Vector(n)``, never to ``Model``). Over the real ring the fused
kernels are torch's own: ``contract`` is ``matmul``, ``affine`` is
``nn.functional.linear``, ``layer_norm`` and ``softmax`` likewise.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Real, Ring, Sized, Structure


class Vector(Sized):
    """A vector of ``size`` values; ``pure`` is a broadcast, ``counit`` is a sum."""

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        return x.unsqueeze(d).expand(*x.shape[:d], self.size, *x.shape[d:])

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        return ring.sum(x, dim)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        if isinstance(ring, Real):
            return torch.matmul(a, b)
        return super().contract(a, b, ring)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        if isinstance(ring, Real) and weight.ndim == 2:
            return nnf.linear(x, weight, bias)
        return super().affine(x, weight, bias, ring)

    def softmax(self, x: Tensor, dim: int) -> Tensor:
        return torch.softmax(x, dim)

    def layer_norm(self, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
        return nnf.layer_norm(x, (self.size,), weight, bias, eps)

    def sdpa_factor(self, x: Tensor) -> Tensor | None:
        return x

    def sdpa_log_measure(self, like: Tensor) -> Tensor | None:
        return None

    def stack(self, copies: int) -> Structure:
        return Vector(self.size * copies)
