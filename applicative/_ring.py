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
import enum
from typing import ClassVar

import torch
from torch import Tensor

from ._errors import StructureError


class Capability(enum.Flag):
    """What generic code may ask of a ring (checked by the law checker): flags, combined with ``|``.

    ``ring.has(Capability.EXP | Capability.ORDERED)`` reads a ring's declared :attr:`Ring.capabilities`; a
    misspelt flag is an ``AttributeError`` (and a mypy error), never a silent ``False``.
    """

    #: ``add`` and ``mul`` are torch's ``+`` and ``*`` on (real or complex) numbers, so ``exp`` carries ``add`` to
    #: ``mul`` (``exp(a + b) = exp a · exp b``) and dense torch kernels (``matmul``, ``nnf.linear``,
    #: ``scaled_dot_product_attention``) compute this ring
    EXP = enum.auto()
    #: an order compatible with ``add`` (``a <= b`` implies ``a + c <= b + c``)
    ORDERED = enum.auto()
    #: a semiring map from the non-negative reals (:meth:`Ring.weights`): values can be weighed by a measure (an
    #: idempotent ring has one, the support indicator)
    WEIGHS = enum.auto()
    #: what softmax, layer norm, ReLU and a change of basis need: ``exp`` and an order (the real numbers)
    SOFTMAX = EXP | ORDERED

    def words(self) -> str:
        """The flags by name, for messages: ``"exp and ordered"``."""
        return " and ".join((c.name or "").lower() for c in Capability if c in self and c is not Capability.SOFTMAX)


class Ring(abc.ABC):
    """The ``Ring`` protocol: scalars with ``zero``, ``add`` and ``mul`` (and ``one``).

    Laws (checked by :mod:`applicative.laws`): ``add`` is associative and
    commutative with identity ``zero``; ``mul`` is associative with identity
    ``one``; ``mul`` distributes over ``add``; ``zero`` annihilates.
    """

    #: whether add/mul are exact on the dtypes this ring accepts (for law tolerances)
    exact: bool = False
    #: what generic code may ask of this ring (:class:`Capability`; checked by the law checker)
    capabilities: ClassVar[Capability] = Capability(0)

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

    def has(self, needed: Capability) -> bool:
        """Whether this ring declares every capability in ``needed``."""
        # on the flags' values: torch 2.11's Dynamo cannot trace ``Flag.__contains__`` and breaks the graph there
        return (needed.value & self.capabilities.value) == needed.value

    def require(self, op: str, what: str, needed: Capability) -> None:
        """Raise :class:`StructureError` naming ``op`` unless this ring has every capability in ``needed``."""
        missing = needed & ~self.capabilities
        if missing:
            raise StructureError(
                f"{op}: {what} needs a ring with {missing.words()} (the real ring REAL has all), "
                f"not {self!r}; build this part over REAL"
            )

    def check_dtype(self, dtype: torch.dtype) -> None:
        """Raise :class:`StructureError` if this ring cannot hold values of ``dtype``."""
        if not (dtype.is_floating_point or dtype.is_complex):
            raise StructureError(
                f"{self!r} needs a floating or complex tensor, got dtype {dtype}; convert with tensor.to(torch.float32)"
            )


class Real(Ring):
    """The real (or complex) numbers with the usual ``+`` and ``*``.

    Its code serves every ring of ordinary numbers: ``instances.Complex`` derives from it and
    declares itself unordered.
    """

    capabilities = Capability.EXP | Capability.ORDERED | Capability.WEIGHS

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

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
        if a.dtype != b.dtype:  # real measure weights times complex values
            dtype = torch.promote_types(a.dtype, b.dtype)
            a, b = a.to(dtype), b.to(dtype)
        return torch.matmul(a, b)

    def weights(self, log_w: Tensor) -> Tensor:
        """``w = e^{log w}``: the non-negative reals embed in the ordinary numbers."""
        return log_w.exp()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


REAL = Real()
