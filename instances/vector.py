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

import functools
from typing import ClassVar

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Real, Ring, Structure, StructureError


class Vector(Structure):
    """A vector of ``size`` values; ``pure`` is a broadcast, ``counit`` is a sum."""

    _declared: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        n = cls.__dict__.get("size")
        if n is not None:
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise StructureError(f"class {cls.__name__}(Vector): size must be a positive int, got {n!r}")
            cls._declared = n

    def __init__(self, size: int | None = None) -> None:
        declared = type(self)._declared
        if size is None and declared is None:
            raise StructureError(
                f"{type(self).__name__} needs a size: declare `class Model(Vector): size = 64` or call Vector(64)"
            )
        if size is not None and declared is not None and size != declared:
            raise StructureError(f"{type(self).__name__} is declared with size {declared}, got {size}")
        n = size if size is not None else declared
        assert n is not None
        if n < 1:
            raise StructureError(f"Vector size must be positive, got {n}")
        self.size = n

    @classmethod
    def sized(cls, size: int, name: str) -> type[Vector]:
        """A nominal subclass ``name`` of this class with ``size`` (cached: same name, same class)."""
        return _sized(cls, size, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vector) and type(other) is type(self) and other.size == self.size

    def __hash__(self) -> int:
        return hash((type(self), self.size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size})"

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


@functools.cache
def _sized(base: type[Vector], size: int, name: str) -> type[Vector]:
    return type(name, (base,), {"size": size})
