"""Attention's lowerings: one fused kernel for the whole of ``normalise(q · k) · v``, from the contract alone.

A normalisation declares which lowering computes it (:attr:`~applicative.Normalise.lowering`, a
:class:`Lowering`); :func:`applicative.attention` runs it, or the generic definition where there is none. A
lowering sees the scores' ``scale``, whether the future is hidden (``causal``) and the three fields -- never the
normalisation itself, so it cannot fall back into a definition: where it does not apply it returns ``None`` and
:func:`~applicative.attention` runs the definition, in one place.

* :data:`SDPA` -- a softmax: every structure lowers. The heads' structure ``H`` contracts with a metric
  ``M = L Lᵀ`` (``diag(w)`` at its positions, or the Gram matrix of its basis) and the keys' structure has a
  measure ``w`` at its positions (a structure stored in another basis is sampled at the quadrature points of
  its product grid), so ``softmax(q M kᵀ) M v`` is one :func:`torch.nn.functional.scaled_dot_product_attention`
  call on ``q L``, ``k L`` and ``v`` with additive bias ``log w``.
* :data:`FLEX`, :data:`FLEX_EAGER` -- the same softmax through ``flex_attention`` with a block mask (compiled, or
  flex's eager reference), where torch provides the kernel; dense SDPA elsewhere.
* :data:`GALERKIN` -- a linear normalisation ``scale · s`` associated to the right (Cao 2021):
  ``scale · q M_H (kᵀ M_F v)``, linear in the number of key positions; not causal.

A user's normalisation declares its own (``instances.EdgeSoftmax``: an edge-list kernel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, TypeVarTuple, cast

import torch
import torch.nn.functional as nnf
from torch import Tensor

from . import _kernels as kernels
from ._algebra import _on, fmap_last, join
from ._field import Field
from ._flex import flex_provides, flex_softmax_attention
from ._ring import Capability
from ._structure import Structure
from ._tensor import broadcast_shape, unflatten

F = TypeVar("F", bound=Structure)
G = TypeVar("G", bound=Structure)
H = TypeVar("H", bound=Structure)
I = TypeVarTuple("I")


class Kernel(Protocol):
    """A lowering's kernel: ``*I x G`` from the scores' scale, ``causal``, and the queries ``*I x H``, keys
    ``F x H`` and values ``F x G``; ``None`` where it does not apply (the generic definition runs there)."""

    def __call__(
        self, scale: float, causal: bool, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
    ) -> Field[*I, G] | None: ...


@dataclass(frozen=True)
class Lowering:
    """How attention with a normalisation runs as one kernel: a value a normalisation declares.

    Attributes:
        name: how errors and laws name it.
        kernel: the kernel (``Kernel``); it must equal the normalisation's generic definition (the law
            checker checks each declared lowering against it).
        causal: the kernel also computes the causal form (keys after the query hidden).
        needs: what it needs of the ring (:class:`~applicative.Capability`).
    """

    name: str
    kernel: Kernel
    causal: bool
    needs: Capability = Capability.SOFTMAX


def at_each_query(attend: Callable[[Field[*I, H]], Tensor], queries: Field[*I, H], values: Field[F, G]) -> Field[*I, G]:
    """``attend`` at each position of the queries' outer structures (``fmap`` over ``*I``): ``*I x G``."""

    def at(tq: Tensor) -> Tensor:
        return attend(Field.unchecked(tq, queries.axes, queries.ring))

    return result(fmap_last(at, queries.tensor, queries.structures), queries, values)


def result(out: Tensor, queries: Field[*I, H], values: Field[F, G]) -> Field[*I, G]:
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
    scale: float,
    queries: Field[*I, H],
    keys: Field[F, H],
    values: Field[F, G],
    *,
    causal: bool = False,
    flex: bool | None = None,
) -> Field[*I, G] | None:
    """``softmax(scale · s)`` attention (``causal`` or not) as ``scaled_dot_product_attention``.

    ``None`` where the kernel does not apply: causal with several query axes. ``flex`` (``True``: compiled,
    ``False``: eager) runs ``flex_attention`` with a block mask instead (:func:`applicative.flex_softmax_attention`)
    where torch provides it.
    """
    if causal and len(queries.axes) != 2:
        return None
    return at_each_query(lambda q: _sdpa(scale, causal, q, keys, values, flex), queries, values)


def galerkin_lowering(scale: float, q: Field[*I, H], k: Field[F, H], v: Field[F, G]) -> Field[*I, G]:
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
    out = q.ring.mul(out.new_full((), scale), out) if scale != 1.0 else out
    out = out.reshape(*out.shape[:-2], *tq.shape[tq.ndim - 1 - ni : -1], out.shape[-1])
    return result(out, q, v)


def _sdpa(scale: float, causal: bool, q: Field[*I, H], k: Field[F, H], v: Field[F, G], flex: bool | None) -> Tensor:
    """Softmax attention as one fused kernel: the output tensor, ``*I x G``.

    ``softmax(q M kᵀ) M v`` with ``M = L Lᵀ`` the heads' metric and ``w`` the keys'
    measure is ``sdpa(q L, k L, v, bias = log w)`` with keys and values at the
    keys' positions (:func:`applicative._kernels.lowered_keys`).
    """
    ni = len(q.axes) - 1
    h, f, tq, tk, tv = _joined(q, k, v)
    qf = kernels.factor(h, tq)
    kf, tv, log_w = kernels.lowered_keys(f, kernels.factor(h, tk), tv)
    if log_w is not None and _uniform(log_w):
        log_w = None  # softmax(s + c) = softmax(s): an equal weight at every key (a Fourier series' points) is no bias
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
        out = fused_attention(qf, kf, tv, is_causal=causal, scale=scale)
    else:
        mask = log_w.unsqueeze(-2).to(qf.dtype)  # (..., 1, S) additive bias
        if causal:
            future = torch.ones(qf.shape[-2], kf.shape[-2], dtype=torch.bool, device=qf.device).triu(1)
            mask = mask.masked_fill(future, float("-inf"))
        out = fused_attention(qf, kf, tv, attn_mask=mask, scale=scale)
    out = out if lead is None else out.reshape(*lead, *out.shape[1:])
    return out.squeeze(-2) if ni == 0 else unflatten(out, -2, i_shape)  # *I x G


#: scores per head (queries times keys) up to which the CPU attention without a mask runs as three products by hand
SMALL_SCORES = 128 * 128


def _uniform(log_w: Tensor) -> bool:
    """Whether ``log w`` is one finite value at every key, for every example: tested on the CPU only, where it
    costs no device sync (an accelerator keeps the bias), and not while compiling (a value is no graph's guard)."""
    if log_w.device.type != "cpu" or log_w.numel() == 0 or torch.compiler.is_compiling():
        return False
    first = log_w.reshape(-1)[0]
    return bool(torch.isfinite(first)) and bool((log_w == first).all())


def fused_attention(
    q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None, *, is_causal: bool = False, scale: float
) -> Tensor:
    """``softmax(scale · q kᵀ + attn_mask) v`` as one kernel: ``scaled_dot_product_attention``'s arguments and result,
    ``(N, H, L, E)``, ``(N, H, S, E)``, ``(N, H, S, G)`` -> ``(N, H, L, G)``.

    torch's fused kernel, except on the CPU where its unfused math path would run: there the three products by hand
    (:func:`product`, each in its faster orientation).
    That path runs with a float mask (no row of it all ``-inf``), and without one where the keys' and values' sizes
    differ (``E != G``, the Funcformer's window features); its "safe" softmax adds a test for rows that are all
    ``-inf`` and a select to zero them, forward and backward: 30% of the attention's time at the Funcformer's
    ``(80, 33 | 65, 9)``. Without a mask the products by hand are used up to :data:`SMALL_SCORES` scores per head,
    where torch's blocked kernel gains nothing. Where a row is all ``-inf`` (every key padding), on an accelerator,
    causal, and while compiling, the fused kernel.
    """
    if (
        is_causal
        or q.device.type != "cpu"
        or torch.compiler.is_compiling()
        or (attn_mask is None and q.shape[-2] * k.shape[-2] > SMALL_SCORES)
        or (attn_mask is not None and bool(torch.isneginf(attn_mask).all(-1).any()))
    ):
        return nnf.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
    s = product(q * scale, k.transpose(-1, -2))  # the scale on the queries: fewer numbers than the scores
    scores = s if attn_mask is None else s + attn_mask
    return product(torch.softmax(scores, -1), v)


def _oriented(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``, as ``(bᵀ aᵀ)ᵀ`` where the result has fewer columns than rows."""
    if b.shape[-1] < a.shape[-2]:
        return torch.matmul(b.mT, a.mT).mT
    return torch.matmul(a, b)


class _Product(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a: Tensor, b: Tensor) -> Tensor:
        return _oriented(a, b)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor, Tensor], output: Tensor) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        da = product(grad, b.mT) if ctx.needs_input_grad[0] else None
        db = product(a.mT, grad) if ctx.needs_input_grad[1] else None
        return da, db


def product(a: Tensor, b: Tensor) -> Tensor:
    """The batched product ``a @ b`` (``(..., m, k) @ (..., k, n)``), and each product of its gradients, taken as
    ``(bᵀ aᵀ)ᵀ`` where the result has fewer columns than rows (``n < m``).

    The CPU's batched product of many small matrices runs 3–4 times slower when the result's rows are the longer
    axis: at the Funcformer's attention, ``(80, 33, 65) @ (80, 65, 7)`` took 170 µs and ``((80, 7, 65) @ (80, 65,
    33))ᵀ`` 60 µs (one thread). The same function; the rounding may differ in the last place.
    """
    out: Tensor = _Product.apply(a, b)  # type: ignore[no-untyped-call]
    return out


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


@dataclass(frozen=True)
class _Softmax:
    flex: bool | None

    def __call__(
        self, scale: float, causal: bool, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
    ) -> Field[*I, G] | None:
        return sdpa_lowering(scale, queries, keys, values, causal=causal, flex=self.flex)


def _galerkin(
    scale: float, causal: bool, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
) -> Field[*I, G] | None:
    return None if causal else galerkin_lowering(scale, queries, keys, values)


#: a softmax as one ``scaled_dot_product_attention`` call (causal too)
SDPA = Lowering("sdpa", _Softmax(None), causal=True)
#: a softmax through compiled ``flex_attention`` with a block mask, where torch provides it (causal too)
FLEX = Lowering("flex", _Softmax(True), causal=True)
#: :data:`FLEX` with flex's eager reference (for tests: no compile time)
FLEX_EAGER = Lowering("flex (eager)", _Softmax(False), causal=True)
#: a linear normalisation, associated to the right; no causal form
GALERKIN = Lowering("galerkin", _galerkin, causal=False, needs=Capability(0))
