"""Vector instances of the generic Transformer equal PyTorch's own layers (float64, weights shared).

Every model here is loaded from a PyTorch module's ``state_dict`` and compared
with that module's output (and gradients); generic attention is compared with
``torch.nn.functional.scaled_dot_product_attention`` and with direct formulas.
Observed relative errors are recorded with ``record_property`` (``--junitxml``)
and printed (``pytest -s``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
import torch
import torch.nn.functional as nnf
from torch import Tensor, nn

from applicative import (
    CausalSoftmax,
    Field,
    Normalise,
    ReluAttention,
    ScaledSoftmax,
    SoftplusAttention,
    StructureError,
    _lowering,
    attention,
)
from instances import Vector
from models import DecoderLayer, EncoderLayer, Transformer, encoder

F64 = torch.float64
TOL = 1e-6


class Seq(Vector):
    size = 7


class Mem(Vector):
    size = 5


class Model(Vector):
    size = 16


class Hidden(Vector):
    size = 24


class Feat(Vector):
    size = 6


def rel_err(got: Tensor, ref: Tensor) -> float:
    """``max |got - ref| / max |ref|``."""
    return float((got - ref).abs().max().detach() / ref.abs().max().detach())


Record = Callable[[str, object], None]


def check(record: Record, name: str, got: Tensor, ref: Tensor) -> float:
    assert got.shape == ref.shape
    err = rel_err(got, ref)
    record(name, err)
    print(f"{name}: max relative error {err:.3e}")
    assert err <= TOL, f"{name}: relative error {err:.3e} > {TOL}"
    return err


def causal_mask(n: int) -> Tensor:
    return nn.Transformer.generate_square_subsequent_mask(n, dtype=F64)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# ---- single layers ------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_encoder_layer(record_property: Record, norm_first: bool, heads: int, causal: bool) -> None:
    ref = nn.TransformerEncoderLayer(16, heads, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64)
    normalise = CausalSoftmax(1 / math.sqrt(16 // heads)) if causal else None
    gen = EncoderLayer(Model(), Hidden(), heads, normalise=normalise, norm_first=norm_first, dtype=F64)
    gen.load_state_dict(ref.state_dict())
    x = torch.randn(3, 7, 16, dtype=F64)
    want = ref(x, src_mask=causal_mask(7), is_causal=True) if causal else ref(x)
    if causal:  # the mask must matter, or this test could not fail
        assert rel_err(want, ref(x)) > 1e-3
    got = gen(Field(x, (Seq(), Model())))
    assert got.structures == (Seq(), Model())
    check(record_property, f"encoder_layer[nf={norm_first},h={heads},causal={causal}]", got.tensor, want)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_without_norms(record_property: Record, norm_first: bool) -> None:
    """``norms=False``: PyTorch's layer with both norms replaced by the identity (``x + f(x)`` per block)."""
    ref = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64)
    ref.norm1, ref.norm2 = nn.Identity(), nn.Identity()  # type: ignore[assignment]
    gen = EncoderLayer(Model(), Hidden(), 4, norm_first=norm_first, norms=False, dtype=F64)
    assert not any("norm" in name for name, _ in gen.named_parameters())
    gen.load_state_dict(ref.state_dict())
    x = torch.randn(3, 7, 16, dtype=F64)
    with_norms = EncoderLayer(Model(), Hidden(), 4, norm_first=norm_first, dtype=F64)
    with_norms.load_state_dict(gen.state_dict(), strict=False)  # the same weights, unit norms: must differ
    want, got = ref(x), gen(Field(x, (Seq(), Model()))).tensor
    assert rel_err(with_norms(Field(x, (Seq(), Model()))).tensor, want) > 1e-2
    check(record_property, f"encoder_layer[no norms, nf={norm_first}]", got, want)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_decoder_layer(record_property: Record, norm_first: bool, heads: int, causal: bool) -> None:
    ref = nn.TransformerDecoderLayer(16, heads, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64)
    normalise = None if causal else ScaledSoftmax(1 / math.sqrt(16 // heads))
    gen = DecoderLayer(Model(), Hidden(), heads, normalise=normalise, norm_first=norm_first, dtype=F64)
    gen.load_state_dict(ref.state_dict())
    x, m = torch.randn(3, 7, 16, dtype=F64), torch.randn(3, 5, 16, dtype=F64)
    want = ref(x, m, tgt_mask=causal_mask(7), tgt_is_causal=True) if causal else ref(x, m)
    if causal:
        assert rel_err(want, ref(x, m)) > 1e-3
    got = gen(Field(x, (Seq(), Model())), Field(m, (Mem(), Model())))
    assert got.structures == (Seq(), Model())
    check(record_property, f"decoder_layer[nf={norm_first},h={heads},causal={causal}]", got.tensor, want)


def test_decoder_layer_unbatched_and_broadcast_memory(record_property: Record) -> None:
    """One memory (no batch axis) shared by a batch of targets."""
    ref = nn.TransformerDecoderLayer(16, 2, 24, dropout=0.0, batch_first=True, dtype=F64)
    gen = DecoderLayer(Model(), Hidden(), 2, dtype=F64)
    gen.load_state_dict(ref.state_dict())
    x, m = torch.randn(3, 7, 16, dtype=F64), torch.randn(5, 16, dtype=F64)
    want = ref(x, m.expand(3, 5, 16), tgt_mask=causal_mask(7), tgt_is_causal=True)
    got = gen(Field(x, (Seq(), Model())), Field(m, (Mem(), Model())))
    check(record_property, "decoder_layer[broadcast memory]", got.tensor, want)


# ---- a full stack, forward and backward ---------------------------------------------------


class TorchReference(nn.Module):
    """``unembed . norm . TransformerEncoder . embed`` from PyTorch modules."""

    def __init__(self, depth: int, heads: int, norm_first: bool) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            16, heads, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64
        )
        self.embed = nn.Linear(6, 16, bias=False, dtype=F64)
        self.encoder = nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(16, dtype=F64), enable_nested_tensor=False)
        self.unembed = nn.Linear(16, 6, bias=False, dtype=F64)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        return self.unembed(self.encoder(self.embed(x), mask=mask, is_causal=mask is not None))  # type: ignore[no-any-return]


def load_stack(gen: Transformer[Feat, Model], ref: TorchReference) -> None:
    sd = {k.removeprefix("encoder."): v for k, v in ref.state_dict().items()}
    missing, unexpected = gen.load_state_dict(sd, strict=True)
    assert not missing and not unexpected


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_encoder_stack_forward_backward(record_property: Record, norm_first: bool, causal: bool) -> None:
    depth, heads = 3, 4
    ref = TorchReference(depth, heads, norm_first)
    normalise = CausalSoftmax(1 / math.sqrt(16 // heads)) if causal else None
    gen = encoder(Feat(), Model(), Hidden(), heads, depth, norm_first=norm_first, normalise=normalise, dtype=F64)
    load_stack(gen, ref)
    x = torch.randn(2, 7, 6, dtype=F64)
    xr, xg = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = ref(xr, causal_mask(7) if causal else None)
    got = gen(Field(xg, (Seq(), Feat())))
    tag = f"encoder_stack[nf={norm_first},causal={causal}]"
    check(record_property, tag, got.tensor, want)

    cot = torch.randn_like(want)
    (want * cot).sum().backward()
    (got.tensor * cot).sum().backward()
    check(record_property, tag + " d/dx", xg.grad, xr.grad)  # type: ignore[arg-type]
    grads_ref = {k.removeprefix("encoder."): p.grad for k, p in ref.named_parameters()}
    worst = 0.0
    for k, p in gen.named_parameters():
        g_ref = grads_ref[k]
        assert p.grad is not None and g_ref is not None, k
        worst = max(worst, rel_err(p.grad, g_ref))
        assert rel_err(p.grad, g_ref) <= TOL, k
    record_property(tag + " d/dparams", worst)
    print(f"{tag} d/dparams: max relative error {worst:.3e}")


# ---- attention --------------------------------------------------------------------------


class Key(Vector):
    size = 8


@contextmanager
def _sdpa_spy() -> Iterator[mock.MagicMock]:
    """Count calls to the fused softmax kernel, :func:`applicative._lowering.fused_attention` (``torch``'s
    ``scaled_dot_product_attention`` or its CPU equivalent by hand; still computing them)."""
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        yield spy


class Val(Vector):
    size = 5


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_vs_sdpa(record_property: Record, fused: bool, causal: bool) -> None:
    scale = 0.37
    q = torch.randn(2, 3, 7, 8, dtype=F64)  # batch (2, 3), queries Seq x Key
    k = torch.randn(3, 7, 8, dtype=F64)  # batch (3,) broadcasts against (2, 3)
    v = torch.randn(2, 3, 7, 5, dtype=F64)
    norm: Normalise = CausalSoftmax(scale) if causal else ScaledSoftmax(scale)
    with _sdpa_spy() as sdpa:
        got = attention(norm, Field(q, (Seq(), Key())), Field(k, (Seq(), Key())), Field(v, (Seq(), Val())), fused=fused)
    assert sdpa.call_count == int(fused)  # a softmax lowers to one fused kernel exactly when asked to
    want = nnf.scaled_dot_product_attention(q, k.expand(2, 3, 7, 8), v, is_causal=causal, scale=scale)
    assert got.structures == (Seq(), Val())
    check(record_property, f"attention[fused={fused},causal={causal}] vs sdpa", got.tensor, want)


class Weighted(Vector):
    """Six positions with unequal weights: the softmax's bias is ``log w``."""

    size = 6

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return torch.linspace(0.2, 1.2, self.size, dtype=dtype, device=device).log()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_over_several_batch_axes_calls_sdpa_on_four_dimensions(record_property: Record, causal: bool) -> None:
    """Batch ``(2, 3, 4)``: one SDPA call on ``(6, 4, n, e)`` (SDPA's CPU kernels take four dimensions; with more
    it runs its unfused math path), equal to the generic definition, with the keys' measure as the bias."""
    q = torch.randn(2, 3, 4, 6, 8, dtype=F64)
    k, v = torch.randn(3, 1, 6, 8, dtype=F64), torch.randn(2, 3, 4, 6, 5, dtype=F64)
    norm: Normalise = CausalSoftmax(0.4) if causal else ScaledSoftmax(0.4)
    args = (norm, Field(q, (Weighted(), Key())), Field(k, (Weighted(), Key())), Field(v, (Weighted(), Val())))
    with _sdpa_spy() as sdpa:
        got = attention(*args)
    assert sdpa.call_count == 1
    assert sdpa.call_args.args[0].shape == (6, 4, 6, 8)
    want = attention(*args, fused=False)
    check(record_property, f"attention[batch (2, 3, 4), causal={causal}] vs generic", got.tensor, want.tensor)


@pytest.mark.parametrize("fused", [False, True])
def test_cross_attention_multiple_query_axes(record_property: Record, fused: bool) -> None:
    """Queries with two typed axes ``Seq x Mem x H`` attend to keys over ``Mem``."""
    q = torch.randn(2, 7, 5, 8, dtype=F64)
    k, v = torch.randn(2, 5, 8, dtype=F64), torch.randn(2, 5, 6, dtype=F64)
    with _sdpa_spy() as sdpa:
        got = attention(
            ScaledSoftmax(0.5),
            Field(q, (Seq(), Mem(), Key())),
            Field(k, (Mem(), Key())),
            Field(v, (Mem(), Feat())),
            fused=fused,
        )
    assert sdpa.call_count == int(fused)
    want = nnf.scaled_dot_product_attention(q.flatten(1, 2), k, v, scale=0.5).unflatten(1, (7, 5))
    assert got.structures == (Seq(), Mem(), Feat())
    check(record_property, f"attention[2 query axes, fused={fused}]", got.tensor, want)


@pytest.mark.parametrize(
    ("norm", "formula"),
    [
        (ReluAttention(0.3), lambda s: torch.relu(0.3 * s) / s.shape[-1]),
        (SoftplusAttention(0.3), lambda s: nnf.softplus(0.3 * s) / nnf.softplus(0.3 * s).sum(-1, keepdim=True)),
    ],
    ids=["relu", "softplus"],
)
def test_other_normalisations(record_property: Record, norm: Normalise, formula: Callable[[Tensor], Tensor]) -> None:
    """Not a softmax: nothing lowers to SDPA, so ``fused`` makes no difference at all."""
    q, k, v = torch.randn(4, 7, 8, dtype=F64), torch.randn(4, 5, 8, dtype=F64), torch.randn(4, 5, 6, dtype=F64)
    out = {}
    for fused in (False, True):
        with _sdpa_spy() as sdpa:
            out[fused] = attention(
                norm, Field(q, (Seq(), Key())), Field(k, (Mem(), Key())), Field(v, (Mem(), Feat())), fused=fused
            ).tensor
        assert sdpa.call_count == 0, f"{type(norm).__name__} called scaled_dot_product_attention (fused={fused})"
    assert torch.equal(out[True], out[False])  # one code path: bit-for-bit the same
    scores = torch.einsum("bih,bfh->bif", q, k)
    want = torch.einsum("bif,bfg->big", formula(scores), v)
    check(record_property, f"{type(norm).__name__}", out[True], want)


@pytest.mark.parametrize("keys", [7, 300], ids=["products by hand", "torch's kernel"])
def test_the_cpu_softmax_kernel_equals_torchs_without_a_bias(record_property: Record, keys: int) -> None:
    """:func:`applicative._lowering.fused_attention` without a bias, keys and values of other sizes (as the Funcformer's
    window features make them), against torch's ``scaled_dot_product_attention``: values and gradients, below and above
    :data:`applicative._lowering.SMALL_SCORES`."""
    q = torch.randn(3, 2, 60, 4, dtype=F64, requires_grad=True)
    k = torch.randn(3, 2, keys, 4, dtype=F64, requires_grad=True)
    v = torch.randn(3, 2, keys, 6, dtype=F64, requires_grad=True)
    got = _lowering.fused_attention(q, k, v, scale=0.3)
    want = nnf.scaled_dot_product_attention(q, k, v, scale=0.3)
    check(record_property, f"fused_attention without a bias [{keys} keys]", got, want)
    g = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(got, (q, k, v), g), torch.autograd.grad(want, (q, k, v), g), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dead_row", [False, True])
def test_the_cpu_softmax_kernel_equals_torchs_with_a_bias(record_property: Record, dead_row: bool) -> None:
    """:func:`applicative._lowering.fused_attention` with a float bias (computed by hand on the CPU) against torch's
    ``scaled_dot_product_attention``, values and gradients; a row whose keys are all ``-inf`` (every key padding) is
    zero, as torch's fused kernel makes it, not NaN."""
    q = torch.randn(3, 2, 5, 4, dtype=F64, requires_grad=True)
    k = torch.randn(3, 2, 7, 4, dtype=F64, requires_grad=True)
    v = torch.randn(3, 2, 7, 6, dtype=F64, requires_grad=True)
    bias = torch.randn(3, 1, 1, 7, dtype=F64)
    bias[1, ..., 5:] = -math.inf
    if dead_row:
        bias[2] = -math.inf
    got = _lowering.fused_attention(q, k, v, attn_mask=bias, scale=0.3)
    want = nnf.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3)
    check(record_property, f"fused_attention by hand [dead row={dead_row}]", got, want)
    assert torch.isfinite(got).all()
    g = torch.randn_like(got)
    mine = torch.autograd.grad(got, (q, k, v), g)
    theirs = torch.autograd.grad(want, (q, k, v), g)
    for a, b in zip(mine, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((2, 3, 9, 4), (2, 3, 4, 5)), ((2, 3, 5, 4), (2, 3, 4, 9)), ((1, 3, 9, 4), (2, 1, 4, 5)), ((9, 4), (4, 5))],
    ids=["fewer columns", "more columns", "broadcast batch", "matrices"],
)
def test_the_oriented_product_is_matmul_to_second_derivatives(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    """:func:`applicative._lowering.product` against ``torch.matmul``: values, gradients and second derivatives, in
    both orientations (the result with fewer or more columns than rows) and with broadcast batch axes."""
    a = torch.randn(a_shape, dtype=F64, requires_grad=True)
    b = torch.randn(b_shape, dtype=F64, requires_grad=True)
    got, want = _lowering.product(a, b), torch.matmul(a, b)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    g = torch.randn_like(want, requires_grad=True)
    mine = torch.autograd.grad(got, (a, b), g, create_graph=True)
    theirs = torch.autograd.grad(want, (a, b), g, create_graph=True)
    for x, y in zip(mine, theirs, strict=True):
        assert x.shape == y.shape
        torch.testing.assert_close(x, y, rtol=1e-13, atol=1e-13)
    h = [torch.randn_like(x) for x in mine]
    second = torch.autograd.grad(mine, (a, b, g), h)
    reference = torch.autograd.grad(theirs, (a, b, g), h)
    for x, y in zip(second, reference, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("norms", [False, True])
def test_encoder_layer_that_does_not_attend(record_property: Record, norms: bool) -> None:
    """``attend=False``: PyTorch's pre-norm layer with its attention block taken out, ``x + ff(norm2(x))``."""
    ref = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True, norm_first=True, dtype=F64)
    if not norms:
        ref.norm2 = nn.Identity()  # type: ignore[assignment]
    gen = EncoderLayer(Model(), Hidden(), 4, norm_first=True, norms=norms, attend=False, dtype=F64)
    assert not any(n.startswith(("self_attn", "norm1")) for n, _ in gen.named_parameters())
    gen.load_state_dict({k: v for k, v in ref.state_dict().items() if not k.startswith(("self_attn", "norm1"))})
    x = torch.randn(3, 7, 16, dtype=F64)
    want, got = x + ref._ff_block(ref.norm2(x)), gen(Field(x, (Seq(), Model()))).tensor
    assert rel_err(ref(x), want) > 1e-2  # the attention block matters: leaving it out is seen
    check(record_property, f"encoder_layer[no attention, norms={norms}]", got, want)
    with pytest.raises(StructureError, match="attend=False"):
        gen.attention()
