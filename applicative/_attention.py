"""Attention, written once, and the normalisations it can use.

The design source's general cross-attention::

    attention softmax queries keys values = att `mul_mm` values
      where att = fmap softmax (keys `mul_mmt` queries)

with ``queries : *I x H``, ``keys : F x H``, ``values : F x G`` and result
``*I x G``. (The design source names the two score arguments the other way
round -- its ``queries`` are aligned with the values; here they carry the
names everyone else uses: the queries index the output.)

A normalisation is a value (:class:`Normalise`) acting on the last axis of
the scores, i.e. on the keys' structure ``F``:

* :class:`ScaledSoftmax` -- ``softmax(scale * s)`` against ``F``'s measure,
* :class:`CausalSoftmax` -- the same with key positions after the query masked,
* :class:`ReluAttention` -- ``relu(scale * s) / counit (pure 1)`` (Wortsman et al. 2023),
* :class:`SoftplusAttention` -- ``softplus(scale * s)`` normalised by its counit,
* :class:`LinearAttention` -- ``scale * s`` unnormalised (a signed integral kernel).

Lowering. Every structure lowers, from its contract alone: the heads'
structure ``H`` contracts with a metric ``M = L Lᵀ`` (``diag(w)`` at its
positions, or the Gram matrix of its basis) and the keys' structure has a
measure ``w`` at its positions (a structure stored in another basis is
sampled at the quadrature points of its product grid), so
``softmax(q M kᵀ) M v`` is one call of
:func:`torch.nn.functional.scaled_dot_product_attention` on ``q L``, ``k L``
and ``v`` with additive bias ``log w``. That is what :func:`attention` runs
whenever the normalisation is a softmax over the real ring (:func:`cannot_lower`
says why not otherwise); ``fused=False`` runs the generic definition instead.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, TypeVarTuple, cast

import torch
import torch.nn.functional as nnf
from torch import Tensor

from . import _kernels as kernels
from ._algebra import _on, fmap_last, join, mul_mm, mul_mmt
from ._errors import StructureError
from ._field import Field, check_compatible
from ._flex import flex_provides, flex_softmax_attention
from ._ring import Ring
from ._structure import Structure
from ._tensor import broadcast_shape, unflatten

F = TypeVar("F", bound=Structure)
G = TypeVar("G", bound=Structure)
H = TypeVar("H", bound=Structure)
I = TypeVarTuple("I")


class Normalise(abc.ABC):
    """A normalisation of attention scores along their last axis (the keys' structure).

    Besides its generic definition (``__call__``) a normalisation declares its capabilities,
    which generic code asks instead of testing classes (the law checker checks them):

    * :meth:`lower` -- its one lowering: a kernel for the whole attention that equals the generic
      definition (``None``: it has none), with keys after the query hidden when asked ``causal``;
    * :meth:`lowers` -- whether :meth:`lower` gives a kernel (plain, or ``causal``);
    * :attr:`needs` -- what it needs of the ring (:meth:`~applicative.Ring.has`);
    * :attr:`causal` -- whether key position ``j`` is hidden from query position ``i < j``
      (then the keys' structure needs an order, capability ``ordered``).
    """

    #: multiplies the scores first (``1/sqrt(d_k)`` for scaled dot-product attention)
    scale: float
    #: the ring capabilities the definition needs (a softmax: an order and ``exp``)
    needs: tuple[str, ...] = ("has_exp", "ordered")
    #: key position ``j`` is hidden from query position ``i < j``
    causal: bool = False

    @abc.abstractmethod
    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        """The generic definition, on the scores ``*I x F``."""

    def lower(
        self, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G], *, causal: bool = False
    ) -> Field[*I, G] | None:
        """This normalisation's kernel for the whole attention (``None``, the default: none).

        Tried first by :func:`attention` with ``fused=True``; it must equal the generic definition
        (``causal``: of ``Causal(self)``). Examples: a softmax lowers to one
        ``scaled_dot_product_attention`` call (:func:`sdpa_lowering`), a linear normalisation to the
        Galerkin form (:func:`galerkin_lowering`), a sparse mask to an edge-list kernel
        (``instances.EdgeSoftmax``).
        """
        return None

    def lowers(self, *, causal: bool = False) -> bool:
        """Whether :meth:`lower` gives a kernel (``causal``: for ``Causal(self)``); declare it beside ``lower``.

        The default: a normalisation that overrides :meth:`lower` lowers, causal or not. One whose
        lowering is not causal (:class:`LinearAttention`) says ``not causal``.
        """
        return type(self).lower is not Normalise.lower

    def name(self) -> str:
        """How errors name this normalisation (its class; ``Causal(Inner)`` for a causal wrapper)."""
        return type(self).__name__

    def check_ring(self, ring: Ring, op: str) -> None:
        """Raise :class:`StructureError` naming ``op`` unless ``ring`` has what this normalisation :attr:`needs`."""
        ring.require(op, type(self).__name__, *self.needs)


def _last(scores: Field[*I, F]) -> Structure:
    return scores.structures[-1]


@dataclass(frozen=True)
class ScaledSoftmax(Normalise):
    """``softmax(scale * s)`` along the keys, against their measure."""

    scale: float = 1.0

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return scores.with_tensor(_last(scores).softmax(scores.tensor * self.scale, -1))

    def lower(
        self, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G], *, causal: bool = False
    ) -> Field[*I, G] | None:
        return sdpa_lowering(Causal(self) if causal else self, queries, keys, values, causal=causal)


@dataclass(frozen=True)
class FlexSoftmax(ScaledSoftmax):
    """:class:`ScaledSoftmax` lowered through ``flex_attention``: masked key blocks are skipped, not computed.

    For keys whose measure hides positions (``Padded``, trees, ragged batches) and for
    ``Causal(FlexSoftmax(c))``; see :mod:`applicative._flex` for when it beats dense SDPA.
    ``compiled=False`` runs flex's eager reference (for tests: no compile time). Where torch
    does not provide the kernel (on CPU: compiled ``float64``, or a backward) it lowers to dense SDPA.
    """

    compiled: bool = True

    def lower(
        self, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G], *, causal: bool = False
    ) -> Field[*I, G] | None:
        norm = Causal(self) if causal else self
        return sdpa_lowering(norm, queries, keys, values, causal=causal, flex=self.compiled)


@dataclass(frozen=True)
class Causal(Normalise):
    """Any normalisation with key position ``j`` hidden from query position ``i < j`` (scores set to ``-inf``).

    ``Causal(ReluAttention(c))`` and ``Causal(SoftplusAttention(c))`` give zero weight to the future
    (``relu(-inf) = softplus(-inf) = 0``); ``Causal(ScaledSoftmax(c))`` (also spelled
    :class:`CausalSoftmax`) lowers to the fused kernel. Needs an ordered sequence structure
    (capability ``ordered``).
    """

    inner: Normalise
    causal = True

    @property
    def scale(self) -> float:  # type: ignore[override]
        return self.inner.scale

    @property
    def needs(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.inner.needs

    def name(self) -> str:
        return type(self).__name__ if type(self) is not Causal else f"Causal({self.inner.name()})"

    def lowers(self, *, causal: bool = False) -> bool:
        return self.inner.lowers(causal=True)

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        s = scores.structures
        name = self.name()
        if len(s) < 2 or s[-2].size != s[-1].size:
            raise StructureError(f"{name}: needs scores over (sequence, sequence) of equal size, got axes {s}")
        s[-1].require_order(name)
        n = s[-1].size
        future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
        return self.inner(scores.with_tensor(scores.tensor.masked_fill(future, float("-inf"))))

    def lower(
        self, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G], *, causal: bool = False
    ) -> Field[*I, G] | None:
        return self.inner.lower(queries, keys, values, causal=True)


class CausalSoftmax(Causal):
    """``Causal(ScaledSoftmax(scale))``: the decoder's scaled softmax with the future masked."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__(ScaledSoftmax(scale))


@dataclass(frozen=True)
class ReluAttention(Normalise):
    """``relu(scale * s) / counit (pure 1)``: ReLU attention divided by the sequence length."""

    scale: float = 1.0
    needs = ("ordered",)

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        f = _last(scores)
        t = f.fmap(torch.relu, scores.tensor * self.scale, -1)
        return scores.with_tensor(t / f.mass(t).unsqueeze(-1))


@dataclass(frozen=True)
class SoftplusAttention(Normalise):
    """``softplus(scale * s) / counit(softplus(scale * s))``: a positive, normalised alternative."""

    scale: float = 1.0

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        f = _last(scores)
        t = f.fmap(nnf.softplus, scores.tensor * self.scale, -1)
        return scores.with_tensor(t / f.counit(t, -1, scores.ring).unsqueeze(-1))


@dataclass(frozen=True)
class LinearAttention(Normalise):
    """``scale * s``: the scores used unnormalised, as a learned (signed) integral kernel.

    Attention becomes ``∫ s(x, t) v(t) dt`` over the keys' measure -- the kernel of
    a linear integral operator, which may be negative (softmax kernels are
    positive and integrate to one). Suits linear targets such as ``Δ⁻¹``.

    Its :meth:`~Normalise.lower` is associative: the fused route computes the Galerkin form
    ``scale · q (∫ k(t) v(t)ᵀ dt)`` (Cao 2021), two contractions whose cost is linear
    in the number of key positions, instead of the ``|I| x |F|`` scores.
    """

    scale: float = 1.0
    needs = ()

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return scores.with_tensor(scores.tensor * self.scale)

    def lower(
        self, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G], *, causal: bool = False
    ) -> Field[*I, G] | None:
        return None if causal else galerkin_lowering(self, queries, keys, values)

    def lowers(self, *, causal: bool = False) -> bool:
        return not causal  # the Galerkin form has no causal mask


def scaled_softmax(key_size: int) -> ScaledSoftmax:
    """The Transformer's softmax with scale ``1 / sqrt(key_size)``."""
    return ScaledSoftmax(1.0 / math.sqrt(key_size))


def attention(
    normalise: Normalise,
    queries: Field[*I, H],
    keys: Field[F, H],
    values: Field[F, G],
    *,
    fused: bool = True,
) -> Field[*I, G]:
    """Generalised cross-attention: ``normalise(queries · keys) · values``.

    Args:
        normalise: how scores become weights along the keys.
        queries: ``*I x H`` -- one query per output position.
        keys: ``F x H``.
        values: ``F x G``.
        fused: lower to ``scaled_dot_product_attention`` when the structures allow.

    Returns:
        ``*I x G``.
    """
    check_compatible("attention", queries, keys, values, names=("queries", "keys", "values"))
    join("attention", "the queries' features", queries.structures[-1], "the keys' features", keys.structures[1])
    join("attention", "the keys' positions", keys.structures[0], "the values' positions", values.structures[0])
    own = normalise.lower(queries, keys, values) if fused else None
    if own is not None:
        return own
    return generic_attention(normalise, queries, keys, values)


def generic_attention(
    normalise: Normalise, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
) -> Field[*I, G]:
    """The definition ``normalise(queries · keys) · values``, at each position of the queries' outer structures."""
    return _at_each_query(lambda q: _definition(normalise, q, keys, values), queries, values)


def _definition(normalise: Normalise, q: Field[*I, H], keys: Field[F, H], values: Field[F, G]) -> Tensor:
    return mul_mm(normalise(mul_mmt(keys, q)), values).tensor  # scores *I x F


def _at_each_query(
    attend: Callable[[Field[*I, H]], Tensor], queries: Field[*I, H], values: Field[F, G]
) -> Field[*I, G]:
    """``attend`` at each position of the queries' outer structures (``fmap`` over ``*I``): ``*I x G``."""

    def at(tq: Tensor) -> Tensor:
        return attend(Field.unchecked(tq, queries.axes, queries.ring))

    return _result(fmap_last(at, queries.tensor, queries.structures), queries, values)


def _result(out: Tensor, queries: Field[*I, H], values: Field[F, G]) -> Field[*I, G]:
    """An attention's output tensor as a field on the queries' outer structures and the values' features."""
    return cast("Field[*I, G]", Field.unchecked(out, (*queries.structures[:-1], values.structures[1]), queries.ring))


def _joined(q: Field[*I, H], k: Field[F, H], v: Field[F, G]) -> tuple[Structure, Structure, Tensor, Tensor, Tensor]:
    """The heads' structure ``h``, the keys' structure ``f``, and ``q``, ``k``, ``v`` refined onto them."""
    h = join("attention", "the queries' features", q.structures[-1], "the keys' features", k.structures[1])
    f = join("attention", "the keys' positions", k.structures[0], "the values' positions", v.structures[0])
    tq = _on(q.structures[-1], q.tensor, -1, h)
    tk = _on(k.structures[0], _on(k.structures[1], k.tensor, -1, h), -2, f)
    tv = _on(v.structures[0], v.tensor, -2, f)
    return h, f, tq, tk, tv


def sdpa_lowering(
    normalise: Normalise,
    queries: Field[*I, H],
    keys: Field[F, H],
    values: Field[F, G],
    *,
    causal: bool = False,
    flex: bool | None = None,
) -> Field[*I, G] | None:
    """A softmax ``normalise`` (``softmax(scale · s)``, ``causal`` or not) as ``scaled_dot_product_attention``.

    ``None`` over a ring without an order and ``exp``; at a position of the queries' outer
    structures where the kernel does not apply (causal with several query axes) the generic
    definition of ``normalise`` runs there. ``flex`` (``True``: compiled, ``False``: eager) runs
    ``flex_attention`` with a block mask instead (:func:`applicative.flex_softmax_attention`).
    """
    if not queries.ring.has("has_exp", "ordered"):
        return None
    if causal:
        join("attention", "the keys' positions", keys.structures[0], "the values' positions", values.structures[0])
        keys.structures[0].require_order("causal attention")

    def attend(q: Field[*I, H]) -> Tensor:
        lowered = _sdpa(normalise.scale, causal, q, keys, values, flex)
        return lowered if lowered is not None else _definition(normalise, q, keys, values)

    return _at_each_query(attend, queries, values)


def galerkin_lowering(normalise: Normalise, q: Field[*I, H], k: Field[F, H], v: Field[F, G]) -> Field[*I, G]:
    """``scale · q M_H (kᵀ M_F v)``: attention whose weights are linear in the scores, associated to the right.

    ``kᵀ M_F v`` (``H x G``) is one contraction over the keys' structure (its measure or metric,
    per example), then each query contracts with it over ``H``. Linear in ``q``, so it commutes with
    the ``fmap`` over the queries' outer structures and runs on their stored values directly.
    """
    h, f, tq, tk, tv = _joined(q, k, v)
    kv = f.contract(tk.transpose(-1, -2), tv, q.ring)  # (..., H, G)
    ni = len(q.axes) - 1
    lead = tq.shape[: tq.ndim - 1 - ni]
    flat = tq.reshape(*lead, -1, tq.shape[-1])  # (..., |I|, H): the queries' outer axes as rows
    out = h.contract(flat, kv, q.ring)  # (..., |I|, G)
    out = q.ring.mul(out.new_full((), normalise.scale), out) if normalise.scale != 1.0 else out
    out = out.reshape(*out.shape[:-2], *tq.shape[tq.ndim - 1 - ni : -1], out.shape[-1])
    return _result(out, q, v)


def cannot_lower(normalise: Normalise, ring: Ring) -> str | None:
    """Why attention with ``normalise`` over ``ring`` cannot run as one fused kernel (``None``: it can).

    Every structure lowers (its measure gives the bias, its metric the factor);
    what cannot is a normalisation whose :meth:`~Normalise.lowers` says no (it declares no
    :meth:`~Normalise.lower`, or not a causal one), or a ring without what it :attr:`~Normalise.needs`.
    """
    if not normalise.lowers():
        return f"{normalise.name()} declares no lowering (Normalise.lower, asked by Normalise.lowers)"
    missing = [c for c in normalise.needs if not getattr(ring, c)]
    if missing:
        return f"{normalise.name()} needs a ring with {' and '.join(missing)}, not {ring!r}"
    return None


def _sdpa(
    scale: float, causal: bool, q: Field[*I, H], k: Field[F, H], v: Field[F, G], flex: bool | None = None
) -> Tensor | None:
    """Run softmax attention as one fused kernel (the output tensor, ``*I x G``), or return ``None`` if it cannot.

    ``softmax(q M kᵀ) M v`` with ``M = L Lᵀ`` the heads' metric and ``w`` the keys'
    measure is ``sdpa(q L, k L, v, bias = log w)`` with keys and values at the
    keys' positions (:func:`applicative._kernels.lowered_keys`).
    """
    ni = len(q.axes) - 1
    if causal and ni != 1:
        return None
    h, f, tq, tk, tv = _joined(q, k, v)
    qf = kernels.factor(h, tq)
    kf, tv, log_w = kernels.lowered_keys(f, kernels.factor(h, tk), tv)
    i_shape = qf.shape[qf.ndim - 1 - ni : qf.ndim - 1]
    qf = qf.unsqueeze(-2) if ni == 0 else qf.flatten(qf.ndim - 1 - ni, qf.ndim - 2)  # (..., L, e)
    if not qf.shape[:-2] == kf.shape[:-2] == tv.shape[:-2]:
        batch = broadcast_shape(qf.shape[:-2], kf.shape[:-2], tv.shape[:-2])
        qf = qf.expand(*batch, *qf.shape[-2:])
        kf = kf.expand(*batch, *kf.shape[-2:])
        tv = tv.expand(*batch, *tv.shape[-2:])
    qf, kf, tv, log_w, lead = _one_batch_axis(qf, kf, tv, log_w)
    if flex is not None and flex_provides(qf, kf, tv, flex):  # the block-mask kernel (compiled when flex is True)
        out = flex_softmax_attention(qf, kf, tv, log_w, causal=causal, scale=scale, compiled=flex)
    elif log_w is None:
        out = nnf.scaled_dot_product_attention(qf, kf, tv, is_causal=causal, scale=scale)
    else:
        mask = log_w.unsqueeze(-2).to(qf.dtype)  # (..., 1, S) additive bias
        if causal:
            future = torch.ones(qf.shape[-2], kf.shape[-2], dtype=torch.bool, device=qf.device).triu(1)
            mask = mask.masked_fill(future, float("-inf"))
        out = nnf.scaled_dot_product_attention(qf, kf, tv, attn_mask=mask, scale=scale)
    out = out if lead is None else out.reshape(*lead, *out.shape[1:])
    return out.squeeze(-2) if ni == 0 else unflatten(out, -2, i_shape)  # *I x G


def _one_batch_axis(
    q: Tensor, k: Tensor, v: Tensor, log_w: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, tuple[int, ...] | None]:
    """``(N, H, L, E)`` from ``(*lead, H, L, E)`` with several ``lead`` axes (``lead``: ``None`` if already so).

    SDPA's CPU kernels take four dimensions; with more it runs its unfused math path (measured: 1.5 times
    the time, forward and backward, for the Darcy grid reader's ``(16, 33, 4, 20 | 33, 8)``). ``q``, ``k``,
    ``v`` share their batch shape; a per-example ``log_w`` (broadcasting to ``k``'s ``(*lead, H, S)``) is
    flattened with them.
    """
    lead = tuple(q.shape[:-3])
    if len(lead) < 2:
        return q, k, v, log_w, None
    q, k, v = (t.reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    if log_w is not None and log_w.ndim > 1:
        log_w = log_w.expand(*lead, *k.shape[-3:-1]).reshape(-1, *k.shape[-3:-1])
    return q, k, v, log_w, lead


def self_attention(
    normalise: Normalise,
    wq: Field[H, G],
    wk: Field[H, G],
    wv: Field[G, G],
    x: Field[F, G],
) -> Field[F, G]:
    """``attention normalise (x Qᵀ) (x Kᵀ) (x Vᵀ)`` -- the design source's ``runSelfAttention``."""
    return attention(normalise, mul_mmt(wq, x), mul_mmt(wk, x), mul_mmt(wv, x))
