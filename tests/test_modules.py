"""nn.Module behaviour of the generic models: torch.nn.Transformer equivalence, causality,
state_dict, dtype/device moves and torch.compile."""

import math

import pytest
import torch

from applicative import Field, LinearAttention, MultiHeadAttention, ScaledSoftmax, StructureError
from instances import Chebyshev, Vector
from models import DecoderLayer, EncoderDecoder, EncoderLayer, decoder, encoder


class Seq(Vector):
    size = 7


class Tgt(Vector):
    size = 5


class Model(Vector):
    size = 12


class Hidden(Vector):
    size = 24


def _eye_embeddings(model: EncoderDecoder[Model, Model]) -> None:
    with torch.no_grad():
        for lin in (model.encoder.embed, model.decoder_embed, model.unembed):
            lin.weight.copy_(torch.eye(Model.size, dtype=lin.weight.dtype))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_decoder_matches_torch_transformer(norm_first: bool) -> None:
    torch.manual_seed(0)
    kw = {"dropout": 0.0, "batch_first": True, "norm_first": norm_first, "dtype": torch.float64}
    ref = torch.nn.Transformer(Model.size, 4, 2, 2, Hidden.size, **kw)  # type: ignore[arg-type]
    enc = [EncoderLayer(Model(), Hidden(), 4, norm_first=norm_first, dtype=torch.float64) for _ in range(2)]
    dec = [DecoderLayer(Model(), Hidden(), 4, norm_first=norm_first, dtype=torch.float64) for _ in range(2)]
    mine = EncoderDecoder(Model(), Model(), enc, dec, dtype=torch.float64)
    for i in range(2):
        enc[i].load_state_dict(ref.encoder.layers[i].state_dict())
        dec[i].load_state_dict(ref.decoder.layers[i].state_dict())
    assert mine.encoder.norm is not None
    mine.encoder.norm.load_state_dict(ref.encoder.norm.state_dict())
    mine.decoder_norm.load_state_dict(ref.decoder.norm.state_dict())
    _eye_embeddings(mine)
    src = torch.randn(3, Seq.size, Model.size, dtype=torch.float64)
    tgt = torch.randn(3, Tgt.size, Model.size, dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(Tgt.size, dtype=torch.float64)
    expected = ref(src, tgt, tgt_mask=mask, tgt_is_causal=True)
    got = mine(Field(src, (Seq(), Model())), Field(tgt, (Tgt(), Model())))
    assert got.structures == (Tgt(), Model())
    err = ((got.tensor - expected).norm() / expected.norm()).item()
    assert err <= 1e-6


def test_decoder_is_causal() -> None:
    torch.manual_seed(1)
    model = decoder(Model(), Model(), Hidden(), heads=2, depth=2, dtype=torch.float64)
    x = torch.randn(2, Seq.size, Model.size, dtype=torch.float64)
    y = x.clone()
    y[:, 4:] = torch.randn(2, Seq.size - 4, Model.size, dtype=torch.float64)  # change the future only
    out_x = model(Field(x, (Seq(), Model()))).tensor
    out_y = model(Field(y, (Seq(), Model()))).tensor
    torch.testing.assert_close(out_x[:, :4], out_y[:, :4])
    assert not torch.allclose(out_x[:, 4:], out_y[:, 4:])


def test_state_dict_round_trip_and_dtype_move() -> None:
    torch.manual_seed(2)
    a = encoder(Model(), Model(), Hidden(), heads=2, depth=2)
    b = encoder(Model(), Model(), Hidden(), heads=2, depth=2)
    b.load_state_dict(a.state_dict())
    x = Field(torch.randn(2, Seq.size, Model.size), (Seq(), Model()))
    torch.testing.assert_close(a(x).tensor, b(x).tensor)
    a64 = a.to(torch.float64)
    y = a64(x.to(torch.float64))
    assert y.dtype == torch.float64
    torch.testing.assert_close(y.tensor.float(), b(x).tensor, atol=1e-5, rtol=1e-5)


def test_torch_compile_traces_the_generic_model() -> None:
    torch.manual_seed(3)
    model = encoder(Model(), Model(), Hidden(), heads=2, depth=1)

    def run(t: torch.Tensor) -> torch.Tensor:
        return model(Field(t, (Seq(), Model()))).tensor

    compiled = torch.compile(run, backend="aot_eager", fullgraph=True)
    x = torch.randn(2, Seq.size, Model.size, requires_grad=True)
    y = compiled(x)
    torch.testing.assert_close(y, run(x))
    (g,) = torch.autograd.grad(y.sum(), x)
    (g_ref,) = torch.autograd.grad(run(x).sum(), x)
    torch.testing.assert_close(g, g_ref)


@pytest.mark.parametrize("normalise", ["softmax", "linear"])
def test_position_features_add_their_product_to_each_heads_scores(normalise: str) -> None:
    """``position = (p, r)``: head ``h`` scores ``q_h · k_h + p_h · r_h``, written out in plain torch."""
    torch.manual_seed(0)
    d, heads, nq, nk = 8, 2, 5, 7
    dh, scale = d // heads, 1 / math.sqrt(d // heads)
    norm = ScaledSoftmax(scale) if normalise == "softmax" else LinearAttention(scale)
    mha = MultiHeadAttention(Vector(d), Vector(dh), Vector(dh), heads, norm, dtype=torch.float64)
    x, mem = torch.randn(3, nq, d, dtype=torch.float64), torch.randn(3, nk, d, dtype=torch.float64)
    p, r = torch.randn(heads, nq, 2, dtype=torch.float64), torch.randn(nk, 2, dtype=torch.float64)
    got = mha(Field(x, (Vector(nq), Vector(d))), Field(mem, (Vector(nk), Vector(d))), position=(p, r)).tensor
    w, b = mha.in_proj_weight, mha.in_proj_bias
    assert b is not None
    q, k, v = x @ w[:d].T + b[:d], mem @ w[d : 2 * d].T + b[d : 2 * d], mem @ w[2 * d :].T + b[2 * d :]

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.unflatten(-1, (heads, dh)).transpose(-2, -3)

    s = (split(q) @ split(k).mT + p @ r.mT) * scale
    weights = s.softmax(-1) if normalise == "softmax" else s  # a Vector's measure counts its positions
    o = (weights @ split(v)).transpose(-2, -3).flatten(-2)
    want = o @ mha.out_proj.weight.T + mha.out_proj.bias
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_position_features_need_vector_keys_and_matching_sizes() -> None:
    x = Field(torch.randn(2, 5, 8), (Vector(5), Vector(8)))
    mha = MultiHeadAttention(Vector(8), Vector(4), Vector(4), 2)
    with pytest.raises(StructureError, match=r"need the same last size e, got shapes \(2, 5, 2\) and \(5, 3\)"):
        mha(x, position=(torch.zeros(2, 5, 2), torch.zeros(5, 3)))
    with pytest.raises(StructureError, match=r"position feature p of shape \(3, 5, 2\) does not broadcast"):
        mha(x, position=(torch.zeros(3, 5, 2), torch.zeros(5, 2)))
    cheb = MultiHeadAttention(Vector(8), Chebyshev(4), Chebyshev(4), 2)
    with pytest.raises(StructureError, match=r"extend plain Vector keys, but the keys are Chebyshev\(4\)"):
        cheb(x, position=(torch.zeros(5, 2), torch.zeros(5, 2)))
