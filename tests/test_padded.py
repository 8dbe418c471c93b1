"""Variable-length sequences: ``Padded`` as the sequence axis equals PyTorch with key padding masks.

Encoder, decoder and encoder--decoder stacks over ``Padded`` sequences are
loaded from ``torch.nn.TransformerEncoder`` / ``TransformerDecoder`` weights and
compared, in float64, with their ``src_key_padding_mask`` /
``tgt_key_padding_mask`` / ``memory_key_padding_mask`` outputs and gradients at
the valid positions. Attention runs fused (one SDPA call per attention, with a
``0 / -inf`` bias), and a mask that does not matter could not fail the test, so
each test first checks that padding changes PyTorch's answer.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from torch import Tensor, nn

from applicative import Field, StructureError, Vector, _lowering, attention, cat, counit, scaled_softmax
from instances import Chebyshev, Padded
from models import DecoderLayer, EncoderLayer, decoder

F64 = torch.float64
TOL = 1e-6


class Model(Vector):
    size = 16


class Hidden(Vector):
    size = 24


def rel_err(got: Tensor, ref: Tensor) -> float:
    return float((got - ref).abs().max().detach() / ref.abs().max().detach())


def lengths_mask(lengths: list[int], n: int) -> Tensor:
    """PyTorch's key padding mask: ``True`` at padding."""
    return torch.arange(n) >= torch.tensor(lengths).unsqueeze(-1)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def _count_sdpa() -> mock._patch[mock.MagicMock]:
    return mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("heads", [1, 4])
def test_encoder_matches_src_key_padding_mask(norm_first: bool, heads: int) -> None:
    lengths, n = [7, 3, 5], 7
    layer = nn.TransformerEncoderLayer(16, heads, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64)
    ref = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    ours = nn.ModuleList(EncoderLayer(Model(), Hidden(), heads, norm_first=norm_first, dtype=F64) for _ in range(2))
    for mine, theirs in zip(ours, ref.layers, strict=True):
        mine.load_state_dict(theirs.state_dict())
    x = torch.randn(3, n, 16, dtype=F64, requires_grad=True)
    pad = lengths_mask(lengths, n)
    want = ref(x, src_key_padding_mask=pad)
    assert rel_err(want[~pad], ref(x)[~pad]) > 1e-3  # the mask matters
    h = Field(x, (Padded(n, lengths), Model()))
    with _count_sdpa() as sdpa:
        for mine in ours:
            h = mine(h)
    assert sdpa.call_count == 2  # fused: one kernel per layer
    got = h.tensor
    assert rel_err(got[~pad], want[~pad]) <= TOL
    # gradients through the valid positions only, for the input and every parameter
    probe = torch.randn_like(want)
    (g_ref,) = torch.autograd.grad((want * probe)[~pad].sum(), [x], retain_graph=True)
    ref_params = torch.autograd.grad((want * probe)[~pad].sum(), list(ref.parameters()))
    (g_got,) = torch.autograd.grad((got * probe)[~pad].sum(), [x], retain_graph=True)
    got_params = torch.autograd.grad((got * probe)[~pad].sum(), list(ours.parameters()))
    assert rel_err(g_got, g_ref) <= TOL
    for a, b in zip(got_params, ref_params, strict=True):
        assert rel_err(a, b) <= TOL


def test_decoder_and_encoder_decoder_match_tgt_and_memory_masks() -> None:
    tl, ml, n, m = [6, 2, 4], [5, 5, 1], 6, 5
    layer = nn.TransformerDecoderLayer(16, 4, 24, dropout=0.0, batch_first=True, dtype=F64)
    ref = nn.TransformerDecoder(layer, 2)
    ours = nn.ModuleList(DecoderLayer(Model(), Hidden(), 4, dtype=F64) for _ in range(2))
    for mine, theirs in zip(ours, ref.layers, strict=True):
        mine.load_state_dict(theirs.state_dict())
    x = torch.randn(3, n, 16, dtype=F64, requires_grad=True)
    mem = torch.randn(3, m, 16, dtype=F64, requires_grad=True)
    tpad, mpad = lengths_mask(tl, n), lengths_mask(ml, m)
    causal = torch.ones(n, n, dtype=torch.bool).triu(1)
    want = ref(x, mem, tgt_mask=causal, tgt_key_padding_mask=tpad, memory_key_padding_mask=mpad, tgt_is_causal=True)
    assert rel_err(want[~tpad], ref(x, mem, tgt_mask=causal)[~tpad]) > 1e-3
    h, memory = Field(x, (Padded(n, tl), Model())), Field(mem, (Padded(m, ml), Model()))
    for mine in ours:
        h = mine(h, memory)
    got = h.tensor
    assert rel_err(got[~tpad], want[~tpad]) <= TOL
    probe = torch.randn_like(want)
    g_ref = torch.autograd.grad((want * probe)[~tpad].sum(), [x, mem])
    g_got = torch.autograd.grad((got * probe)[~tpad].sum(), [x, mem])
    for a, b in zip(g_got, g_ref, strict=True):
        assert rel_err(a, b) <= TOL


def test_padding_never_reaches_a_counit_or_attention() -> None:
    s = Padded(4, [2, 4])
    clean = torch.tensor([[1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]], dtype=F64)
    dirty = clean.clone()
    dirty[0, 2:] = float("nan")
    torch.testing.assert_close(counit(Field(dirty, (s,))).tensor, torch.tensor([3.0, 10.0], dtype=F64))
    # attention over padded keys ignores what padding holds (finite or not, the weights there are zero)
    q = Field(torch.randn(2, 3, 5, dtype=F64), (Vector(3), Vector(5)))
    k = torch.randn(2, 4, 5, dtype=F64)
    v = torch.randn(2, 4, 6, dtype=F64)
    k2, v2 = k.clone(), v.clone()
    k2[0, 2:], v2[0, 2:] = 1e3, 7.0
    for fused in (True, False):
        a = attention(scaled_softmax(5), q, Field(k, (s, Vector(5))), Field(v, (s, Vector(6))), fused=fused)
        b = attention(scaled_softmax(5), q, Field(k2, (s, Vector(5))), Field(v2, (s, Vector(6))), fused=fused)
        torch.testing.assert_close(a.tensor, b.tensor)
        want = torch.softmax(q.tensor[0] @ k[0, :2].T / 5**0.5, -1) @ v[0, :2]
        torch.testing.assert_close(a.tensor[0], want)


def test_bad_lengths_and_causal_over_unordered() -> None:
    for bad, what in (([0, 2], "[1, 3]"), ([4], "[1, 3]"), ([1.5], "integers")):
        with pytest.raises(StructureError, match=what.replace("[", r"\[").replace("]", r"\]")):
            Padded(3, bad)  # type: ignore[arg-type]
    with pytest.raises(StructureError, match="no order"):
        decoder(Vector(4), Model(), Hidden(), 2, 1, sequence=Chebyshev(8))
    model = decoder(Vector(4), Model(), Hidden(), 2, 1, dtype=F64)
    with pytest.raises(StructureError, match=r"Chebyshev.*no order"):
        model(Field(torch.randn(2, 8, 4, dtype=F64), (Chebyshev(8), Vector(4))))


def test_batches_of_padded_sequences_concatenate() -> None:
    a = Field(torch.randn(2, 3, 4), (Padded(3, [3, 1]), Vector(4)))
    b = Field(torch.randn(1, 5, 4), (Padded(5, [4]), Vector(4)))
    ab = cat([a, b])
    s = ab.structures[0]
    assert isinstance(s, Padded) and s.size == 5 and s.lengths.tolist() == [3, 1, 4]
    torch.testing.assert_close(ab.tensor[:2, :3], a.tensor)
    torch.testing.assert_close(ab.tensor[2], b.tensor[0])
    torch.testing.assert_close(counit(ab).tensor[:2], counit(a).tensor)
    twice = cat([a, a])  # one batch joined to itself: twice the examples
    assert twice.structures[0].lengths.tolist() == [3, 1, 3, 1]  # type: ignore[attr-defined]
    one = ab[1]
    assert one.structures[0].lengths.tolist() == 1  # type: ignore[attr-defined]


def test_padded_is_lawful() -> None:
    from applicative.laws import check_laws
    from instances import PaddedArbitrary

    report = check_laws(PaddedArbitrary(), max_examples=20)
    assert report.status("fused = generic (S keys)") != "n/a"
    assert report.status("softmax") != "n/a"


def test_several_batch_axes_run_one_four_dimensional_kernel_with_the_per_example_mask() -> None:
    """Batch ``(3, 2)``, three lengths: one SDPA call on ``(6, heads, n, e)``, equal to PyTorch on each slice.

    SDPA's CPU kernels take four dimensions (with more it runs its unfused math path), so the batch axes are
    flattened into one, and the per-example ``0 / -inf`` bias with them.
    """
    lengths, n = [7, 3, 5], 7
    layer = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True, dtype=F64)
    ours = EncoderLayer(Model(), Hidden(), 4, dtype=F64)
    ours.load_state_dict(layer.state_dict())
    x = torch.randn(3, 2, n, 16, dtype=F64)  # per-example lengths line up with the leading axis
    pad = lengths_mask(lengths, n)
    with _count_sdpa() as sdpa:
        got = ours(Field(x, (Padded(n, lengths), Model()))).tensor
    assert sdpa.call_count == 1
    assert sdpa.call_args.args[0].shape == (6, 4, n, 4)
    for i in range(2):
        want = layer(x[:, i], src_key_padding_mask=pad)
        assert rel_err(want[~pad], layer(x[:, i])[~pad]) > 1e-3  # the mask matters
        assert rel_err(got[:, i][~pad], want[~pad]) <= TOL
