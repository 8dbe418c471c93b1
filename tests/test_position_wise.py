"""``position_wise``: a map of the last axis at every position of the others, through their points once.

Against numpy (the interpolant of ``f``'s values at a Chebyshev series' nodes, by ``chebval`` and ``chebfit``), and
a Transformer layer whose MLP is one position-wise map against the same layer with the MLP step by step, its
activation through the points and back (on a series of ``n`` terms at ``n`` points the two agree)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch

from applicative import Field, StructureError, linear, pointwise, position_wise
from instances import Chebyshev, Fourier, Vector
from models.transformer import EncoderLayer

F64 = torch.float64


def test_the_result_interpolates_f_at_the_nodes() -> None:
    """``f(u) = tanh(W u)`` per position ``x``: the output series takes ``f``'s values at the ``n`` nodes, by numpy."""
    n, d = 9, 3
    s = Chebyshev(n)
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(2, n, d, generator=gen, dtype=F64)
    w = torch.randn(d, d, generator=gen, dtype=F64)
    wf = Field(w, (Vector(d), Vector(d)))

    def f(y: Field[Vector]) -> Field[Vector]:
        return pointwise(torch.tanh, linear(wf, None, y))

    got = position_wise(f, Field(u, (s, Vector(d)))).tensor.numpy()
    t = s.coordinates(F64).numpy()  # the nodes the values are taken at
    for b in range(2):
        at = C.chebval(t, u[b].numpy())  # (d, n): each channel's values at the nodes
        want = np.tanh(w.numpy() @ at)  # (d, n)
        np.testing.assert_allclose(C.chebval(t, got[b]), want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[b], C.chebfit(t, want.T, n - 1), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("sequence", [Chebyshev(9), Fourier(9)], ids=["chebyshev", "fourier"])
@pytest.mark.parametrize("norms", [True, False], ids=["norms", "no-norms"])
@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_a_layers_mlp_is_its_steps(sequence: Chebyshev | Fourier, norms: bool, norm_first: bool) -> None:
    """The layer's MLP block with its MLP as one position-wise map equals the block with the MLP's affine maps and
    activation applied one by one (the activation through the points and back, the biases lifted onto the series),
    values and gradients."""
    torch.manual_seed(0)
    layer = EncoderLayer(
        Vector(6), Vector(12), 2, norms=norms, norm_first=norm_first, activation=torch.nn.functional.gelu, dtype=F64
    )
    x = torch.randn(3, sequence.size, 6, dtype=F64, requires_grad=True)
    h = Field(x, (sequence, Vector(6)))
    l1, l2 = layer.linear1, layer.linear2
    b1, b2 = l1.bias_field, l2.bias_field
    assert b1 is not None and b2 is not None

    def steps(y: Field[Any, Vector]) -> Field[Any, Vector]:
        return linear(l2.weight_field, b2, pointwise(layer.activation, linear(l1.weight_field, b1, y)))

    got = layer(h).tensor
    want = layer.block(2, layer.block(1, h, layer.attention()), steps).tensor
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(got)
    (mine,) = torch.autograd.grad(got, x, g)
    (theirs,) = torch.autograd.grad(want, x, g)
    torch.testing.assert_close(mine, theirs, rtol=1e-12, atol=1e-12)


def test_a_map_that_changes_the_last_axis_is_refused() -> None:
    s = Chebyshev(5)
    x = Field(torch.zeros(5, 3, dtype=F64), (s, Vector(3)))
    wide = Field(torch.zeros(4, 3, dtype=F64), (Vector(4), Vector(3)))
    with pytest.raises(StructureError, match="position_wise: f must map Vector"):
        position_wise(lambda y: linear(wide, None, y), x)
