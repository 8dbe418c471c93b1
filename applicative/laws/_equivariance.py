"""Laws of attention: equivariance under structure isomorphisms, and lowering = generic.

With ``φ : S -> T`` an isomorphism drawn by the arbitrary (a permutation of
vector positions; outcomes permuted with their probabilities; ...)::

    keys/values invariant   attention q (φ k) (φ v)    = attention q k v           keys, values : S x V
    queries equivariant     attention (φ q) k v        = φ (attention q k v)       queries : S x V
    heads invariant         attention (φ q) (φ k) v    = attention q k v           heads on S (φ preserves the metric)
    fused = generic         attention(fused=True)      = attention(fused=False)    S as key positions, S as heads
    lowering = generic      lowered(n, q, k, v)        = n(q · k) · v              each declared lowering n:
                            (Causal(ScaledSoftmax) on an ordered S; LinearAttention's Galerkin form)

All with the scaled softmax, over the real ring. Where the arbitrary knows no
isomorphism the equivariance laws do not apply and the report says so.
"""

from __future__ import annotations

from collections.abc import Callable

from .._attention import (
    Causal,
    FlexSoftmax,
    LinearAttention,
    Normalise,
    ScaledSoftmax,
    attention,
    cannot_lower,
    lowered,
)
from .._data import unsqueeze_batch
from .._field import Field
from ._arbitrary import Isomorphism
from ._law import AnyField, Case, Equation, Law, real_only

_SOFTMAX = ScaledSoftmax(0.5)


def _iso(case: Case) -> Isomorphism:
    iso = case.arb.isomorphism(case.s, case.draw)
    assert iso is not None
    case.note("isomorphism", iso.description)
    return iso


def _move(iso: Isomorphism, x: AnyField, axis: int) -> AnyField:
    """Apply ``iso`` along typed axis ``axis`` (counted from the end, e.g. ``-2``)."""
    axes = list(x.structures)
    assert axes[axis] == iso.source
    axes[axis] = iso.target
    return Field(iso.apply(x.tensor, axis), tuple(axes), x.ring)


def _kv(case: Case) -> Equation:
    h, g, m = case.vec(case.size("h")), case.vec(case.size("g")), case.vec(case.size("m"))
    q = case.value("queries", (m, h), None)
    k = case.value("keys", (case.s, h), None)
    v = case.value("values", (case.s, g))
    iso = _iso(case)
    return Equation(attention(_SOFTMAX, q, _move(iso, k, -2), _move(iso, v, -2)), attention(_SOFTMAX, q, k, v))


def _queries(case: Case) -> Equation:
    h, g, n = case.vec(case.size("h")), case.vec(case.size("g")), case.vec(case.size("n"))
    q = case.value("queries", (case.s, h), None)
    k = case.value("keys", (n, h), None)
    v = case.value("values", (n, g))
    iso = _iso(case)
    return Equation(attention(_SOFTMAX, _move(iso, q, -2), k, v), _move(iso, attention(_SOFTMAX, q, k, v), -2))


def _heads(case: Case) -> Equation:
    g, m, n = case.vec(case.size("g")), case.vec(case.size("m")), case.vec(case.size("n"))
    q = case.value("queries", (m, unsqueeze_batch(case.s, -1)), None)
    k = case.value("keys", (n, unsqueeze_batch(case.s, -1)), None)
    v = case.value("values", (n, g))
    iso = case.arb.isomorphism(unsqueeze_batch(case.s, -1), case.draw)
    assert iso is not None
    case.note("isomorphism", iso.description)
    return Equation(attention(_SOFTMAX, _move(iso, q, -1), _move(iso, k, -1), v), attention(_SOFTMAX, q, k, v))


def _fused_keys(case: Case) -> Equation:
    h, g, m = case.vec(case.size("h")), case.vec(case.size("g")), case.vec(case.size("m"))
    q = case.value("queries", (m, h), None)
    k = case.value("keys", (case.s, h), None)
    v = case.value("values", (case.s, g))
    return Equation(attention(_SOFTMAX, q, k, v, fused=True), attention(_SOFTMAX, q, k, v, fused=False))


def _fused_heads(case: Case) -> Equation:
    g, m, n = case.vec(case.size("g")), case.vec(case.size("m")), case.vec(case.size("n"))
    q = case.value("queries", (m, unsqueeze_batch(case.s, -1)), None)
    k = case.value("keys", (n, unsqueeze_batch(case.s, -1)), None)
    v = case.value("values", (n, g))
    return Equation(attention(_SOFTMAX, q, k, v, fused=True), attention(_SOFTMAX, q, k, v, fused=False))


def _lowers(case: Case) -> str | None:
    """The one reason attention does not lower (:func:`applicative.cannot_lower`), or ``None``."""
    return cannot_lower(_SOFTMAX, case.ring)


def _has_iso(case: Case) -> str | None:
    if (why := real_only(case)) is not None:
        return why
    if case.arb.isomorphism(case.s, case.draw) is None:
        return f"{case.arb!r} declares no isomorphisms of {case.s!r} (permutations make no sense there)"
    return None


def _lowering(normalise: Normalise, queries_on_s: bool) -> Callable[[Case], Equation]:
    def build(case: Case) -> Equation:
        h, g, m = case.vec(case.size("h")), case.vec(case.size("g")), case.vec(case.size("m"))
        q = case.value("queries", (case.s if queries_on_s else m, h), None)
        k = case.value("keys", (case.s, h), None)
        v = case.value("values", (case.s, g))
        fused = lowered(normalise, q, k, v)
        assert fused is not None, f"{normalise!r} declares a lowering but gave none"
        return Equation(fused, attention(normalise, q, k, v, fused=False))

    return build


def _lowers_causal(case: Case) -> str | None:
    if (why := _lowers(case)) is not None:
        return why
    return None if case.s.ordered else f"{case.s!r} is not ordered (no causal mask)"


ATTENTION_LAWS = (
    Law("Attention", "keys/values invariant", "attention q (φ k) (φ v) = attention q k v", _kv, _has_iso),
    Law("Attention", "queries equivariant", "attention (φ q) k v = φ (attention q k v)", _queries, _has_iso),
    Law("Attention", "heads invariant", "attention (φ q) (φ k) v = attention q k v, heads on S", _heads, _has_iso),
    Law(
        "Attention",
        "fused = generic (S keys)",
        "attention(fused) = attention(generic), keys on S",
        _fused_keys,
        _lowers,
    ),
    Law(
        "Attention",
        "fused = generic (S heads)",
        "attention(fused) = attention(generic), heads on S",
        _fused_heads,
        _lowers,
    ),
    Law(
        "Attention",
        "causal lowering = generic",
        "lowered(Causal(softmax), q, k, v) = Causal(softmax)(q · k) · v, queries and keys on S",
        _lowering(Causal(_SOFTMAX), True),
        _lowers_causal,
    ),
    Law(
        "Attention",
        "Galerkin lowering = generic",
        "lowered(LinearAttention, q, k, v) = scale (q · k) · v, keys on S",
        _lowering(LinearAttention(0.5), False),
        real_only,
    ),
)


# flex_attention (eager reference: the same mask and score modifications the compiled kernel runs)
_FLEX = FlexSoftmax(0.5, compiled=False)

FLEX_LAWS = (
    Law(
        "Attention",
        "flex lowering = generic",
        "lowered(FlexSoftmax, q, k, v) = softmax(q · k) · v, keys on S (block mask from log w)",
        _lowering(_FLEX, False),
        real_only,
    ),
    Law(
        "Attention",
        "causal flex lowering = generic",
        "lowered(Causal(FlexSoftmax), q, k, v) = Causal(softmax)(q · k) · v, queries and keys on S",
        _lowering(Causal(_FLEX), True),
        _lowers_causal,
    ),
)
