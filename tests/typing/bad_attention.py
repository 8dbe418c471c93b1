"""Attention whose queries, keys and values disagree."""

from __future__ import annotations

import torch

from applicative import Field, ScaledSoftmax, attention, self_attention
from instances import Vector


class Seq(Vector):
    size = 5


class Mem(Vector):
    size = 6


class Head(Vector):
    size = 4


class Out(Vector):
    size = 3


norm = ScaledSoftmax(0.5)
q: Field[Seq, Head] = Field(torch.randn(5, 4), (Seq(), Head()))
k: Field[Mem, Head] = Field(torch.randn(6, 4), (Mem(), Head()))
v: Field[Mem, Out] = Field(torch.randn(6, 3), (Mem(), Out()))
k_out: Field[Mem, Out] = Field(torch.randn(6, 3), (Mem(), Out()))
v_seq: Field[Seq, Out] = Field(torch.randn(5, 3), (Seq(), Out()))

ok: Field[Seq, Out] = attention(norm, q, k, v)
bad_keys = attention(norm, q, k_out, v)  # E: queries' features Head, keys' features Out
bad_values = attention(norm, q, k, v_seq)  # E: keys over Mem, values over Seq
bad_swapped = attention(norm, q, v, k)  # E: keys and values swapped
bad_result: Field[Mem, Out] = attention(norm, q, k, v)  # E: output is indexed by the queries (Seq)

wq: Field[Head, Out] = Field(torch.randn(4, 3), (Head(), Out()))
wv: Field[Out, Out] = Field(torch.randn(3, 3), (Out(), Out()))
x: Field[Seq, Out] = v_seq
ok_self: Field[Seq, Out] = self_attention(norm, wq, wq, wv, x)
bad_self = self_attention(norm, wq, wq, wv, q)  # E: the input has features Head, weights expect Out
