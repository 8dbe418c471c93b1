"""The product of two structures: one axis whose positions are pairs (DESIGN §10).

``Pairs(a, b)`` is ``a ⊗ b`` laid out on one axis, ``a``-major: position
``(i, j)`` sits at ``i · |b| + j``. A 2D domain (``Pairs(Chebyshev(n), Chebyshev(m))``),
an image's pixels (``Pairs(Vector(h), Vector(w))``) and a grid of tokens are each
one sequence of a Transformer, so attention integrates over the whole domain.

Its contract is built from the factors' contracts and nothing else:

* size ``|a| · |b|``; per-example data: the factors' data, side by side;
* stored basis: the Kronecker product of the factors' bases (identity ⊗ DCT,
  DCT ⊗ DCT, ...): reshape to ``(|a|, |b|)``, change basis along each axis,
  flatten; products are exact on the product of the factors' grids;
* measure: the product measure ``w_a ⊗ w_b`` (``log w = log w_a ⊕ log w_b``),
  and the metric ``W_a ⊗ W_b`` (Kronecker product of the factors' metrics);
* pairing: factor by factor (``join`` and ``refine`` of each).

Every kernel -- ``pure``, ``fmap``, ``zip_with``, ``contract``, ``softmax``,
``layer_norm``, the fused attention lowering through the product quadrature
grid -- is then derived (:mod:`applicative._kernels`). One override pays:
``counit`` collapses the two factors in turn (Fubini), so each factor's own
fast counit runs; the law checker compares it with the derived one.

Capabilities: a product splits into heads when its first factor does
(``Pairs(a, b).split(h) = Pairs(a.split(h), b)``: heads are contiguous blocks
of the ``a``-major layout); it has no order (a causal mask over a 2D domain
means nothing); its rings are those both factors support.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch
from torch import Tensor

from . import _kernels as k
from ._data import DataStructure, batch_shape, data_of, derived, static_of, with_data
from ._errors import StructureError
from ._ring import Ring
from ._structure import Basis, Structure
from ._tensor import broadcast_batch, unflatten


def _sizes(a: Structure, b: Structure, points: int) -> tuple[int, int]:
    """How ``points`` positions of ``a ⊗ b`` factor: the structures' own positions, or their product grid."""
    if points == a.size * b.size:
        return a.size, b.size
    ga, gb = k.grid(a), k.grid(b)
    if points == ga * gb:
        return ga, gb
    raise StructureError(
        f"Pairs({a!r}, {b!r}): {points} positions are neither its {a.size}x{b.size} positions nor its "
        f"{ga}x{gb} product grid; ask for one of those"
    )


@dataclass(frozen=True)
class PairsBasis(Basis):
    """The Kronecker product of the factors' stored bases (a factor without a basis contributes the identity)."""

    a: Structure
    b: Structure

    @property
    def grid(self) -> int:
        """The product of the factors' grids: where a product of two stored values is exact."""
        return k.grid(self.a) * k.grid(self.b)

    def positions(self, x: Tensor, dim: int, points: int) -> Tensor:
        pa, pb = _sizes(self.a, self.b, points)
        d = dim % x.ndim
        t = unflatten(x, d, (self.a.size, self.b.size))  # (..., |a|, |b|, ...)
        t = k.positions(self.b, k.positions(self.a, t, d, pa), d + 1, pb)
        return t.flatten(d, d + 1)

    def stored(self, v: Tensor, dim: int) -> Tensor:
        d = dim % v.ndim
        pa, pb = _sizes(self.a, self.b, v.shape[d])
        t = unflatten(v, d, (pa, pb))
        return k.stored(self.b, k.stored(self.a, t, d), d + 1).flatten(d, d + 1)


class Pairs(DataStructure):
    """``a ⊗ b``: one axis of ``|a| · |b|`` positions ``(i, j)``, ``a``-major, with the product measure.

    Args:
        a: the outer factor (its index varies slowest).
        b: the inner factor.
    """

    def __init__(self, a: Structure, b: Structure) -> None:
        for name, s in (("a", a), ("b", b)):
            if not isinstance(s, Structure):
                raise StructureError(
                    f"Pairs({name}=...): expected a Structure, got {type(s).__name__}; "
                    "pass e.g. Pairs(Vector(8), Vector(8))"
                )
        if broadcast_batch(batch_shape(a), batch_shape(b)) is None:
            raise StructureError(
                f"Pairs({a!r}, {b!r}): the factors' per-example batches {tuple(batch_shape(a))} and "
                f"{tuple(batch_shape(b))} do not broadcast; build both for the same examples"
            )
        self.a, self.b = a, b
        self.size = a.size * b.size

    # ---- 1. size, per-example data, identity ------------------------------------

    def data(self) -> tuple[Tensor, ...]:
        return (*data_of(self.a), *data_of(self.b))

    def with_data(self, data: tuple[Tensor, ...]) -> Pairs:
        n = len(data_of(self.a))
        return Pairs(with_data(self.a, data[:n]), with_data(self.b, data[n:]))

    def derived(self, how: Hashable, data: tuple[Tensor, ...]) -> Pairs:
        n = len(data_of(self.a))
        return Pairs(derived(self.a, how, data[:n]), derived(self.b, how, data[n:]))

    def static(self) -> Hashable:
        return (type(self.a), static_of(self.a), type(self.b), static_of(self.b))

    def __eq__(self, other: object) -> bool:
        """Factor by factor: equal factors, in the same order."""
        if self is other:
            return True
        return isinstance(other, Pairs) and type(other) is type(self) and self.a == other.a and self.b == other.b

    def __hash__(self) -> int:
        return hash((type(self), self.a, self.b))

    @property
    def batch_shape(self) -> torch.Size:
        shape = broadcast_batch(batch_shape(self.a), batch_shape(self.b))
        assert shape is not None  # checked on construction
        return torch.Size(shape)

    def __repr__(self) -> str:
        return f"Pairs({self.a!r}, {self.b!r})"

    # ---- 2. stored basis ------------------------------------------------------------

    @property
    def basis(self) -> PairsBasis | None:
        if self.a.basis is None and self.b.basis is None:
            return None
        return PairsBasis(self.a, self.b)

    # ---- 3. the measure ---------------------------------------------------------------

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor | None:
        """``log w_a(i) + log w_b(j)`` at position ``(i, j)``: ``(*batch, points)`` (``None``: both counting)."""
        pa, pb = _sizes(self.a, self.b, self.size if points is None else points)
        la = self.a.log_measure(dtype, device, None if pa == self.a.size else pa)
        lb = self.b.log_measure(dtype, device, None if pb == self.b.size else pb)
        if la is None and lb is None:
            return None
        la = torch.zeros(pa, dtype=dtype, device=device) if la is None else la
        lb = torch.zeros(pb, dtype=dtype, device=device) if lb is None else lb
        q = max(la.ndim, lb.ndim) - 1  # the batch rank; per-example data is left-aligned
        la = la.reshape(*la.shape[:-1], *([1] * (q - la.ndim + 1)), pa, 1)
        lb = lb.reshape(*lb.shape[:-1], *([1] * (q - lb.ndim + 1)), 1, pb)
        return (la + lb).flatten(-2)

    def metric(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """``W_a ⊗ W_b``: the Gram matrix of the Kronecker basis."""
        if self.batch_shape:
            return super().metric(dtype, device)  # raises: a metric per example is not one matrix
        return torch.kron(self.a.metric(dtype, device), self.b.metric(dtype, device))

    # ---- 4. pairing, factor by factor ---------------------------------------------------

    def join(self, other: Structure, op: str) -> Structure:
        if not isinstance(other, Pairs):
            return super().join(other, op)
        a, b = self.a.join(other.a, op), self.b.join(other.b, op)
        return self if (a is self.a and b is self.b) else Pairs(a, b)

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        if target == self:
            return x
        if not isinstance(target, Pairs):
            return super().refine(x, dim, target)
        d = dim % x.ndim
        t = unflatten(x, d, (self.a.size, self.b.size))
        t = self.b.refine(self.a.refine(t, d, target.a), d + 1, target.b)
        return t.flatten(d, d + 1)

    # ---- the one override: Fubini ---------------------------------------------------------

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """``Σ_i w_a(i) Σ_j w_b(j) x_ij``: the inner factor's counit, then the outer's."""
        d = dim % x.ndim
        t = unflatten(x, d, (self.a.size, self.b.size))
        return self.a.counit(self.b.counit(t, d + 1, ring), d, ring)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        """``a (W_a ⊗ W_b) b`` as two small matrix products along the factors (``O(n (n_a + n_b))``, not ``O(n²)``).

        ``a`` ``(..., m, |a||b|)``, ``b`` ``(..., |a||b|, k)``; the metric is applied on the smaller side.
        Structures stored at their positions, or with per-example data, take the derived kernel.
        """
        if self.basis is None or self.batch_shape:
            return super().contract(a, b, ring)
        self.check_ring(ring, "contract")
        wa, wb = self.a.metric(b.dtype, b.device), self.b.metric(b.dtype, b.device)
        if a.shape[-2] < b.shape[-1]:  # weigh the rows of a: (..., m, |a|, |b|)
            t = unflatten(a, -1, (self.a.size, self.b.size))
            t = torch.matmul(wa, t) @ wb  # W symmetric: (a W)_mkl = Σ_ij a_mij Wa_ik Wb_jl
            return t.flatten(-2) @ b
        t = unflatten(b, -2, (self.a.size, self.b.size))  # (..., |a|, |b|, k)
        t = torch.matmul(wb, t)  # along |b|
        t = torch.matmul(wa, t.transpose(-2, -3)).transpose(-2, -3)  # along |a|
        return a @ t.flatten(-3, -2)

    # ---- capabilities --------------------------------------------------------------------

    def split(self, heads: int) -> Structure:
        """``Pairs(a.split(heads), b)``: heads are contiguous blocks of the ``a``-major layout."""
        if heads == 1:
            return self
        try:
            return Pairs(self.a.split(heads), self.b)
        except StructureError as e:
            raise StructureError(f"{self!r} splits into heads through its first factor: {e}") from None

    def check_ring(self, ring: Ring, op: str) -> None:
        self.a.check_ring(ring, op)
        self.b.check_ring(ring, op)
