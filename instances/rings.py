"""Rings beyond the reals: the tropical semirings.

* :data:`MAX_PLUS` -- ``(max, +)`` with ``zero = -inf``, ``one = 0``. Its
  ``mul_mm`` is the max-plus matrix product: iterated on a weight matrix it
  gives the heaviest paths.
* :data:`MIN_PLUS` -- ``(min, +)`` with ``zero = +inf``, ``one = 0``: iterated
  ``mul_mm`` of an edge-weight matrix gives all-pairs shortest paths.

Both are commutative semirings; ``add`` is exact, ``mul`` is exact on
integer-valued floats (the law checker uses that).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from applicative import Ring


@dataclass(frozen=True)
class MaxPlus(Ring):
    """The tropical semiring ``(max, +)``."""

    exact = True  # max and + are exact on integer-valued floats (and ±inf)
    idempotent = True

    def zero(self, like: Tensor) -> Tensor:
        return torch.full_like(like, float("-inf"))

    def one(self, like: Tensor) -> Tensor:
        return torch.zeros_like(like)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.maximum(a, b)

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return a + b

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return x.amax(dim)

    def check_dtype(self, dtype: torch.dtype) -> None:
        if not dtype.is_floating_point:
            from applicative import StructureError

            raise StructureError(f"{self!r} needs a floating dtype (for -inf), got {dtype}")


@dataclass(frozen=True)
class MinPlus(Ring):
    """The tropical semiring ``(min, +)``: shortest paths."""

    exact = True  # min and + are exact on integer-valued floats (and ±inf)
    idempotent = True

    def zero(self, like: Tensor) -> Tensor:
        return torch.full_like(like, float("inf"))

    def one(self, like: Tensor) -> Tensor:
        return torch.zeros_like(like)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.minimum(a, b)

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return a + b

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return x.amin(dim)

    def check_dtype(self, dtype: torch.dtype) -> None:
        MAX_PLUS.check_dtype(dtype)


MAX_PLUS = MaxPlus()
MIN_PLUS = MinPlus()
