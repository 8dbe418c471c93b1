"""Structures: the objects that own one axis of a :class:`~applicative.Field`.

The contract a structure author writes is the docstring of :class:`Structure`
(``help(Structure)``); what is derived from it lives in :mod:`applicative._kernels`
as free functions, and the plumbing of structures that carry per-example tensors
in :class:`~applicative.DataStructure` (:mod:`applicative._data`). The checks
every structure gets without declaring anything are free functions here:
:func:`check_axis` (a tensor axis can hold the structure) and :func:`require_order`.

Tensor conventions. A structure acts on one tensor axis ``dim`` (negative
indices count from the end). Axes before ``dim`` are batch axes (outer
structures, or untyped batch); axes after it are the inner structures of the
values it holds. Per-example data lines up with the *leading* axes of the
tensors it acts on (left-aligned): typed axes and attention heads sit between
the batch and the structure's own axis.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree
from torch import Tensor

from . import _kernels as k
from ._contract import Basis as Basis
from ._contract import Pointwise as Pointwise
from ._contract import Pointwise2 as Pointwise2
from ._errors import StructureError
from ._ring import Ring
from ._tensor import broadcast_batch, unflatten


@dataclass(frozen=True)
class _Spec:
    """A structure's pytree context: its class and static part (what specs compare), and a template to rebuild."""

    kind: type
    static: Hashable
    template: Structure = field(compare=False, hash=False)


def _flatten(s: Structure) -> tuple[list[Tensor], _Spec]:
    return [], _Spec(type(s), s, s)  # no leaves: the structure is its own static part


def _flatten_with_keys(s: Structure) -> tuple[list[tuple[Any, Tensor]], _Spec]:
    return [], _Spec(type(s), s, s)


def _unflatten(leaves: Any, spec: _Spec) -> Structure:
    return spec.template


#: a pytree node's functions: flatten, unflatten, flatten with keys
PytreeNode = tuple[
    Callable[[Any], tuple[list[Tensor], _Spec]],
    Callable[[Any, _Spec], Any],
    Callable[[Any], tuple[list[tuple[Any, Tensor]], _Spec]],
]


class Structure:
    """Abstract base of every structure: one axis of a field, ``Applicative`` and ``Counit``.

    The contract. Most structures are an index set with a measure; a
    structure author writes only:

    1. ``size`` (equality is the class and the size; define ``__eq__`` and ``__hash__``
       if more identifies it, as :class:`Stacked` does). Per-example data, if it has any:
       derive from :class:`~applicative.DataStructure` and declare each tensor as a field
       (``probs: Tensor = per_example(event_dims=1)``); its equality, ``.to(device)``, batch indexing and concatenation
       come with that base (with :class:`~applicative.Ragged` for examples of different sizes).
       Every structure is a pytree node, whose leaves are its per-example tensors;
    2. its stored basis, if values are not stored at their positions
       (:attr:`basis`, a :class:`Basis`; ``None``: the identity);
    3. its measure at the positions: :meth:`log_measure` (``None``: the counting
       measure; shape ``(*batch, size)``, checked where used); optionally an exact
       :meth:`metric` on the stored basis;
    4. only if pairing is data dependent (trees): :meth:`join` and :meth:`refine`
       (and, to walk both structures at once, :meth:`inner`).

    Everything else is derived once (:mod:`applicative.kernels`). ``pure``, ``fmap``,
    ``zip_with``, ``counit``, ``contract`` and ``affine`` are methods here, one-line shells over
    those free functions: a structure may override one for speed, and the law checker checks the
    override against the derived and the generic definitions. The rest -- the change of basis
    (``positions``, ``stored``, ``grid``), ``mass``, ``softmax``, ``layer_norm`` and the attention
    lowering -- are free functions of the structure only (public in :mod:`applicative.kernels`),
    built on those methods.

    Capabilities are declared, not assumed: :attr:`ordered` (causal
    masks; :func:`~applicative.require_order` asks for it), :attr:`periodic` (coordinates on a circle),
    :attr:`real` (values must be real floating point), :meth:`split` (attention heads),
    :meth:`coordinates` (positions on ``[-1, 1]``), :meth:`stack` (the heads' outputs side by side), and
    the rings a structure supports (:meth:`check_ring`). Each raises a :class:`StructureError` naming the
    structure and the capability. Check yours with ``python -m applicative.laws``.

    A seven-line example (a periodic grid with the uniform measure)::

        class Circle(Structure):
            def __init__(self, n: int) -> None:
                self.size = n

            def log_measure(self, dtype, device, points=None):
                return torch.full((self.size,), -math.log(self.size), dtype=dtype, device=device)

    Declaring a nominal axis is a subclass too: ``class Model(Vector): size = 64``.
    """

    #: length of the tensor axis this structure owns
    size: int
    #: capability: positions are ordered, so causal masks (and scans) make sense
    ordered: ClassVar[bool] = False
    #: capability: positions lie on a circle, so a distance ``t - s`` between coordinates is taken modulo the
    #: period 2 (a window is ``1 - cos π(t - s)``, not ``(t - s)²``)
    periodic: ClassVar[bool] = False
    #: values on it are real (a series' real coefficients): a field on it needs a floating-point tensor,
    #: neither complex nor integer (checked by :func:`check_axis`)
    real: ClassVar[bool] = False
    #: how instances are pytree nodes: a structure without per-example data has no leaves; a
    #: :class:`~applicative.DataStructure` declares its own (its tensors are the leaves)
    _pytree: ClassVar[PytreeNode] = (_flatten, _unflatten, _flatten_with_keys)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        flatten, unflatten, flatten_with_keys = cls._pytree
        pytree.register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=flatten_with_keys)

    # ---- 1. size and identity ----------------------------------------------------

    def __eq__(self, other: object) -> bool:
        """Same class and same ``size``."""
        return self is other or (type(other) is type(self) and isinstance(other, Structure) and other.size == self.size)

    def __hash__(self) -> int:
        return hash((type(self), self.size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size})"

    # ---- 2. stored basis <-> positions ---------------------------------------

    @property
    def basis(self) -> Basis | None:
        """The stored basis; ``None`` when values are stored at their positions.

        The change of basis is :func:`applicative.kernels.positions` and :func:`applicative.kernels.stored`
        (the identity without a basis), exact for products on :func:`applicative.kernels.grid` positions.
        """
        return None

    # ---- 3. the measure --------------------------------------------------------

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor | None:
        """``log w`` at the positions, ``(*batch, points or size)``; ``None`` for the counting measure (``w = 1``).

        ``-inf`` marks positions of weight zero (padding). ``points`` asks for the
        weights at the ``points`` quadrature points of an oversampled grid; only a structure with a
        :attr:`basis` is ever asked for it. A structure stored at its positions is always called
        with ``points=None`` and may ignore the argument. The shape is checked where the measure is
        used (a wrong one raises :class:`StructureError` naming the structure).
        """
        return None

    def metric(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """The Gram matrix ``W = Pᵀ diag(w) P`` of the stored basis on its product grid, ``(n, n)``.

        Derived from the basis and :meth:`log_measure`; override with an exact one.
        """
        return k.metric(self, dtype, device)

    # ---- 4. pairing -----------------------------------------------------------

    def join(self, other: Structure, op: str) -> Structure:
        """The structure two values are paired on; fixed structures must simply be equal."""
        if self != other:
            raise StructureError(
                f"{op}: structures do not match: {self!r} and {other!r}. "
                "Both values must live on the same structure along this axis."
            )
        return self

    def refine(self, x: Tensor, dim: int, target: Structure) -> Tensor:
        """Re-express a value of ``self`` on a finer structure ``target`` (copying values down)."""
        if target != self:
            raise StructureError(f"cannot refine {self!r} to {target!r}")
        return x

    def inner(self, other: Structure, a: Tensor, b: Tensor, ring: Ring) -> Tensor | None:
        """``counit (zip_with mul a b)`` for ``a`` on ``self`` and ``b`` on ``other`` (the last axes), fused.

        ``None`` (the default) means: pair by :meth:`join` and :meth:`refine`, then contract.
        A structure whose pairing is data dependent may walk both at once instead.
        """
        return None

    # ---- derived: Applicative and Counit (shells a structure may override) -------------

    def pure(self, x: Tensor, dim: int) -> Tensor:
        """Insert this structure's axis at ``dim`` holding ``x`` everywhere (``pure x``)."""
        return k.pure(self, x, dim)

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        """``fmap f``: ``f`` at the positions, with axis ``dim`` as a batch axis."""
        return k.fmap(self, f, x, dim)

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        """``fmap (uncurry f) (pair a b)`` for two values on this same structure (on the product grid)."""
        return k.zip_with(self, f, a, b, dim)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        """Collapse axis ``dim`` of ``x``: ``Σ_positions w ⊗ x`` (a sum, integral, expectation)."""
        return k.counit(self, x, dim, ring)

    # ---- derived linear kernels (shells a structure may override) ---------------------

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        """``counit (zip_with mul a b)`` as a matrix product: ``(..., m, n) x (..., n, k) -> (..., m, k)``."""
        return k.contract(self, a, b, ring)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        """``x Wᵀ + b`` contracting this axis: ``x`` ``(..., n)``, ``weight`` ``(m, n)``, ``bias`` ``(m,)``."""
        return k.affine(self, x, weight, bias, ring)

    # ---- capabilities -------------------------------------------------------------

    def split(self, heads: int) -> Structure:
        """The per-head structure for ``heads`` attention heads over this one (capability: splitting into heads)."""
        if heads == 1:
            return self
        raise StructureError(
            f"{self!r} cannot be split into {heads} heads (it declares no split); "
            "pass key= and value= structures for each head, or use heads=1"
        )

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """The coordinate ``t`` in ``[-1, 1]`` of each of the ``points`` (default ``size``) positions where
        :func:`applicative.kernels.positions` evaluates: ``(points,)`` (capability: positions on an interval, e.g.
        for a window on the distance ``t - s``)."""
        raise StructureError(
            f"{self!r} declares no coordinates (capability `coordinates`: where on [-1, 1] its positions lie); "
            "override coordinates() on the structure, or use one that has them (Chebyshev)"
        )

    def stack(self, copies: int) -> Structure:
        """``copies`` side-by-side copies of this structure as one axis (the heads' outputs)."""
        return Stacked(self, copies)

    def check_ring(self, ring: Ring, op: str) -> None:
        """Raise :class:`StructureError` if values on this structure cannot live in ``ring``."""
        k.check_ring(self, ring, op)


# ---- the checks every structure gets -----------------------------------------------------


def require_order(
    s: Structure, op: str, fix: str = "use an ordered sequence structure (Vector, Padded) for causal attention"
) -> None:
    """Raise :class:`StructureError` naming ``op`` and the ``fix`` unless ``s`` is :attr:`~Structure.ordered`."""
    if not s.ordered:
        raise StructureError(
            f"{op}: {s!r} has no order (capability `ordered`), so a causal mask means nothing on it; {fix}"
        )


def check_axis(s: Structure, x: Tensor, dim: int, where: str) -> None:
    """Raise :class:`StructureError` unless axis ``dim`` of ``x`` can hold ``s``.

    Its size is ``s.size``; the leading axes of ``x`` broadcast with the batch of ``s``'s per-example
    data (left-aligned); and a structure that declares :attr:`~Structure.real` holds a floating-point tensor.
    """
    n = x.shape[dim]
    if n != s.size:
        raise StructureError(
            f"{where}: axis {dim} should be {s!r} of size {s.size}, "
            f"but the tensor has size {n} there (tensor shape {tuple(x.shape)})"
        )
    batch = k.batch_shape(s)
    if batch:
        q = min(dim % x.ndim, len(batch))
        if broadcast_batch(x.shape[:q], batch[:q]) is None:
            raise StructureError(
                f"{where}: the tensor's leading axes {tuple(x.shape[:q])} do not broadcast with the batch of "
                f"{s!r} {tuple(batch)} (per-example data lines up with the leading axes of a tensor)"
            )
    if s.real and not x.dtype.is_floating_point:
        raise StructureError(
            f"{where}: {s!r} holds real values (it declares `real`), got dtype {x.dtype}; "
            "convert with tensor.to(torch.float32)"
        )


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

    def __eq__(self, other: object) -> bool:
        """Same base and number of copies."""
        if self is other:
            return True
        if type(other) is not type(self) or not isinstance(other, Stacked):
            return False
        return other.base == self.base and other.copies == self.copies

    def __hash__(self) -> int:
        return hash((Stacked, self.base, self.copies))

    def __repr__(self) -> str:
        return f"Stacked({self.base!r}, {self.copies})"

    def _split(self, x: Tensor, dim: int) -> Tensor:
        """``(..., copies * n, ...)`` -> ``(..., copies, n, ...)`` at ``dim``."""
        d = dim % x.ndim
        return unflatten(x, d, (self.copies, self.base.size))

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        one = self.base.pure(x, d)  # base axis at d
        return one.unsqueeze(d).expand(*one.shape[:d], self.copies, *one.shape[d:]).flatten(d, d + 1)

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor:
        d = dim % x.ndim
        return self.base.fmap(f, self._split(x, d), d + 1).flatten(d, d + 1)

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor:
        d = dim % a.ndim
        return self.base.zip_with(f, self._split(a, d), self._split(b, d), d + 1).flatten(d, d + 1)

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        d = dim % x.ndim
        return ring.sum(self.base.counit(self._split(x, d), d + 1, ring), d)

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        a4 = unflatten(a, -1, (self.copies, self.base.size)).movedim(-2, -3)  # (..., c, m, n)
        b4 = unflatten(b, -2, (self.copies, self.base.size))  # (..., c, n, k)
        return ring.sum(self.base.contract(a4, b4, ring), -3)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        return k.affine_by_contract(self, x, weight, bias, ring)

    def check_ring(self, ring: Ring, op: str) -> None:
        self.base.check_ring(ring, op)
