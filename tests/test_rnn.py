"""The RNN over applicatives: a Vector state against a hand-written torch loop, a function-valued
(Chebyshev) state against numpy, causality, and the order capability."""

from __future__ import annotations

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch
import torch.nn.functional as nnf

from applicative import Field, StructureError, Vector
from instances import Chebyshev
from models import RNNCell, scan

F64 = torch.float64


def test_vector_state_equals_a_hand_written_loop() -> None:
    torch.manual_seed(0)
    cell = RNNCell(Vector(3), Vector(5), dtype=F64)
    x = torch.randn(2, 7, 3, dtype=F64)
    got = scan(cell, Field(x, (Vector(7), Vector(3)))).tensor
    h = torch.zeros(2, 5, dtype=F64)
    want = []
    for t in range(7):
        h = torch.tanh(nnf.linear(h, cell.recurrent.weight) + nnf.linear(x[:, t], cell.input.weight, cell.input.bias))
        want.append(h)
    torch.testing.assert_close(got, torch.stack(want, 1))


def test_function_valued_state_against_numpy() -> None:
    """State h(s) a Chebyshev series: W h = ∫ K(·, s) h(s) ds (rows of W are functions, contracted with the
    exact metric), the input enters through U x + b (a constant-function bias), tanh acts at the points."""
    torch.manual_seed(1)
    n = 6
    cell = RNNCell(Vector(2), Chebyshev(n), dtype=F64)
    x = torch.randn(1, 4, 2, dtype=F64)
    got = scan(cell, Field(x, (Vector(4), Vector(2)))).tensor[0].detach().numpy()
    w, u, b = (p.detach().numpy() for p in (cell.recurrent.weight, cell.input.weight, cell.input.bias))
    gram = np.array(
        [[C.chebval(1, C.chebint(C.chebmul(np.eye(n)[i], np.eye(n)[j]), lbnd=-1)) for j in range(n)] for i in range(n)]
    )
    pts = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    vander = C.chebvander(pts, n - 1)
    h = np.zeros(n)
    for t in range(4):
        pre = w @ gram @ h + u @ x[0, t].numpy() + b  # coefficients of W h + U x + b (b: a function too)
        h = np.linalg.solve(vander, np.tanh(vander @ pre))  # tanh at the Chebyshev points, interpolated back
        np.testing.assert_allclose(got[t], h, rtol=1e-10, atol=1e-12)


def test_causal_and_needs_an_order() -> None:
    torch.manual_seed(2)
    cell = RNNCell(Vector(3), Vector(4), dtype=F64)
    x = torch.randn(2, 6, 3, dtype=F64)
    y = x.clone()
    y[:, 4:] += 1.0
    a, b = (scan(cell, Field(t, (Vector(6), Vector(3)))).tensor for t in (x, y))
    torch.testing.assert_close(a[:, :4], b[:, :4], rtol=0, atol=0)
    assert float((a[:, 4:] - b[:, 4:]).abs().max().detach()) > 1e-6
    with pytest.raises(StructureError, match="no order"):
        scan(cell, Field(torch.randn(2, 6, 3, dtype=F64), (Chebyshev(6), Vector(3))))
