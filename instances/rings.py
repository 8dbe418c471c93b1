"""Rings beyond the reals: the tropical semirings, the log semiring, the complex numbers.

* :data:`MAX_PLUS` -- ``(max, +)`` with ``zero = -inf``, ``one = 0``. Its
  ``mul_mm`` is the max-plus matrix product: iterated on a weight matrix it
  gives the heaviest paths.
* :data:`MIN_PLUS` -- ``(min, +)`` with ``zero = +inf``, ``one = 0``: iterated
  ``mul_mm`` of an edge-weight matrix gives all-pairs shortest paths.
* :data:`LOG` -- ``(logaddexp, +)`` with ``zero = -inf``, ``one = 0``: the
  reals ``(+, ·)`` on ``[0, ∞)`` carried through ``log``, so sums of products
  of probabilities are computed on log-probabilities without underflow.
  ``mul_mm`` of log transition matrices is the forward algorithm of a hidden
  Markov model: ``log α_{t+1} = log α_t ⊗ log A``, ``(α ⊗ A)_j = log Σ_i e^{α_i + A_ij}``.
  ``log`` is a semiring homomorphism from the non-negative reals, so a
  structure's measure enters as ``log w`` itself, and the counit of ``x`` on a
  distribution is ``log E[e^x]`` (the cumulant generating function at 1).
* :data:`COMPLEX` -- ``(+, ·)`` on complex tensors (real tensors are its real
  subring). Unlike :data:`~applicative.REAL` it is not ordered, so softmax,
  layer norm and the fused softmax attention refuse it with an error;
  :class:`RealPartSoftmax` normalises complex attention scores.

All are commutative semirings (:data:`COMPLEX` a field). The tropical rings
are exact on integer-valued floats (the law checker uses that); :data:`LOG`
and :data:`COMPLEX` hold their laws to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, TypeVarTuple

import torch
from torch import Tensor

from applicative import Capability, Field, Normalise, Real, Ring, Structure, StructureError, kernels

F = TypeVar("F", bound=Structure)
I = TypeVarTuple("I")


@dataclass(frozen=True)
class MaxPlus(Ring):
    """The tropical semiring ``(max, +)``."""

    exact = True  # max and + are exact on integer-valued floats (and ±inf)
    idempotent = True
    capabilities = Capability.ORDERED | Capability.WEIGHS  # weighs: the support indicator

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
    capabilities = Capability.ORDERED | Capability.WEIGHS  # weighs: the support indicator

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


@dataclass(frozen=True)
class LogSemiring(Ring):
    """The log semiring ``(logaddexp, +)``: ``a ⊕ b = log(e^a + e^b)``, ``a ⊗ b = a + b``, ``zero = -inf``."""

    def zero(self, like: Tensor) -> Tensor:
        return torch.full_like(like, float("-inf"))

    def one(self, like: Tensor) -> Tensor:
        return torch.zeros_like(like)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.logaddexp(a, b)

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return a + b

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return torch.logsumexp(x, dim)  # the fold of logaddexp, shifted by the largest term: no overflow

    # matmul stays the generic definition, logsumexp over the materialised (m, n, k) sums a_ij + b_jk:
    # shifting by row and column maxima before an ordinary matmul can underflow a dominant term to -inf

    capabilities = Capability.ORDERED | Capability.WEIGHS  # ordered: logaddexp and + are monotone

    def weights(self, log_w: Tensor) -> Tensor:
        """``log``, the homomorphism from ``([0, ∞), +, ·)``: the weight ``w`` is the element ``log w``."""
        return log_w

    def check_dtype(self, dtype: torch.dtype) -> None:
        MAX_PLUS.check_dtype(dtype)


@dataclass(frozen=True)
class Complex(Real):
    """The complex numbers with ``+`` and ``·`` (a real tensor is read as its real subring).

    :class:`~applicative.Real`'s arithmetic, declared unordered: operations that need an order
    (softmax, layer norm, fused softmax attention) refuse it by name.
    """

    capabilities = Capability.EXP | Capability.WEIGHS  # no order

    def check_dtype(self, dtype: torch.dtype) -> None:
        if not (dtype.is_complex or dtype.is_floating_point):
            raise StructureError(
                f"{self!r} needs a complex (or real floating) tensor, got dtype {dtype}; "
                "convert with tensor.to(torch.complex64)"
            )


@dataclass(frozen=True)
class RealPartSoftmax(Normalise):
    """``softmax(scale · Re s)`` along the keys, against their measure, as weights of the scores' dtype.

    Complex scores have no order, so a softmax needs a real score; this one
    takes the real part of the bilinear score ``s = Σ_h q_h k_h``. Over the
    reals it computes :class:`~applicative.ScaledSoftmax` (unfused: it declares no SDPA lowering).
    """

    scale: float = 1.0
    needs = Capability.EXP  # the real part orders the scores

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        t = scores.tensor
        w = kernels.softmax(scores.structures[-1], t.real * self.scale, -1)
        return scores.with_tensor(w.to(t.dtype))


MAX_PLUS = MaxPlus()
MIN_PLUS = MinPlus()
LOG = LogSemiring()
COMPLEX = Complex()
