"""``Pairs(a, b)``: the product structure, checked by its laws and against independent references.

References: numpy's Chebyshev module (2D integrals, the Gram matrix, point values), a Vector
of ``|a|·|b|`` positions (the product of two vectors is one), masked attention written by hand
(a padded factor), and a numpy quadrature of the continuous softmax attention on the tensor grid.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev as C

import applicative._attention as attention_module
from applicative import (
    REAL,
    Field,
    LinearAttention,
    Pairs,
    ScaledSoftmax,
    StructureError,
    Vector,
    _lowering,
    attention,
    cat,
    kernels,
)
from applicative.laws import PairsArbitrary, VectorArbitrary, check_laws
from instances import Chebyshev, ChebyshevArbitrary, Padded, PaddedArbitrary
from models import encoder

EXAMPLES = 10


@pytest.mark.parametrize(
    "arbitrary",
    [
        PairsArbitrary(ChebyshevArbitrary()),
        PairsArbitrary(VectorArbitrary(Vector)),
        PairsArbitrary(PaddedArbitrary(), ChebyshevArbitrary()),
        PairsArbitrary(ChebyshevArbitrary(), PaddedArbitrary()),
    ],
    ids=repr,
)
def test_laws(arbitrary: PairsArbitrary) -> None:
    report = check_laws(arbitrary, max_examples=EXAMPLES)
    assert not report.failures
    applied = {r.law.name for r in report.results if r.status in ("exact", "approximate")}
    assert {"counit = derived", "fused = generic (S keys)", "fused = generic (S heads)", "Fubini S∘S"} <= applied


def _integrals(n: int) -> np.ndarray:
    return np.array([C.chebval(1, C.chebint(np.eye(n)[k])) - C.chebval(-1, C.chebint(np.eye(n)[k])) for k in range(n)])


def test_counit_is_the_double_integral() -> None:
    s = Pairs(Chebyshev(5), Chebyshev(7))
    c = torch.randn(3, 5, 7, dtype=torch.float64)
    want = np.einsum("bkl,k,l->b", c.numpy(), _integrals(5), _integrals(7))
    got = s.counit(c.flatten(-2), -1, REAL)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_metric_is_the_gram_matrix_of_the_tensor_basis() -> None:
    s = Pairs(Chebyshev(3), Chebyshev(4))
    want = np.zeros((12, 12))
    for i in range(12):
        for j in range(12):
            ci, cj = np.zeros((3, 4)), np.zeros((3, 4))
            ci.flat[i], cj.flat[j] = 1, 1
            # ∫∫ (T_a(x) T_b(y)) (T_c(x) T_d(y)) = ∫ T_a T_c · ∫ T_b T_d
            a, b, c, d = i // 4, i % 4, j // 4, j % 4
            fx = C.chebint(C.chebmul(np.eye(3)[a], np.eye(3)[c]))
            fy = C.chebint(C.chebmul(np.eye(4)[b], np.eye(4)[d]))
            want[i, j] = (C.chebval(1, fx) - C.chebval(-1, fx)) * (C.chebval(1, fy) - C.chebval(-1, fy))
    np.testing.assert_allclose(s.metric(torch.float64, torch.device("cpu")).numpy(), want, atol=1e-14)


def test_positions_are_point_values_on_the_tensor_grid() -> None:
    s = Pairs(Chebyshev(4), Chebyshev(3))
    c = torch.randn(4, 3, dtype=torch.float64)
    x, y = C.chebpts1(4), C.chebpts1(3)
    want = C.chebgrid2d(x, y, c.numpy())
    got = kernels.positions(s, c.flatten(), 0).reshape(4, 3)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-13)
    back = kernels.stored(s, kernels.positions(s, c.flatten(), 0, kernels.grid(s)), 0)  # via the product grid
    np.testing.assert_allclose(back.numpy(), c.flatten().numpy(), atol=1e-13)


def test_product_of_vectors_is_a_vector_of_pairs() -> None:
    """``Vector(h) ⊗ Vector(w)``: the counting measure on h·w positions, so attention is plain attention."""
    s, flat = Pairs(Vector(3), Vector(4)), Vector(12)
    q, k, v = (torch.randn(2, 12, 5, dtype=torch.float64) for _ in range(3))
    h, g = Vector(5), Vector(5)
    for norm in (ScaledSoftmax(0.4), LinearAttention(0.4)):
        a = attention(norm, Field(q, (s, h)), Field(k, (s, h)), Field(v, (s, g))).tensor
        b = attention(norm, Field(q, (flat, h)), Field(k, (flat, h)), Field(v, (flat, g))).tensor
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_padded_factor_masks_its_padding_on_every_row() -> None:
    """``Padded ⊗ Vector``: positions (i, j) with i past an example's length are never attended to."""
    lengths = [3, 1]
    s = Pairs(Padded(3, lengths), Vector(2))
    q, k, v = (torch.randn(2, 6, 4, dtype=torch.float64) for _ in range(3))
    h = Vector(4)
    got = attention(ScaledSoftmax(0.5), Field(q, (s, h)), Field(k, (s, h)), Field(v, (s, h))).tensor
    for b, n in enumerate(lengths):
        keep = torch.arange(6) < 2 * n
        scores = 0.5 * q[b] @ k[b, keep].T
        want = torch.softmax(scores, -1) @ v[b, keep]
        torch.testing.assert_close(got[b], want, rtol=1e-12, atol=1e-12)


def _fejer_weights(m: int) -> np.ndarray:
    """Quadrature weights on ``m`` first-kind points, exact for degree < m: solved from ∫ T_k (numpy)."""
    t = C.chebpts1(m)
    vand = C.chebvander(t, m - 1).T  # (k, j) = T_k(t_j)
    return np.linalg.solve(vand, _integrals(m))


def test_fused_softmax_over_a_2d_domain_is_the_tensor_quadrature() -> None:
    """Attention over ``Chebyshev ⊗ Chebyshev`` keys: one SDPA call, equal to the quadrature of
    ``∫∫ e^{s(x, y)} v(x, y) / ∫∫ e^{s}`` on the product grid, computed here with numpy."""
    n, m, e = 4, 3, 2
    s = Pairs(Chebyshev(n), Chebyshev(m))
    rng = np.random.default_rng(0)
    q = rng.standard_normal((5, e))  # queries at 5 outer positions (a Vector)
    kc = rng.standard_normal((n, m, e))
    vc = rng.standard_normal((n, m, 1))
    keys = Field(torch.from_numpy(kc.reshape(n * m, e)), (s, Vector(e)))
    values = Field(torch.from_numpy(vc.reshape(n * m, 1)), (s, Vector(1)))
    queries = Field(torch.from_numpy(q), (Vector(5), Vector(e)))
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        got = attention(ScaledSoftmax(0.7), queries, keys, values).tensor.numpy()
    assert spy.call_count == 1
    gx, gy = C.chebpts1(2 * n - 1), C.chebpts1(2 * m - 1)
    wx, wy = _fejer_weights(2 * n - 1), _fejer_weights(2 * m - 1)
    k_at = np.stack([C.chebgrid2d(gx, gy, kc[..., i]) for i in range(e)], -1)  # (gx, gy, e)
    v_at = C.chebgrid2d(gx, gy, vc[..., 0])
    w = wx[:, None] * wy[None, :]
    for i in range(5):
        z = np.exp(0.7 * k_at @ q[i]) * w
        np.testing.assert_allclose(got[i, 0], (z * v_at).sum() / z.sum(), rtol=1e-12)


def test_galerkin_attention_is_linear_in_positions_and_exact() -> None:
    """``LinearAttention`` associates: ``q (∫∫ k vᵀ)``, equal to the generic definition, with no SDPA call."""
    s = Pairs(Chebyshev(6), Chebyshev(5))
    q, k = (Field(torch.randn(2, 30, 4, dtype=torch.float64), (s, Vector(4))) for _ in range(2))
    v = Field(torch.randn(2, 30, 3, dtype=torch.float64), (s, Vector(3)))
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        fused = attention(LinearAttention(0.3), q, k, v).tensor
    assert spy.call_count == 0
    generic = attention(LinearAttention(0.3), q, k, v, fused=False).tensor
    torch.testing.assert_close(fused, generic, rtol=1e-11, atol=1e-11)
    # and against the integral written out: ∫∫ k_i(x, y) v_j(x, y) dx dy with numpy's Gram matrices
    gram = s.metric(torch.float64, torch.device("cpu"))
    want = 0.3 * q.tensor @ (k.tensor.mT @ gram @ v.tensor)
    torch.testing.assert_close(fused, want, rtol=1e-11, atol=1e-11)


def test_encoder_on_a_2d_domain_fuses_every_layer() -> None:
    """The generic encoder over ``Pairs(X, Y)``: one SDPA call per layer, heads split over the channels."""
    model = encoder(Vector(3), Vector(8), Vector(16), heads=2, depth=3, dtype=torch.float64)
    for s in (Pairs(Chebyshev(4), Chebyshev(4)), Pairs(Padded(4, [4, 2]), Vector(4))):
        x = Field(torch.randn(2, 16, 3, dtype=torch.float64), (s, Vector(3)))
        with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
            y = model(x)
        assert spy.call_count == 3
        assert y.structures == (s, Vector(3))
    # stored at its positions, the fused route equals the generic definition (Chebyshev keys differ by
    # design: the fused one is the quadrature of e^s, the generic one truncates e^s to n terms)
    with mock.patch.object(attention_module, "lowered", return_value=None):
        generic = model(x).tensor
    assert not torch.equal(generic, y.tensor)  # really another route
    torch.testing.assert_close(generic, y.tensor, rtol=1e-10, atol=1e-10)


def test_split_into_heads_goes_through_the_first_factor() -> None:
    s = Pairs(Vector(8), Chebyshev(3))
    assert s.split(4) == Pairs(Vector(2), Chebyshev(3))
    with pytest.raises(StructureError, match="splits into heads through its first factor"):
        Pairs(Vector(6), Vector(2)).split(4)


def test_per_example_data_moves_indexes_and_concatenates() -> None:
    s = Pairs(Padded(3, [3, 1]), Padded(2, [1, 2]))
    assert s.batch_shape == (2,)
    x = Field(torch.randn(2, 6, 4), (s, Vector(4)))
    one = x[1:]
    assert one.structures[0].equals(Pairs(Padded(3, [1]), Padded(2, [2])))
    both = cat([one, x[:1]])
    assert both.structures[0].equals(Pairs(Padded(3, [1, 3]), Padded(2, [2, 1])))
    lw = s.log_measure(torch.float64, torch.device("cpu"))
    assert lw is not None
    assert torch.isfinite(lw).sum(-1).tolist() == [3 * 1, 1 * 2]


def test_bad_construction_says_what_to_pass() -> None:
    with pytest.raises(StructureError, match="expected a Structure"):
        Pairs(3, Vector(2))  # type: ignore[arg-type]
    with pytest.raises(StructureError, match="do not broadcast"):
        Pairs(Padded(2, [1, 2]), Padded(2, [1, 2, 2]))
