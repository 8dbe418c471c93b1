"""A correct program: must type-check cleanly under mypy --strict."""

from __future__ import annotations

import torch

from applicative import Field, ScaledSoftmax, attention, dot, linear, mlp, mul_mm, mul_mmt, mul_mv, outer
from instances import Vector
from models import EncoderLayer


class Seq(Vector):
    size = 5


class Model(Vector):
    size = 8


class Hidden(Vector):
    size = 16


x: Field[Seq, Model] = Field(torch.randn(5, 8), (Seq(), Model()))
w1: Field[Hidden, Model] = Field(torch.randn(16, 8), (Hidden(), Model()))
b1: Field[Hidden] = Field(torch.randn(16), (Hidden(),))
w2: Field[Model, Hidden] = Field(torch.randn(8, 16), (Model(), Hidden()))
b2: Field[Model] = Field(torch.randn(8), (Model(),))

h: Field[Seq, Hidden] = linear(w1, b1, x)
y: Field[Seq, Model] = mlp(w1, b1, w2, b2, torch.relu, x)
z: Field[Seq, Hidden] = mul_mm(x, mul_mmt(w1, Field(torch.eye(8), (Model(), Model()))))
v: Field[Hidden] = mul_mv(w1, Field(torch.randn(8), (Model(),)))
s: Field[Seq] = dot(x, y)
o: Field[Seq, Model] = outer(s, b2)
att: Field[Seq, Hidden] = attention(ScaledSoftmax(0.5), x, y, h)
layer: EncoderLayer[Model] = EncoderLayer(Model(), Hidden(), 2)
out: Field[Seq, Model] = layer(x)
