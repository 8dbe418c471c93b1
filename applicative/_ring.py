"""Rings (strictly: semirings) of scalars.

A ring supplies ``zero``, ``one``, ``add`` and ``mul`` on tensors, elementwise.
Everything else a structure needs from its scalars -- above all the fold
``sum`` used by counits -- is derived, with a fused override where torch has
one. The generic definition of ``sum`` is the left fold of ``add`` from
``zero``, exactly as the design source's ``foldl (~+~) zero``.

Instances here: :data:`REAL` (``+``, ``*`` on any floating or complex dtype).
Other rings (tropical max-plus, log) live in :mod:`instances.rings`.
"""

from __future__ import annotations

import abc

import torch
from torch import Tensor

from ._errors import StructureError


class Ring(abc.ABC):
    """The ``Ring`` protocol: scalars with ``zero``, ``add`` and ``mul`` (and ``one``).

    Laws (checked by :mod:`applicative.laws`): ``add`` is associative and
    commutative with identity ``zero``; ``mul`` is associative with identity
    ``one``; ``mul`` distributes over ``add``; ``zero`` annihilates.
    """

    #: whether add/mul are exact on the dtypes this ring accepts (for law tolerances)
    exact: bool = False

    @abc.abstractmethod
    def zero(self, like: Tensor) -> Tensor:
        """The additive identity, shaped, typed and placed like ``like``."""

    @abc.abstractmethod
    def one(self, like: Tensor) -> Tensor:
        """The multiplicative identity, shaped, typed and placed like ``like``."""

    @abc.abstractmethod
    def add(self, a: Tensor, b: Tensor) -> Tensor:
        """Elementwise ring addition (broadcasting)."""

    @abc.abstractmethod
    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        """Elementwise ring multiplication (broadcasting)."""

    def sum(self, x: Tensor, dim: int) -> Tensor:
        """Fold ``add`` over axis ``dim``: ``zero + x_0 + x_1 + ...``. Override with a fused kernel."""
        acc = self.zero(x.select(dim, 0))
        for i in range(x.shape[dim]):
            acc = self.add(acc, x.select(dim, i))
        return acc

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        """``Σ_j a_ij ⊗ b_jk``: the ring's matrix product ``(..., m, n) x (..., n, k)``. Override with a fused kernel.

        The generic definition materialises the ``m x n x k`` products.
        """
        return self.sum(self.mul(a.unsqueeze(-1), b.unsqueeze(-3)), -2)

    def weights(self, log_w: Tensor) -> Tensor:
        """A measure's non-negative real weights ``w = e^{log w}`` as ring elements.

        Needs a semiring homomorphism from the non-negative reals: the identity for
        the reals; for an idempotent semiring (``1 + 1 = 1``) the support
        indicator (``zero`` where ``w = 0``, ``one`` elsewhere). Other rings have no
        such map and raise, naming the ring.
        """
        if self.idempotent:
            return torch.where(torch.isneginf(log_w), self.zero(log_w), self.one(log_w))
        raise StructureError(
            f"{self!r} cannot weigh values by a measure (it has no map from the non-negative reals); "
            "use REAL, an idempotent semiring such as MAX_PLUS, or a structure with the counting measure"
        )

    #: ``1 + 1 = 1``: every positive weight acts as ``one`` (:meth:`weights`)
    idempotent: bool = False

    def check_dtype(self, dtype: torch.dtype) -> None:
        """Raise :class:`StructureError` if this ring cannot hold values of ``dtype``."""
        if not (dtype.is_floating_point or dtype.is_complex):
            raise StructureError(
                f"{self!r} needs a floating or complex tensor, got dtype {dtype}; convert with tensor.to(torch.float32)"
            )


class Real(Ring):
    """The real (or complex) numbers with the usual ``+`` and ``*``."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Real)

    def __hash__(self) -> int:
        return hash(Real)

    def zero(self, like: Tensor) -> Tensor:
        return torch.zeros_like(like)

    def one(self, like: Tensor) -> Tensor:
        return torch.ones_like(like)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return a + b

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return a * b

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return x.sum(dim)

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        return torch.matmul(a, b)

    def weights(self, log_w: Tensor) -> Tensor:
        return log_w.exp()

    def __repr__(self) -> str:
        return "Real()"


REAL = Real()
