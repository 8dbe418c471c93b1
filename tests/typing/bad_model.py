"""Models and modules applied to values on the wrong structures."""

from __future__ import annotations

import torch

from applicative import Field, LayerNorm, layer_norm
from instances import Vector
from models import DecoderLayer, EncoderLayer


class Seq(Vector):
    size = 5


class Model(Vector):
    size = 8


class Hidden(Vector):
    size = 16


x: Field[Seq, Model] = Field(torch.randn(5, 8), (Seq(), Model()))
xt: Field[Model, Seq] = Field(torch.randn(8, 5), (Model(), Seq()))
g: Field[Model] = Field(torch.ones(8), (Model(),))
gh: Field[Hidden] = Field(torch.ones(16), (Hidden(),))

layer: EncoderLayer[Model] = EncoderLayer(Model(), Hidden(), 2)
ok: Field[Seq, Model] = layer(x)
bad = layer(xt)  # E: a transposed sequence
dec: DecoderLayer[Model] = DecoderLayer(Model(), Hidden(), 2)
bad_dec = dec(x, xt)  # E: memory with transposed axes
norm: LayerNorm[Model] = LayerNorm(Model())
bad_norm = norm(xt)  # E: normalising over Seq
ok_ln: Field[Seq, Model] = layer_norm(x, g, g)
bad_ln = layer_norm(x, gh, gh)  # E: gain and bias on Hidden
