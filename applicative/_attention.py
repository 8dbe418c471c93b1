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

Each declares the one kernel that computes it (:attr:`Normalise.lowering`, a value of
:mod:`applicative._lowering`); :func:`attention` runs that kernel where it applies and the generic
definition otherwise, and :func:`cannot_lower` says why not, in one place.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import TypeVar, TypeVarTuple

import torch
import torch.nn.functional as nnf
from torch import Tensor

from . import _kernels as kernels
from ._algebra import join, mul_mm, mul_mmt
from ._errors import StructureError
from ._field import Field, check_compatible
from ._inputs import clear_padding
from ._lowering import FLEX, FLEX_EAGER, GALERKIN, SDPA, Lowering, at_each_query
from ._ring import Capability, Ring
from ._structure import Structure, require_order

F = TypeVar("F", bound=Structure)
G = TypeVar("G", bound=Structure)
H = TypeVar("H", bound=Structure)
I = TypeVarTuple("I")


class Normalise(abc.ABC):
    """A normalisation of attention scores along their last axis (the keys' structure).

    Besides its generic definition (``__call__``) a normalisation declares its capabilities,
    which generic code asks instead of testing classes (the law checker checks them):

    * :attr:`lowering` -- the one kernel that computes the whole attention (``None``: none), a
      :class:`~applicative._lowering.Lowering`;
    * :attr:`needs` -- what its definition needs of the ring (a :class:`~applicative.Capability`);
    * :attr:`causal` -- whether key position ``j`` is hidden from query position ``i < j``
      (then the keys' structure needs an order, capability ``ordered``).
    """

    #: multiplies the scores first (``1/sqrt(d_k)`` for scaled dot-product attention)
    scale: float
    #: the ring capabilities the definition needs (a softmax: an order and ``exp``)
    needs: Capability = Capability.SOFTMAX
    #: key position ``j`` is hidden from query position ``i < j``
    causal: bool = False

    @abc.abstractmethod
    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        """The generic definition, on the scores ``*I x F``."""

    @property
    def lowering(self) -> Lowering | None:
        """The kernel that computes the whole attention and equals the generic definition (``None``: none).

        A softmax declares :data:`~applicative._lowering.SDPA` (one ``scaled_dot_product_attention`` call), a
        linear normalisation :data:`~applicative._lowering.GALERKIN`, a sparse mask its own
        (``instances.EdgeSoftmax``: an edge-list kernel).
        """
        return None

    def name(self) -> str:
        """How errors name this normalisation (its class; ``Causal(Inner)`` for a causal wrapper)."""
        return type(self).__name__

    def check_ring(self, ring: Ring, op: str) -> None:
        """Raise :class:`StructureError` naming ``op`` unless ``ring`` has what this normalisation :attr:`needs`."""
        ring.require(op, type(self).__name__, self.needs)


def _last(scores: Field[*I, F]) -> Structure:
    return scores.structures[-1]


@dataclass(frozen=True)
class ScaledSoftmax(Normalise):
    """``softmax(scale * s)`` along the keys, against their measure."""

    scale: float = 1.0

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return scores.with_tensor(kernels.softmax(_last(scores), scores.tensor * self.scale, -1))

    @property
    def lowering(self) -> Lowering | None:
        return SDPA


@dataclass(frozen=True)
class FlexSoftmax(ScaledSoftmax):
    """:class:`ScaledSoftmax` lowered through ``flex_attention``: masked key blocks are skipped, not computed.

    For keys whose measure hides positions (``Padded``, trees, ragged batches) and for
    ``Causal(FlexSoftmax(c))``; see ``applicative._flex`` for when it beats dense SDPA.
    ``compiled=False`` runs flex's eager reference (for tests: no compile time). Where torch
    does not provide the kernel (on CPU: compiled ``float64``, or a backward) it lowers to dense SDPA.
    """

    compiled: bool = True

    @property
    def lowering(self) -> Lowering | None:
        return FLEX if self.compiled else FLEX_EAGER


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
    def needs(self) -> Capability:  # type: ignore[override]
        return self.inner.needs

    @property
    def lowering(self) -> Lowering | None:
        """The inner normalisation's lowering, if it computes the causal form too."""
        inner = self.inner.lowering
        return inner if inner is not None and inner.causal else None

    def name(self) -> str:
        return type(self).__name__ if type(self) is not Causal else f"Causal({self.inner.name()})"

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        s = scores.structures
        name = self.name()
        if len(s) < 2 or s[-2].size != s[-1].size:
            raise StructureError(f"{name}: needs scores over (sequence, sequence) of equal size, got axes {s}")
        require_order(s[-1], name)
        n = s[-1].size
        future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
        return self.inner(scores.with_tensor(scores.tensor.masked_fill(future, float("-inf"))))


class CausalSoftmax(Causal):
    """``Causal(ScaledSoftmax(scale))``: the decoder's scaled softmax with the future masked."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__(ScaledSoftmax(scale))


@dataclass(frozen=True)
class ReluAttention(Normalise):
    """``relu(scale * s) / counit (pure 1)``: ReLU attention divided by the sequence length."""

    scale: float = 1.0
    needs = Capability.ORDERED

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        f = _last(scores)
        t = f.fmap(torch.relu, scores.tensor * self.scale, -1)
        return scores.with_tensor(t / kernels.mass(f, t).unsqueeze(-1))


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

    Its lowering is associative: the fused route computes the Galerkin form
    ``scale · q (∫ k(t) v(t)ᵀ dt)`` (Cao 2021), two contractions whose cost is linear
    in the number of key positions, instead of the ``|I| x |F|`` scores.
    """

    scale: float = 1.0
    needs = Capability(0)

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return scores.with_tensor(scores.tensor * self.scale)

    @property
    def lowering(self) -> Lowering | None:
        return GALERKIN  # no causal form: Causal(LinearAttention) has none


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
        fused: run the normalisation's declared lowering where it applies (:func:`lowered`).

    Returns:
        ``*I x G``.

    Keys and values at positions of weight zero (padding) are selected out first
    (:func:`~applicative.clear_padding`): whatever they hold, no output and no gradient reads them. A query at
    padding is attended with like any other (as in PyTorch): its output is meaningless, and finite as long as
    the query is (a model clears its input's padding).
    """
    check_compatible("attention", queries, keys, values, names=("queries", "keys", "values"))
    join("attention", "the queries' features", queries.structures[-1], "the keys' features", keys.structures[1])
    join("attention", "the keys' positions", keys.structures[0], "the values' positions", values.structures[0])
    keys, values = clear_padding(keys), clear_padding(values)
    own = lowered(normalise, queries, keys, values) if fused else None
    return own if own is not None else generic_attention(normalise, queries, keys, values)


def lowered(normalise: Normalise, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]) -> Field[*I, G] | None:
    """Attention by ``normalise``'s declared :attr:`~Normalise.lowering` (``None`` where it has none that applies:
    no lowering, no causal form, a ring without what it needs, or a kernel that declines these fields)."""
    lowering = normalise.lowering
    if lowering is None or (normalise.causal and not lowering.causal) or not queries.ring.has(lowering.needs):
        return None
    if normalise.causal:
        require_order(keys.structures[0], "causal attention")
    return lowering.kernel(normalise.scale, normalise.causal, queries, keys, values)


def generic_attention(
    normalise: Normalise, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
) -> Field[*I, G]:
    """The definition ``normalise(queries · keys) · values``, at each position of the queries' outer structures."""

    def definition(q: Field[*I, H]) -> Tensor:
        return mul_mm(normalise(mul_mmt(keys, q)), values).tensor  # scores *I x F

    return at_each_query(definition, queries, values)


def cannot_lower(normalise: Normalise, ring: Ring) -> str | None:
    """Why attention with ``normalise`` over ``ring`` cannot run as one fused kernel (``None``: it can).

    Every structure lowers (its measure gives the bias, its metric the factor); what cannot is a
    normalisation that declares no :attr:`~Normalise.lowering` (or none with a causal form), or a ring
    without what the lowering :attr:`~applicative._lowering.Lowering.needs`.
    """
    lowering = normalise.lowering
    if lowering is None:
        return f"{normalise.name()} declares no lowering (Normalise.lowering)"
    missing = lowering.needs & ~ring.capabilities
    if missing:
        return f"{normalise.name()} needs a ring with {missing.words()}, not {ring!r}"
    return None


def self_attention(
    normalise: Normalise,
    wq: Field[H, G],
    wk: Field[H, G],
    wv: Field[G, G],
    x: Field[F, G],
) -> Field[F, G]:
    """``attention normalise (x Qᵀ) (x Kᵀ) (x Vᵀ)`` -- the design source's ``runSelfAttention``."""
    return attention(normalise, mul_mmt(wq, x), mul_mmt(wk, x), mul_mmt(wv, x))
