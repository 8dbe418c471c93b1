"""Transposed MLP weights: ``linear``/``mlp``/``mul_mv`` want ``Out x In`` weights."""

from __future__ import annotations

import torch

from applicative import Field, Linear, linear, mlp, mul_mv
from instances import Vector


class Seq(Vector):
    size = 5


class Model(Vector):
    size = 8


class Hidden(Vector):
    size = 16


x: Field[Seq, Model] = Field(torch.randn(5, 8), (Seq(), Model()))
w1: Field[Hidden, Model] = Field(torch.randn(16, 8), (Hidden(), Model()))
w1t: Field[Model, Hidden] = Field(torch.randn(8, 16), (Model(), Hidden()))
b1: Field[Hidden] = Field(torch.randn(16), (Hidden(),))
w2: Field[Model, Hidden] = Field(torch.randn(8, 16), (Model(), Hidden()))
b2: Field[Model] = Field(torch.randn(8), (Model(),))

ok: Field[Seq, Hidden] = linear(w1, b1, x)
bad = linear(w1t, b1, x)  # E: transposed weight
bad_bias = linear(w1, b2, x)  # E: bias on the input side
bad_result: Field[Seq, Model] = linear(w1, b1, x)  # E: the result lives on Hidden
bad_mlp = mlp(w1t, b1, w2, b2, torch.relu, x)  # E: first weight transposed
bad_mlp2 = mlp(w1, b1, w1, b2, torch.relu, x)  # E: second weight transposed
bad_mv = mul_mv(w1t, Field(torch.randn(8), (Model(),)))  # E: matrix columns are Hidden, vector is Model

lin: Linear[Model, Hidden] = Linear(Model(), Hidden())
h = lin(x)
again = lin(h)  # E: a Model -> Hidden map applied to Hidden features
