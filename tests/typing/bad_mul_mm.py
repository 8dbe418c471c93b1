"""Matrix products whose contracted axes disagree."""

from __future__ import annotations

import torch

from applicative import Field, add, dot, mul_mm, mul_mmt, mul_vm, zip_with
from instances import Vector


class A(Vector):
    size = 2


class B(Vector):
    size = 3


class C(Vector):
    size = 4


ab: Field[A, B] = Field(torch.randn(2, 3), (A(), B()))
bc: Field[B, C] = Field(torch.randn(3, 4), (B(), C()))
ac: Field[A, C] = Field(torch.randn(2, 4), (A(), C()))
abc: Field[A, B, C] = Field(torch.randn(2, 3, 4), (A(), B(), C()))
cb: Field[C, B] = Field(torch.randn(4, 3), (C(), B()))

ok: Field[A, C] = mul_mm(ab, bc)
ok3: Field[A, B, B] = mul_mm(abc, cb)  # typed leading axes pass through
bad = mul_mm(ab, ac)  # E: inner axes B and A
bad_lead = mul_mm(abc, ab)  # E: left ends in C, right starts with A
bad_result: Field[A, B] = mul_mm(ab, bc)  # E: result is A x C
bad_mmt = mul_mmt(ab, bc)  # E: both must end in the same axis
bad_vm = mul_vm(Field(torch.randn(3), (B(),)), ab)  # E: vector over B, matrix rows over A
bad_dot = dot(ab, ac)  # E: dot of A x B with A x C
bad_add = add(ab, bc)  # E: different axes
bad_zip = zip_with(dot, ab, ac)  # E: zip of different inner axes
