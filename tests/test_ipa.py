"""IPA (iterated piecewise-affine approximation): the column and row operations against explicit loops
written from the paper's formulas, on vectors, on functions (a Chebyshev model structure) and on
ragged sequences (padding never seen)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev as C

from applicative import Field, StructureError, Vector
from instances import Chebyshev, Padded
from models import IPAColumn, IPALayer, IPARow


def column_by_hand(col: IPAColumn, x: torch.Tensor, gram: torch.Tensor) -> torch.Tensor:
    """``f_j = a + Σ_p Σ_{l<=j} K^p_jl A^p B^p x_l`` with ``K^p_jl = softmax_p(c x_lᵀ W^p x_j)``, loop by loop.

    ``gram`` is the model structure's metric ``M`` (the identity for a Vector), the rank structure's is
    ``gram_r``: a linear map's row ``w`` acts as ``⟨w, x⟩ = wᵀ M x``.
    """
    p, k = col.centres, col.rank.size
    gram_r = rank_gram(col)
    wl, wr, wb = (m.weight.reshape(p, k, -1) for m in (col.left, col.right, col.inner))
    wa, a = col.outer.weight.reshape(-1, p, k), col.outer.bias
    out = torch.zeros_like(x)
    for b in range(x.shape[0]):
        for j in range(x.shape[1]):
            scores = torch.stack(
                [
                    torch.stack([(wl[q] @ gram @ x[b, l]) @ gram_r @ (wr[q] @ gram @ x[b, j]) for q in range(p)])
                    for l in range(j + 1)
                ]
            )  # (l, p)
            kern = torch.softmax(scores * col.scale, dim=1)
            assert torch.allclose(kern.sum(1), torch.ones(j + 1, dtype=x.dtype))  # over the centres
            acc = a.clone()
            for l in range(j + 1):
                for q in range(p):
                    acc = acc + kern[l, q] * (wa[:, q] @ gram_r @ (wb[q] @ gram @ x[b, l]))
            out[b, j] = acc
    return out


def rank_gram(col: IPAColumn) -> torch.Tensor:
    n = col.rank.size
    return cheb_gram(n) if isinstance(col.rank, Chebyshev) else torch.eye(n, dtype=torch.float64)


def cheb_gram(n: int) -> torch.Tensor:
    """``∫_{-1}^{1} T_i T_j`` by numpy's Chebyshev module (an independent quadrature)."""
    g = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ci, cj = np.eye(n)[i], np.eye(n)[j]
            integral = C.chebint(C.chebmul(ci, cj))
            g[i, j] = C.chebval(1.0, integral) - C.chebval(-1.0, integral)
    return torch.tensor(g)


@pytest.mark.parametrize(("model", "rank"), [(Vector(6), Vector(3)), (Chebyshev(6), Chebyshev(3))])
def test_column_operation_equals_the_papers_formula(model: Vector | Chebyshev, rank: Vector | Chebyshev) -> None:
    torch.manual_seed(0)
    col = IPAColumn(model, rank, centres=2, dtype=torch.float64)
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    got = col(Field(x, (Vector(5), model))).tensor
    gram = cheb_gram(6) if isinstance(model, Chebyshev) else torch.eye(6, dtype=torch.float64)
    torch.testing.assert_close(got, column_by_hand(col, x, gram))


@pytest.mark.parametrize("model", [Vector(5), Chebyshev(5)])
def test_row_operation_is_gaussian_radial_kernels_over_affine_maps(model: Vector | Chebyshev) -> None:
    torch.manual_seed(1)
    row = IPARow(model, centres=3, dtype=torch.float64)
    with torch.no_grad():
        row.log_width2.fill_(np.log(3.0))
    x = torch.randn(4, 7, 5, dtype=torch.float64)
    got = row(Field(x, (Vector(7), model))).tensor
    gram = cheb_gram(5) if isinstance(model, Chebyshev) else torch.eye(5, dtype=torch.float64)
    maps = row.maps.weight.reshape(3, 5, 5)
    bias = row.maps.bias.reshape(3, 5)
    diff = x[..., None, :] - row.points  # (..., P, |D|): the distance itself, no cancellation
    dist2 = torch.einsum("...pi,ij,...pj->...p", diff, gram, diff)
    kern = torch.exp(-dist2 / (2 * 3.0))
    kern = kern / kern.sum(-1, keepdim=True)
    affine = torch.einsum("pij,jk,...k->...pi", maps, gram, x) + bias
    torch.testing.assert_close(got, (kern[..., None] * affine).sum(-2))


def test_ragged_sequences_never_see_their_padding() -> None:
    torch.manual_seed(2)
    layer = IPALayer(Vector(8), Vector(4), column_centres=2, row_centres=2, dtype=torch.float64)
    lengths = [6, 3, 5]
    x = torch.randn(3, 6, 8, dtype=torch.float64)
    got = layer(Field(x, (Padded(6, lengths), Vector(8)))).tensor
    for b, n in enumerate(lengths):
        alone = layer(Field(x[b : b + 1, :n], (Vector(n), Vector(8)))).tensor[0]
        torch.testing.assert_close(got[b, :n], alone)


def test_needs_an_ordered_sequence_and_the_model_structure() -> None:
    col = IPAColumn(Vector(4), Vector(2), centres=2)
    with pytest.raises(StructureError, match="no order"):
        col(Field(torch.randn(3, 4), (Chebyshev(3), Vector(4))))
    with pytest.raises(StructureError, match="the model is Vector"):
        col(Field(torch.randn(3, 5), (Vector(3), Vector(5))))
    with pytest.raises(StructureError, match="centres must be >= 1"):
        IPARow(Vector(4), centres=0)
