"""Generic linear algebra, written once from ``pure``, ``zip_with``, ``fmap`` and ``counit``.

The design source's definitions, read with ``F, G, H`` structures and ``a`` a ring::

    dot a b     = counit (zip_with mul a b)              F a, F a       -> a
    mul_mv m v  = fmap (dot v) m                         F (G a), G a   -> F a
    mul_vm v m  = counit (fmap (\\(x, r) -> x * r) (pair v m))
                                                         F a, F (G a)   -> G a
    mul_mm a b  = fmap (`mul_vm` b) a                    F (G a), G (H a) -> F (H a)
    mul_mmt a b = fmap (a `mul_mv`) b                    F (G a), H (G a) -> H (F a)
    outer a b   = fmap (\\x -> fmap (x *) b) a            F a, G a       -> F (G a)

Each of these is one call of the contracted structure's fused kernel
:meth:`~applicative.Structure.contract` (``counit (zip_with mul a b)`` as a
matrix product), so no ``F x G x H`` intermediate is ever built. Typed
leading axes (``*B``) are ``fmap``-ed over for free: they are flattened into
the matrix dimension of that one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple, cast

from torch import Tensor

from ._errors import StructureError
from ._field import Field, check_compatible
from ._kernels import batch_shape
from ._ring import Ring
from ._structure import Pointwise, Pointwise2, Structure
from ._tensor import broadcast_shape, unflatten

F = TypeVar("F", bound=Structure)
G = TypeVar("G", bound=Structure)
H = TypeVar("H", bound=Structure)
O = TypeVar("O", bound=Structure)
I = TypeVar("I", bound=Structure)
A = TypeVarTuple("A")
B = TypeVarTuple("B")
C = TypeVarTuple("C")
H_ = TypeVarTuple("H_")
F_ = TypeVarTuple("F_")

AnyField = Field[*tuple[Any, ...]]


def join(op: str, what_a: str, a: Structure, what_b: str, b: Structure) -> Structure:
    """The structure ``a`` and ``b`` pair on, or a :class:`StructureError` naming both sides."""
    if a is b or a == b:
        return a
    try:
        return a.join(b, op)
    except StructureError as e:
        msg = f"{op}: {what_a} {_verb(what_a)} {a!r} but {what_b} {_verb(what_b)} {b!r}"
        if type(a).join is not Structure.join:  # a structure's own join explains why (trees: batch shapes, ...)
            msg += f" ({e})"
        raise StructureError(msg) from None


def _verb(what: str) -> str:
    """``are`` after a plural ("the matrix rows", "the keys' features"), else ``is``."""
    last = what.rsplit(" ", 1)[-1]
    return "are" if last.endswith(("s", "s'")) and not last.endswith(("'s", "axis", "bias")) else "is"


def _on(s: Structure, x: Tensor, dim: int, target: Structure) -> Tensor:
    return x if s is target else s.refine(x, dim, target)


def _typed(x: AnyField) -> int:
    return len(x.axes)


# ---- the applicative primitives, lifted to fields --------------------------


def pure(s: F, x: Field[*A]) -> Field[F, *A]:
    """``pure x``: a constant structure ``s`` holding the value ``x`` everywhere."""
    t = s.pure(x.tensor, -(_typed(x) + 1))
    return Field(t, (s, *x.axes), x.ring)


def fmap(f: Callable[[Field[*A]], Field[*C]], x: Field[F, *A]) -> Field[F, *C]:
    """``fmap f x``: apply ``f`` to the value at every position of ``x``'s outer structure.

    ``f`` receives a field of the inner axes whose batch includes the outer
    axis (that is why ``fmap`` over an outer structure is free).
    """
    s, inner = x.structures[0], x.axes[1:]
    dim = x.tensor.ndim - _typed(x)
    out: list[tuple[Structure, ...]] = []

    def g(t: Tensor) -> Tensor:
        r = f(Field(t, inner, x.ring))
        out.append(r.structures)
        return r.tensor

    t = s.fmap(g, x.tensor, dim)
    return cast("Field[F, *C]", Field(t, (s, *out[0]), x.ring))


def zip_with(
    f: Callable[[Field[*A], Field[*A]], Field[*C]],
    a: Field[F, *A],
    b: Field[F, *A],
) -> Field[F, *C]:
    """``zip_with f a b = fmap (uncurry f) (pair a b)`` on the outer structure."""
    check_compatible("zip_with", a, b)
    if _typed(a) != _typed(b):
        raise StructureError(f"zip_with: {a!r} and {b!r} have different numbers of axes")
    sa, sb = a.structures[0], b.structures[0]
    s = join("zip_with", "the first value", sa, "the second", sb)
    dim = -_typed(a)
    inner_a, inner_b = a.axes[1:], b.axes[1:]
    out: list[tuple[Structure, ...]] = []

    def g(u: Tensor, v: Tensor) -> Tensor:
        r = f(Field(u, inner_a, a.ring), Field(v, inner_b, b.ring))
        out.append(r.structures)
        return r.tensor

    t = s.zip_with(g, _on(sa, a.tensor, dim, s), _on(sb, b.tensor, dim, s), dim)
    return cast("Field[F, *C]", Field(t, (s, *out[0]), a.ring))


def counit(x: Field[F, *A]) -> Field[*A]:
    """``counit x``: collapse the outer structure (sum, integral, expectation, fold)."""
    s = x.structures[0]
    return Field(s.counit(x.tensor, -_typed(x), x.ring), x.axes[1:], x.ring)


# ---- pointwise: fmap / zip_with all the way down to the scalars -------------


def _fmap_down(f: Pointwise, t: Tensor, axes: tuple[Structure, ...], levels: int, k: int = 0) -> Tensor:
    """``fmap`` through the first ``levels`` of ``t``'s typed ``axes``, then ``f`` on what is left."""
    if k == levels:
        return f(t)
    return axes[k].fmap(lambda u: _fmap_down(f, u, axes, levels, k + 1), t, k - len(axes))


def fmap_last(f: Pointwise, t: Tensor, axes: tuple[Structure, ...]) -> Tensor:
    """Apply ``f`` (acting on the last axis) at every position of the leading typed ``axes[:-1]``.

    ``fmap (fmap ... f)`` over the outer structures: the identity wrapper for
    vectors; for a structure stored in another basis (Chebyshev coefficients)
    ``f`` runs on its positions, so a normalisation along the last axis is
    applied at each point ``x`` of an outer function, not to each coefficient row.
    """
    return _fmap_down(f, t, axes, len(axes) - 1)


def _zip_all(f: Pointwise2, a: Tensor, b: Tensor, axes: tuple[Structure, ...], k: int) -> Tensor:
    if k == len(axes):
        return f(a, b)
    return axes[k].zip_with(lambda u, v: _zip_all(f, u, v, axes, k + 1), a, b, k - len(axes))


def _aligned(op: str, a: AnyField, b: AnyField) -> tuple[tuple[Structure, ...], Tensor, Tensor]:
    """Join two fields axis by axis and refine both onto the joined structures."""
    check_compatible(op, a, b)
    if _typed(a) != _typed(b):
        raise StructureError(f"{op}: {a!r} and {b!r} have different numbers of axes")
    k = _typed(a)
    axes, ta, tb = [], a.tensor, b.tensor
    for i, (sa, sb) in enumerate(zip(a.structures, b.structures, strict=True)):
        s = join(op, f"axis {i} of the first value", sa, "the second's", sb)
        ta, tb = _on(sa, ta, i - k, s), _on(sb, tb, i - k, s)
        axes.append(s)
    return tuple(axes), ta, tb


def pointwise(f: Pointwise, x: Field[*A]) -> Field[*A]:
    """Apply a scalar function at every position of every axis (``fmap . fmap . ...``)."""
    return x.with_tensor(_fmap_down(f, x.tensor, x.structures, _typed(x)))


def pointwise2(f: Pointwise2, a: Field[*A], b: Field[*A]) -> Field[*A]:
    """Combine two values position by position at every level (nested ``zip_with``)."""
    axes, ta, tb = _aligned("pointwise2", a, b)
    return cast("Field[*A]", Field(_zip_all(f, ta, tb, axes, 0), axes, a.ring))


def add(a: Field[*A], b: Field[*A]) -> Field[*A]:
    """Pointwise ring sum. Linear, so it acts on the stored basis directly."""
    axes, ta, tb = _aligned("add", a, b)
    return cast("Field[*A]", Field.unchecked(a.ring.add(ta, tb), axes, a.ring))


def mul(a: Field[*A], b: Field[*A]) -> Field[*A]:
    """Pointwise ring product (Hadamard; for functions, the product function)."""
    axes, ta, tb = _aligned("mul", a, b)
    return cast("Field[*A]", Field(_zip_all(a.ring.mul, ta, tb, axes, 0), axes, a.ring))


def scale(c: float | Tensor, x: Field[*A]) -> Field[*A]:
    """Multiply every value by the scalar ``c`` (a ring element, or a tensor broadcasting over the batch)."""
    c_t = c if isinstance(c, Tensor) else x.tensor.new_full((), c)
    if c_t.ndim:
        c_t = c_t.reshape(*c_t.shape, *([1] * _typed(x)))
    return x.with_tensor(x.ring.mul(c_t, x.tensor))


# ---- derived linear algebra ------------------------------------------------


def dot(a: Field[*B, F], b: Field[*B, F]) -> Field[*B]:
    """``dot a b = counit (zip_with mul a b)`` over the last axis; ``fmap``-ed over leading typed axes.

    Two values on different structures of one axis (two trees) are contracted by
    the structure's fused :meth:`~applicative.Structure.inner` when it has one,
    without building the pairing.
    """
    if _typed(a) == 1 and _typed(b) == 1 and a.structures[0] is not b.structures[0]:
        check_compatible("dot", a, b)
        t = a.structures[0].inner(b.structures[0], a.tensor, b.tensor, a.ring)
        if t is not None:
            return cast("Field[*B]", Field(t, (), a.ring))
    axes, ta, tb = _aligned("dot", a, b)
    s = axes[-1]
    t = s.contract(ta.unsqueeze(-2), tb.unsqueeze(-1), a.ring)[..., 0, 0]
    return cast("Field[*B]", Field(t, axes[:-1], a.ring))


def mul_mmt(a: Field[F, G], b: Field[*H_, G]) -> Field[*H_, F]:
    """``mul_mmt a b = fmap (a `mul_mv`) b``: ``a`` is ``F x G``, ``b`` is ``*H x G``; result ``*H x F``."""
    return cast("Field[*H_, F]", _rows("mul_mmt", "the matrix's columns", "the other matrix's rows", a, b))


def mul_mv(m: Field[F, G], v: Field[G]) -> Field[F]:
    """``mul_mv m v = fmap (dot v) m``: ``F x G`` matrix times ``G`` vector."""
    return cast("Field[F]", _rows("mul_mv", "matrix columns", "the vector", m, v))


def mul_mm(a: Field[*F_, G], b: Field[G, H]) -> Field[*F_, H]:
    """``mul_mm a b = fmap (`mul_vm` b) a``: ``*F x G`` times ``G x H``; result ``*F x H``."""
    return cast("Field[*F_, H]", _cols("mul_mm", "the left matrix's columns", "the right matrix's rows", a, b))


def mul_vm(v: Field[F], m: Field[F, G]) -> Field[G]:
    """``mul_vm v m``: the vector ``v`` (over ``F``) times the ``F x G`` matrix ``m``."""
    return cast("Field[G]", _cols("mul_vm", "the vector", "the matrix rows", v, m))


def outer(a: Field[F], b: Field[G]) -> Field[F, G]:
    """``outer a b = fmap (\\x -> fmap (x *) b) a``: the ``F x G`` matrix ``a_i b_j``."""
    check_compatible("outer", a, b)
    t = a.ring.mul(a.tensor.unsqueeze(-1), b.tensor.unsqueeze(-2))
    return Field(t, (a.axes[0], b.axes[0]), a.ring)


def _batches(op: str, a: AnyField, b: AnyField) -> None:
    """Raise :class:`StructureError` unless the untyped batch shapes of ``a`` and ``b`` broadcast."""
    ba, bb = a.batch_shape, b.batch_shape
    if ba == bb or not ba or not bb:
        return
    try:
        broadcast_shape(ba, bb)
    except RuntimeError:
        raise StructureError(
            f"{op}: batch shapes {tuple(a.batch_shape)} and {tuple(b.batch_shape)} do not broadcast "
            f"(the untyped leading axes of {a!r} and {b!r}); give them equal batch shapes or size-1 axes"
        ) from None


def _rows(op: str, what_a: str, what_b: str, a: AnyField, b: AnyField) -> Any:
    """Contract the last axis of ``a`` (``F x G``) with the last axis of ``b`` (``*H x G``)."""
    check_compatible(op, a, b)
    _batches(op, a, b)
    if _typed(a) != 2:
        raise StructureError(f"{op}: expected a matrix (2 typed axes), got {a!r}")
    sa, sb = a.structures[1], b.structures[-1]
    g = join(op, what_a, sa, what_b, sb)
    ta, tb = _on(sa, a.tensor, -1, g), _on(sb, b.tensor, -1, g)
    nh = _typed(b) - 1
    h_shape = tb.shape[tb.ndim - 1 - nh : tb.ndim - 1]
    tb2 = tb.unsqueeze(-2) if nh == 0 else tb.flatten(tb.ndim - 1 - nh, tb.ndim - 2)  # (..., mH, g)
    r = g.contract(tb2, ta.transpose(-1, -2), a.ring)  # (..., mH, f)
    r = r.squeeze(-2) if nh == 0 else unflatten(r, -2, h_shape)
    return Field.unchecked(r, (*b.structures[:-1], a.structures[0]), a.ring)


def _cols(op: str, what_a: str, what_b: str, a: AnyField, b: AnyField) -> Any:
    """Contract the last axis of ``a`` (``*F x G``) with the first typed axis of ``b`` (``G x H``)."""
    check_compatible(op, a, b)
    _batches(op, a, b)
    if _typed(b) != 2:
        raise StructureError(f"{op}: expected a matrix (2 typed axes), got {b!r}")
    sa, sb = a.structures[-1], b.structures[0]
    g = join(op, what_a, sa, what_b, sb)
    ta, tb = _on(sa, a.tensor, -1, g), _on(sb, b.tensor, -2, g)
    nf = _typed(a) - 1
    f_shape = ta.shape[ta.ndim - 1 - nf : ta.ndim - 1]
    ta2 = ta.unsqueeze(-2) if nf == 0 else ta.flatten(ta.ndim - 1 - nf, ta.ndim - 2)  # (..., mF, g)
    r = g.contract(ta2, tb, a.ring)  # (..., mF, h)
    r = r.squeeze(-2) if nf == 0 else unflatten(r, -2, f_shape)
    return Field.unchecked(r, (*a.structures[:-1], b.structures[1]), a.ring)


def pure_through(axes: tuple[Structure, ...], t: Tensor) -> Tensor:
    """``pure`` over each of ``axes`` (outermost first): ``t`` ``(..., n)`` held constant on them.

    For structures that store their positions this is a broadcast; in another
    basis (a Chebyshev axis) it is the constant function.
    """
    for k, s in enumerate(reversed(axes)):
        t = s.pure(t, -(k + 2))
    return t


def affine_through(
    s: Structure, outer: tuple[Structure, ...], x: Tensor, w: Tensor, b: Tensor | None, ring: Ring
) -> Tensor:
    """``s.affine`` at every position of the ``outer`` structures of ``x``.

    Fused (bias added to every stored row) when the outer structures store
    their positions; otherwise the bias is lifted with :func:`pure_through`.
    """
    if b is None or all(o.basis is None for o in outer):
        return s.affine(x, w, b, ring)
    return ring.add(s.affine(x, w, None, ring), pure_through(outer, b))


def linear(w: Field[O, I], b: Field[O] | None, x: Field[*B, I]) -> Field[*B, O]:
    """The affine map ``x ↦ W x + b`` at every position of ``x``'s leading typed axes.

    ``linear weights bias input = zip_with add bias (mul_mv weights input)``.
    """
    check_compatible("linear", w, x, names=("the weight", "the input"))
    sw, sx = w.structures[1], x.structures[-1]
    s = join("linear", "the weight's columns", sw, "the input", sx)
    if b is not None and b.structures[0] != w.structures[0]:
        raise StructureError(f"linear: the bias is {b.structures[0]!r} but the weight's rows are {w.structures[0]!r}")
    tx = _on(sx, x.tensor, -1, s)
    tw = w.tensor
    if sw is not s and batch_shape(s) and not w.batch_shape:
        # a shared weight refined onto per-example structures: its rows are not the examples' batch
        tw = tw.reshape(*([1] * len(batch_shape(s))), *tw.shape)
    tw = _on(sw, tw, -1, s)
    tb = None if b is None else b.tensor
    # batch axes of the weight and bias align with x's batch, not with x's leading typed axes
    ones = (1,) * (_typed(x) - 1)
    if ones and tw.ndim > 2:
        tw = tw.reshape(*tw.shape[:-2], *ones, *tw.shape[-2:])
    outer = x.structures[:-1]
    if ones and tb is not None and tb.ndim > 1 and all(o.basis is None for o in outer):
        tb = tb.reshape(*tb.shape[:-1], *ones, tb.shape[-1])
    t = affine_through(s, outer, tx, tw, tb, x.ring)
    return cast("Field[*B, O]", Field.unchecked(t, (*x.structures[:-1], w.structures[0]), x.ring))
