"""Structures: the objects that own one axis of a :class:`~applicative.Field`.

A structure ``f`` is the runtime half of the design source's type classes:

* ``Applicative f`` -- :meth:`Structure.pure`, :meth:`Structure.fmap`,
  :meth:`Structure.zip_with` (the ``pair`` of the monoidal form, fused with the
  function applied to the pairs) and :meth:`Structure.join`, which finds the
  structure two values are paired on (the identity for fixed-size structures,
  the common refinement for trees).
* ``Counit f a`` -- :meth:`Structure.counit`, the algebra ``f a -> a``.

Everything else is derived, once, with a *generic definition* written from
these primitives. A structure may override a derived operation with a fused
kernel -- :meth:`Structure.contract` above all -- and the law checker verifies
that the override equals the generic definition.

Tensor conventions. A structure acts on one tensor axis ``dim`` (negative
indices count from the end). Axes before ``dim`` are batch axes (outer
structures, or untyped batch); axes after it are the inner structures of the
values it holds. Structures that carry per-example data (a batch of trees)
broadcast that data against the *leading* axes of the tensors they act on
(left-aligned): typed axes and attention heads sit between the batch and the
structure's own axis, so right alignment would pair the wrong axes.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from ._errors import StructureError
from ._ring import REAL, Ring
from ._tensor import broadcast_pair, unflatten

Pointwise = Callable[[Tensor], Tensor]
Pointwise2 = Callable[[Tensor, Tensor], Tensor]


@runtime_checkable
class Applicative(Protocol):
    """A structure that can hold values: ``pure``, ``fmap``, ``zip_with`` (``pair``), ``join``."""

    def pure(self, x: Tensor, dim: int) -> Tensor:
        """Insert this structure's axis at ``dim``, holding ``x`` at every position."""
        ...

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        """Apply ``f`` to each value held along ``dim``; ``f`` sees that axis as a batch axis."""
        ...

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        """Pair two values on this structure position by position and combine them with ``f``."""
        ...

    def join(self, other: Structure, op: str) -> Structure:
        """The structure on which a value of ``self`` and one of ``other`` are paired."""
        ...


@runtime_checkable
class Counit(Protocol):
    """A structure with an algebra ``f a -> a``: a sum, an integral, an expectation, a fold."""

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """Collapse axis ``dim`` of ``x`` (removing it)."""
        ...


class Structure(abc.ABC):
    """Abstract base of every structure: one axis of a field, ``Applicative`` and ``Counit``.

    Subclasses implement :meth:`pure`, :meth:`counit` and, unless values are
    stored at their positions, :meth:`fmap` and :meth:`zip_with`. Declaring a
    nominal axis is a subclass too: ``class Model(Vector): size = 64``.
    """

    #: length of the tensor axis this structure owns (a class attribute for nominal axes)
    size: int
    #: whether values are stored at their positions (so ``pure`` is a broadcast and anything
    #: applied to each stored entry is ``fmap``); False for a Chebyshev axis (coefficients)
    stores_positions: bool = True

    # ---- Applicative -------------------------------------------------------

    @abc.abstractmethod
    def pure(self, x: Tensor, dim: int) -> Tensor:
        """Insert this structure's axis at ``dim`` holding ``x`` everywhere (``pure x``)."""

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        """``fmap f``: values stored at their positions, so ``f`` runs with ``dim`` as a batch axis."""
        return f(x)

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        """``fmap (uncurry f) (pair a b)`` for two values on this same structure."""
        return f(a, b)

    def join(self, other: Structure, op: str) -> Structure:
        """The structure two values are paired on; fixed structures must simply be equal."""
        if self != other:
            raise StructureError(
                f"{op}: structures do not match: {self!r} and {other!r}. "
                "Both values must live on the same structure along this axis."
            )
        return self

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        """Re-express a value of ``self`` on a finer structure ``target`` (copying leaves down)."""
        if target != self:
            raise StructureError(f"cannot refine {self!r} to {target!r}")
        return x

    # ---- Counit --------------------------------------------------------------

    @abc.abstractmethod
    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """Collapse axis ``dim`` of ``x``: the algebra ``f a -> a``."""

    # ---- checks --------------------------------------------------------------

    def check(self, x: Tensor, dim: int, where: str) -> None:
        """Raise :class:`StructureError` unless axis ``dim`` of ``x`` can hold this structure."""
        n = x.shape[dim]
        if n != self.size:
            raise StructureError(
                f"{where}: axis {dim} should be {self!r} of size {self.size}, "
                f"but the tensor has size {n} there (tensor shape {tuple(x.shape)})"
            )

    def unsqueeze_batch(self, dim: int) -> Structure:
        """This structure with a size-1 batch axis inserted into its per-example data (if any)."""
        return self

    # ---- derived operations: generic definitions, overridable by fused kernels

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        """``counit (zip_with mul a b)`` along this axis, as a matrix product.

        ``a``: ``(..., m, n)``, ``b``: ``(..., n, k)`` with ``n`` this structure;
        returns ``(..., m, k)``. The generic definition materialises the
        ``m x n x k`` product; structures override it with a metric.
        """
        pa, pb = broadcast_pair(a.unsqueeze(-1), b.unsqueeze(-3))  # (..., m, n, k)
        return self.counit(self.zip_with(ring.mul, pa, pb, -2), -2, ring)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        """``x Wᵀ + b`` contracting this axis: ``x`` ``(..., n)``, ``weight`` ``(m, n)``, ``bias`` ``(m,)``.

        The bias is added to every entry of ``x``'s leading axes; callers lift it
        through outer structures that store another basis (:func:`applicative.linear` does).
        """
        y = self.contract(x.unsqueeze(-2), weight.transpose(-1, -2), ring).squeeze(-2)
        return y if bias is None else ring.add(y, bias)

    def mass(self, like: Tensor) -> Tensor:
        """``counit (pure 1)``: the total mass of the measure (``n`` for a vector, 2 on [-1, 1])."""
        ones = like.new_ones(like.shape[:-1])
        return self.counit(self.pure(ones, -1), -1, REAL)

    def softmax(self, x: Tensor, dim: int) -> Tensor:
        """``e^x / counit(e^x)`` along ``dim``: normalised against this structure's measure.

        For stability it first subtracts ``pure m`` -- a constant function, in
        any stored basis -- with ``m`` the largest stored value.
        """
        e = self.fmap(torch.exp, x - self.pure(x.amax(dim).detach(), dim), dim)
        return e / self.counit(e, dim, REAL).unsqueeze(dim)

    def layer_norm(self, x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
        """Layer norm over the last axis, with mean and variance taken by the counit.

        ``mean = counit x / counit (pure 1)``, ``var = counit ((x - mean)^2) / counit (pure 1)``;
        ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (products are zips).
        """
        mass = self.mass(x)
        mean = self.counit(x, -1, REAL) / mass
        centred = x - self.pure(mean, -1)
        var = self.counit(self.zip_with(torch.mul, centred, centred, -1), -1, REAL) / mass
        return self.scale_shift(centred * torch.rsqrt(var + eps).unsqueeze(-1), weight, bias)

    def scale_shift(self, y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
        """``y * weight + bias`` along the last axis (the product is a zip: a product of functions)."""
        if weight is not None:
            y = self.zip_with(torch.mul, y, weight.expand_as(y), -1)
        if bias is not None:
            y = y + bias
        return y

    # ---- lowering hooks for fused attention (see applicative._attention) ----

    def sdpa_factor(self, x: Tensor) -> Tensor | None:
        """``x L`` where this structure's contraction metric is ``M = L Lᵀ``; ``None`` if unavailable."""
        return None

    def sdpa_log_measure(self, like: Tensor) -> Tensor | None:
        """Log-weights of a diagonal measure at stored positions, ``None`` for counting measure.

        Raise ``NotImplementedError`` if the measure is not diagonal.
        """
        raise NotImplementedError

    def stack(self, copies: int) -> Structure:
        """``copies`` side-by-side copies of this structure as one axis (for attention heads)."""
        return Stacked(self, copies)


class Stacked(Structure):
    """``copies`` copies of ``base`` laid end to end along one axis, copy-major.

    The counit and contraction act block by block and sum over the copies, so a
    linear map out of a ``Stacked`` axis is the sum of per-copy maps (the
    output projection of multi-head attention).
    """

    def __init__(self, base: Structure, copies: int) -> None:
        if copies < 1:
            raise StructureError(f"Stacked needs at least one copy, got {copies}")
        self.base = base
        self.copies = copies
        self.size = base.size * copies
        self.stores_positions = base.stores_positions

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stacked) and (self.base, self.copies) == (other.base, other.copies)

    def __hash__(self) -> int:
        return hash((Stacked, self.base, self.copies))

    def __repr__(self) -> str:
        return f"Stacked({self.base!r}, {self.copies})"

    def split(self, x: Tensor, dim: int) -> Tensor:
        """``(..., copies * n, ...)`` -> ``(..., copies, n, ...)`` at ``dim``."""
        d = dim % x.ndim
        return unflatten(x, d, (self.copies, self.base.size))

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        one = self.base.pure(x, d)  # base axis at d
        return one.unsqueeze(d).expand(*one.shape[:d], self.copies, *one.shape[d:]).flatten(d, d + 1)

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        d = dim % x.ndim
        return self.base.fmap(f, self.split(x, d), d + 1).flatten(d, d + 1)

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        d = dim % a.ndim
        return self.base.zip_with(f, self.split(a, d), self.split(b, d), d + 1).flatten(d, d + 1)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        d = dim % x.ndim
        return ring.sum(self.base.counit(self.split(x, d), d + 1, ring), d)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        a4 = unflatten(a, -1, (self.copies, self.base.size)).movedim(-2, -3)  # (..., c, m, n)
        b4 = unflatten(b, -2, (self.copies, self.base.size))  # (..., c, n, k)
        return ring.sum(self.base.contract(a4, b4, ring), -3)
