"""Chebyshev series against ``numpy.polynomial.chebyshev``, quadrature and dense-matrix references.

Every transform, product, integral and fused kernel is compared with numpy
(``chebval``, ``chebpts1``, ``chebinterpolate``, ``chebmul``, ``chebint``,
``chebder``), Gauss--Legendre quadrature, ``scipy.integrate.quad``, or a
plain-torch reference built from dense Vandermonde matrices -- never with the
FFT code under test.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import numpy.polynomial.chebyshev as npc
import pytest
import scipy.integrate
import torch
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray
from torch import Tensor

import applicative as ap
from applicative import REAL, Field, ScaledSoftmax, Structure, StructureError, cannot_lower, linear
from applicative import _kernels as kernels
from instances import MAX_PLUS, Chebyshev, CoefficientSoftmax, Vector
from instances import chebyshev as cheb
from models import EncoderLayer

F64 = torch.float64
Arr = NDArray[np.float64]
seeds = st.integers(0, 2**31 - 1)
sizes = st.integers(1, 24)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def t64(a: Arr) -> Tensor:
    return torch.tensor(a, dtype=F64)


def decaying(r: np.random.Generator, *shape: int, rate: float = 0.7) -> Arr:
    """Random coefficients ``~ N(0, 1) rate^k`` along the last axis: a smooth function."""
    return r.standard_normal(shape) * rate ** np.arange(shape[-1])


def integral(c: Arr) -> float:
    """``∫_{-1}^{1}`` of a series, by numpy's ``chebint``."""
    return float(npc.chebval(1.0, npc.chebint(c, lbnd=-1)))


def gauss(n: int) -> tuple[Arr, Arr]:
    return np.polynomial.legendre.leggauss(n)


# ---- points and transforms ----------------------------------------------------------------


@given(n=sizes)
def test_points_are_chebpts1(n: int) -> None:
    np.testing.assert_allclose(cheb.points(n).numpy(), npc.chebpts1(n), rtol=0, atol=1e-15)
    assert Chebyshev(n).points(torch.float32).dtype == torch.float32


@given(n=sizes, extra=st.integers(0, 30), batch=st.integers(1, 3), fft=st.booleans(), seed=seeds)
def test_values_are_chebval(n: int, extra: int, batch: int, fft: bool, seed: int) -> None:
    c = rng(seed).standard_normal((batch, n, 2))  # the series along dim -2
    m = n + extra
    got = cheb.values(t64(c), -2, m, fft=fft).numpy()
    want = npc.chebval(npc.chebpts1(m), np.moveaxis(c, -2, 0))  # (batch, 2, m)
    np.testing.assert_allclose(got, np.moveaxis(want, -1, -2), rtol=0, atol=1e-13 * max(1, n))


@given(n=sizes, t_shape=st.lists(st.integers(1, 4), max_size=2), seed=seeds)
def test_evaluate_is_chebval(n: int, t_shape: list[int], seed: int) -> None:
    r = rng(seed)
    c, t = r.standard_normal((2, n, 3)), r.uniform(-1, 1, t_shape)
    got = cheb.evaluate(t64(c), t64(t), 1).numpy()  # (2, *t_shape, 3)
    want = np.moveaxis(npc.chebval(t, c.transpose(1, 0, 2)), 1, -1)  # (2, 3, *t) -> (2, *t, 3)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * n)


@given(nx=sizes, ny=sizes, seed=seeds)
def test_evaluate_2d_is_chebgrid2d(nx: int, ny: int, seed: int) -> None:
    r = rng(seed)
    c, tx, ty = r.standard_normal((2, nx, ny)), r.uniform(-1, 1, 5), r.uniform(-1, 1, 4)
    got = cheb.evaluate_2d(t64(c), t64(tx), t64(ty)).numpy()
    want = np.stack([npc.chebgrid2d(tx, ty, ci) for ci in c])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("f", [np.exp, lambda t: np.sin(4 * t) / (1.2 + t), lambda t: np.abs(t - 0.1) ** 3])
@pytest.mark.parametrize("m", [1, 2, 7, 32, 65, 300])
def test_coefficients_are_chebinterpolate(f: Callable[[Arr], Arr], m: int) -> None:
    want = npc.chebinterpolate(f, m - 1)
    for fft in (True, False):
        got = cheb.coefficients(t64(f(npc.chebpts1(m))), -1, fft=fft).numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * m)
    n = max(1, m // 2)  # truncation keeps the first terms
    got_n = Chebyshev(n).coefficients(t64(f(npc.chebpts1(m))))
    np.testing.assert_allclose(got_n.numpy(), want[:n], rtol=0, atol=1e-14 * m)


@given(n=sizes, extra=st.integers(0, 20), fft=st.booleans(), seed=seeds)
def test_round_trip(n: int, extra: int, fft: bool, seed: int) -> None:
    c = t64(rng(seed).standard_normal((3, n, 2)))
    m = n + extra
    back = cheb.coefficients(cheb.values(c, 1, m, fft=fft), 1, n, fft=not fft)
    torch.testing.assert_close(back, c, rtol=0, atol=1e-13)
    v = t64(rng(seed + 1).standard_normal((n, 2)))  # values along dim 0
    torch.testing.assert_close(cheb.values(cheb.coefficients(v, 0, fft=fft), 0, fft=fft), v, rtol=0, atol=1e-13)


@pytest.mark.parametrize("fft", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_dtypes(dtype: torch.dtype, fft: bool) -> None:
    n, m = 17, 33
    c = decaying(rng(0), 4, n)
    v = cheb.values(torch.tensor(c, dtype=dtype), -1, m, fft=fft)
    assert v.dtype == dtype
    tol = {torch.float64: 1e-13, torch.float32: 5e-6, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    want = npc.chebval(npc.chebpts1(m), c.T)
    np.testing.assert_allclose(v.double().numpy(), want, rtol=0, atol=tol)
    back = cheb.coefficients(v, -1, n, fft=fft)
    assert back.dtype == dtype
    np.testing.assert_allclose(back.double().numpy(), c, rtol=0, atol=tol)
    assert cheb.evaluate(torch.tensor(c, dtype=dtype), torch.zeros(3, dtype=dtype)).dtype == dtype


def test_complex_and_integer_inputs_are_rejected() -> None:
    with pytest.raises(StructureError, match="real floating"):
        cheb.values(torch.zeros(4, dtype=torch.complex64))
    with pytest.raises(StructureError, match="holds real values"):
        Field(torch.zeros(4, dtype=torch.complex64), (Chebyshev(4),))
    with pytest.raises(StructureError, match="points"):
        cheb.values(torch.zeros(4), -1, 3)
    with pytest.raises(StructureError, match="size"):
        cheb.coefficients(torch.zeros(4), -1, 5)


def test_transforms_are_differentiable() -> None:
    g = torch.Generator().manual_seed(0)
    c = torch.randn(2, 5, dtype=F64, generator=g, requires_grad=True)
    t = torch.rand(4, dtype=F64, generator=g) * 2 - 1
    s = Chebyshev(5)
    for fft in (True, False):
        assert torch.autograd.gradcheck(lambda x: cheb.values(x, -1, 9, fft=fft), (c,))  # noqa: B023
        assert torch.autograd.gradcheck(lambda x: cheb.coefficients(x, -1, 3, fft=fft), (c,))  # noqa: B023
    assert torch.autograd.gradcheck(lambda x: cheb.evaluate(x, t), (c,))
    assert torch.autograd.gradcheck(lambda x: kernels.softmax(s, x, -1), (c,))
    assert torch.autograd.gradcheck(lambda x: s.fmap(torch.tanh, x, -1), (c,))
    assert torch.autograd.gradcheck(lambda x: s.zip_with(torch.mul, x, x.flip(0), -1), (c,))


# ---- integrals, metric, derivative ----------------------------------------------------------


@given(n=sizes, seed=seeds)
def test_counit_is_the_integral(n: int, seed: int) -> None:
    c = rng(seed).standard_normal((3, n))
    got = Chebyshev(n).counit(t64(c), -1, REAL).numpy()
    np.testing.assert_allclose(got, [integral(ci) for ci in c], rtol=1e-13, atol=1e-13)
    w = cheb.integral_weights(n).numpy()
    x, q = gauss(n + 2)
    np.testing.assert_allclose(w, q @ npc.chebvander(x, n - 1), rtol=0, atol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 33])
def test_metric_is_the_gram_matrix(n: int) -> None:
    w = cheb.metric(n).numpy()
    x, q = gauss(n + 1)  # exact for degree 2n + 1 >= 2n - 2
    v = npc.chebvander(x, n - 1)
    np.testing.assert_allclose(w, v.T @ (q[:, None] * v), rtol=0, atol=1e-14)
    # the design source's closed form where it is defined (n + m even)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    even = (i + j) % 2 == 0
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 where n + m is odd
        seed_form = 2 * (1 - i**2 - j**2) / ((1 - (i + j) ** 2) * (1 - (j - i) ** 2))
    np.testing.assert_allclose(w[even], seed_form[even], rtol=1e-14)
    assert (w[~even] == 0).all()
    lf = cheb.metric_factor(n).numpy()
    np.testing.assert_allclose(lf @ lf.T, w, rtol=0, atol=1e-14)
    assert np.allclose(lf, np.tril(lf))


@given(n=sizes, order=st.integers(0, 4), seed=seeds)
def test_derivative_is_chebder(n: int, order: int, seed: int) -> None:
    c = rng(seed).standard_normal((n, 2))  # series along dim 0
    got = Chebyshev(n).derivative(t64(c), 0, order).numpy()
    want = np.zeros_like(c)
    d = npc.chebder(c, order, axis=0)
    want[: d.shape[0]] = d
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-10)


# ---- the structure ------------------------------------------------------------------------------


def test_nominal_axes() -> None:
    class X(Chebyshev):
        size = 16

    assert X() == X() and hash(X()) == hash(X()) and X().size == 16
    assert X() != Chebyshev(16) and Chebyshev(16) == Chebyshev(16) and Chebyshev(16) != Vector(16)
    assert repr(X()) == "X(16)"
    assert Chebyshev.sized(8, "Y") is Chebyshev.sized(8, "Y") and Chebyshev.sized(8, "Y")() == Chebyshev.sized(8, "Y")()
    for bad in (lambda: Chebyshev(), lambda: Chebyshev(0), lambda: X(8)):
        with pytest.raises(StructureError):
            bad()
    with pytest.raises(StructureError, match="positive int"):
        type("Bad", (Chebyshev,), {"size": 0})


@given(n=sizes, seed=seeds)
def test_pure_is_a_constant_function(n: int, seed: int) -> None:
    x = t64(rng(seed).standard_normal((2, 3)))
    s = Chebyshev(n)
    c = s.pure(x, 1)  # (2, n, 3)
    t = t64(rng(seed).uniform(-1, 1, 5))
    torch.testing.assert_close(cheb.evaluate(c, t, 1), x.unsqueeze(1).expand(2, 5, 3), rtol=0, atol=1e-14)
    torch.testing.assert_close(kernels.mass(s, x), torch.full((2,), 2.0, dtype=F64))
    torch.testing.assert_close(kernels.generic_mass(s, x), kernels.mass(s, x))


@given(n=sizes, seed=seeds)
def test_zip_with_mul_is_truncated_chebmul(n: int, seed: int) -> None:
    r = rng(seed)
    a, b = r.standard_normal((2, n)), r.standard_normal((2, n))
    got = Chebyshev(n).zip_with(torch.mul, t64(a), t64(b), -1).numpy()
    want = np.stack([npc.chebmul(ai, bi)[:n] for ai, bi in zip(a, b, strict=True)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * n)


@given(n=sizes, seed=seeds)
def test_fmap_is_a_functor(n: int, seed: int) -> None:
    c = t64(rng(seed).standard_normal((2, n)))
    s = Chebyshev(n)
    torch.testing.assert_close(s.fmap(lambda v: v, c, -1), c, rtol=0, atol=1e-13)
    both = s.fmap(lambda v: torch.tanh(torch.sin(v)), c, -1)
    torch.testing.assert_close(s.fmap(torch.tanh, s.fmap(torch.sin, c, -1), -1), both, rtol=0, atol=1e-13)


def test_fmap_relu_converges() -> None:
    """The design source's ReLU through the grid approaches ``relu(p(t))`` as ``n`` grows."""
    t = np.linspace(-1, 1, 2001)
    p = lambda s: np.sin(3 * s) + 0.2 * s  # noqa: E731 -- one-line reference function
    errors = []
    for n in (8, 16, 32, 64, 128):
        c = cheb.coefficients(t64(p(npc.chebpts1(n))), -1)  # p as an n-term series
        got = cheb.evaluate(Chebyshev(n).fmap(torch.relu, c, -1), t64(t)).numpy()
        errors.append(np.sqrt(np.mean((got - np.maximum(p(t), 0)) ** 2)))
    assert all(b < a for a, b in itertools.pairwise(errors)), errors
    assert errors[-1] < errors[0] / 10 and errors[-1] < 5e-3, errors


def _faithful(p: Arr) -> Arr:
    """Coefficients of ``e^p / ∫ e^p`` to 128 terms (``∫`` by ``scipy.integrate.quad``)."""
    total, _ = scipy.integrate.quad(lambda s: math.exp(npc.chebval(s, p)), -1, 1, epsabs=0, epsrel=1e-12)
    return npc.chebinterpolate(lambda t: np.exp(npc.chebval(t, p)), 127) / total  # type: ignore[no-any-return]


@pytest.mark.parametrize("n", [4, 12, 24])
def test_softmax_is_the_continuous_softmax(n: int) -> None:
    """Integrates to 1, and is within twice the truncation tail (aliasing) of ``e^p / ∫ e^p``."""
    p = decaying(rng(n), 3, n, rate=0.5) * 2
    s = Chebyshev(n)
    got = kernels.softmax(s, t64(p), -1)
    torch.testing.assert_close(s.counit(got, -1, REAL), torch.ones(3, dtype=F64), rtol=0, atol=1e-13)
    t = np.linspace(-1, 1, 201)
    for row, pi in zip(got, p, strict=True):
        ref = _faithful(pi)
        tail = np.abs(ref[n:]).sum()
        err = np.abs(cheb.evaluate(row, t64(t)).numpy() - npc.chebval(t, ref)).max()
        assert err <= 3 * tail + 1e-13, (err, tail)
    # shifting the function by a constant does not change it; along another axis too
    shifted = p.copy()
    shifted[:, 0] += 30.0
    torch.testing.assert_close(kernels.softmax(s, t64(shifted), -1), got, rtol=0, atol=1e-12)
    torch.testing.assert_close(kernels.softmax(s, t64(p.T), 0), got.T, rtol=0, atol=1e-14)


def test_softmax_normaliser_is_a_positive_quadrature() -> None:
    """``∫`` of the truncated interpolant is ``Σ ρ_j v_j`` with every ``ρ_j > 0``: the normaliser never vanishes."""
    for n in (1, 2, 3, 5, 16, 61, 200):
        m = 2 * n - 1
        rho = cheb.coefficients(torch.eye(m, dtype=F64), -1, n) @ cheb.integral_weights(n)
        assert (rho > 0).all() and abs(rho.sum().item() - 2) < 1e-12


def test_coefficient_softmax_sums_rows_to_one() -> None:
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 5, 7, dtype=F64, generator=g)
    out = CoefficientSoftmax(0.5)(Field(scores, (Vector(5), Chebyshev(7)))).tensor
    e = np.exp(0.5 * scores.numpy())
    np.testing.assert_allclose(out.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(out.sum(-1).numpy(), 1.0, rtol=1e-14)
    assert cannot_lower(CoefficientSoftmax(), REAL) is not None


def test_other_rings_are_rejected() -> None:
    s, x = Chebyshev(3), torch.zeros(2, 3)
    for op in (lambda: s.counit(x, -1, MAX_PLUS), lambda: s.contract(x, x.T, MAX_PLUS)):
        with pytest.raises(StructureError, match="real ring"):
            op()


# ---- fused kernels against the generic definitions and numpy --------------------------------


@given(n=sizes, m=st.integers(1, 3), k=st.integers(1, 3), seed=seeds)
def test_contract_is_the_integral_of_the_product(n: int, m: int, k: int, seed: int) -> None:
    r = rng(seed)
    a, b = r.standard_normal((m, n)), r.standard_normal((n, k))
    s = Chebyshev(n)
    fused = s.contract(t64(a), t64(b), REAL).numpy()
    generic = kernels.generic_contract(s, t64(a), t64(b), REAL).numpy()
    exact = np.array([[integral(npc.chebmul(a[i], b[:, j])) for j in range(k)] for i in range(m)])
    truncated = np.array([[integral(npc.chebmul(a[i], b[:, j])[:n]) for j in range(k)] for i in range(m)])
    np.testing.assert_allclose(fused, exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(generic, truncated, rtol=1e-12, atol=1e-12)
    # the fusion law holds exactly when the product fits in n terms
    h = (n + 1) // 2
    a[:, h:], b[h:, :] = 0, 0
    torch.testing.assert_close(
        s.contract(t64(a), t64(b), REAL), kernels.generic_contract(s, t64(a), t64(b), REAL), rtol=1e-12, atol=1e-12
    )


@given(n=sizes, seed=seeds)
def test_affine_is_fused_contract(n: int, seed: int) -> None:
    r = rng(seed)
    x, w, b = r.standard_normal((2, 3, n)), r.standard_normal((4, n)), r.standard_normal(4)
    s = Chebyshev(n)
    got = s.affine(t64(x), t64(w), t64(b), REAL).numpy()
    want = np.array([[[integral(npc.chebmul(xi, wo)) for wo in w] for xi in xb] for xb in x]) + b
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        s.affine(t64(x), t64(w), None, REAL), kernels.affine_by_contract(s, t64(x), t64(w), None, REAL)
    )
    wb = t64(r.standard_normal((3, 4, n)))  # one weight per position of x's axis 1: the generic path
    want_b = torch.einsum("bik,kl,iol->bio", t64(x), _gram(s), wb)
    torch.testing.assert_close(s.affine(t64(x), wb, None, REAL), want_b)


@pytest.mark.parametrize("n", [1, 2, 9])
def test_layer_norm_normalises_the_function(n: int) -> None:
    r = rng(n)
    x, weight, bias = r.standard_normal((4, n)), decaying(r, n), r.standard_normal(n)
    got = kernels.layer_norm(Chebyshev(n), t64(x), t64(weight), t64(bias), 1e-5).numpy()
    q, wq = gauss(2 * n)
    for xi, gi in zip(x, got, strict=True):
        mean = integral(xi) / 2
        var = wq @ (npc.chebval(q, xi) - mean) ** 2 / 2
        y = xi.copy()
        y[0] -= mean
        y /= math.sqrt(var + 1e-5)
        np.testing.assert_allclose(gi, npc.chebmul(y, weight)[:n] + bias, rtol=1e-10, atol=1e-10)
    # with weight pure 1 and no bias: mean 0 and variance ~1 as functions
    if n > 1:
        for yi in kernels.layer_norm(Chebyshev(n), t64(x), None, None, 0.0).numpy():
            np.testing.assert_allclose(integral(yi), 0, atol=1e-12)
            np.testing.assert_allclose(wq @ npc.chebval(q, yi) ** 2 / 2, 1, rtol=1e-12)


# ---- attention and a Transformer layer ----------------------------------------------------------


def _dense_softmax(scores: Tensor, n: int) -> Tensor:
    """Faithful softmax along the last axis via dense ``chebvander`` matrices (no FFT)."""
    m = 2 * n - 1
    v_m = t64(npc.chebvander(npc.chebpts1(m), m - 1))  # values = v_m @ c
    vals = torch.nn.functional.pad(scores, (0, m - n)) @ v_m.T
    e = torch.exp(vals - vals.amax(-1, keepdim=True))
    c = torch.linalg.solve(v_m, e.unsqueeze(-1)).squeeze(-1)
    w = t64(np.array([integral(np.eye(n)[k]) for k in range(n)]))
    return c[..., :n] / (c[..., :n] @ w).unsqueeze(-1)


def _fejer(m: int) -> tuple[Arr, Arr]:
    """The ``m`` first-kind points (increasing) and quadrature weights exact for degree ``< m``.

    Independent of the library: the weights solve the moment equations ``Σ_j ρ_j T_k(t_j) = ∫ T_k``.
    """
    t = np.sort(npc.chebpts1(m))
    moments = np.array([integral(np.eye(m)[k]) for k in range(m)])
    return t, np.linalg.solve(npc.chebvander(t, m - 1).T, moments)


def _quadrature_attention(scores_at: Callable[[Arr], Tensor], v: Tensor, n: int) -> Tensor:
    """Attention over Chebyshev keys: the quadrature of ``∫ e^{s(t)} v(t) dt / ∫ e^{s(t)} dt`` on ``2n - 1`` points.

    ``scores_at(V)`` gives the scores at the points for the keys' values ``V @ k``; ``v`` ``(..., n, g)`` coefficients.
    """
    t, rho = _fejer(2 * n - 1)
    vander = t64(npc.chebvander(t, n - 1))  # (m, n)
    logits = scores_at(vander) + t64(np.log(rho))
    return torch.softmax(logits, -1) @ (vander @ v)


def _dense_fmap(f: Callable[[Tensor], Tensor], x: Tensor, dim: int) -> Tensor:
    """``fmap f`` along ``dim`` via a dense ``chebvander`` matrix at ``chebpts1`` (no FFT)."""
    n = x.shape[dim]
    v = t64(npc.chebvander(npc.chebpts1(n), n - 1))
    vals = torch.movedim(v @ torch.movedim(x, dim, -2), -2, dim)
    return torch.movedim(torch.linalg.solve(v, torch.movedim(f(vals), dim, -2)), -2, dim)


def _gram(s: Structure) -> Tensor:
    if isinstance(s, Vector):
        return torch.eye(s.size, dtype=F64)
    x, q = gauss(s.size + 1)
    v = npc.chebvander(x, s.size - 1)
    return t64(v.T @ (q[:, None] * v))


@pytest.mark.parametrize("heads", [Chebyshev(6), Vector(6)])
@pytest.mark.parametrize("keys", [Chebyshev(7), Vector(7)])
def test_attention_with_chebyshev_axes_is_the_metric_formula(heads: Structure, keys: Structure) -> None:
    g = torch.Generator().manual_seed(1)
    q = Field(torch.randn(2, 5, 6, dtype=F64, generator=g), (Vector(5), heads))
    k = Field(torch.randn(2, 7, 6, dtype=F64, generator=g), (keys, heads))
    v = Field(torch.randn(2, 7, 3, dtype=F64, generator=g), (keys, Vector(3)))
    scale = 0.4
    scores = scale * q.tensor @ _gram(heads) @ k.tensor.mT  # (2, 5, 7)
    weights = _dense_softmax(scores, 7) if isinstance(keys, Chebyshev) else torch.softmax(scores, -1)
    want = weights @ _gram(keys) @ v.tensor
    # generic: the faithful softmax as a truncated series; fused over Chebyshev keys: its quadrature
    got = ap.attention(ScaledSoftmax(scale), q, k, v, fused=False)
    torch.testing.assert_close(got.tensor, want, rtol=1e-10, atol=1e-10)
    if isinstance(keys, Chebyshev):
        want = _quadrature_attention(lambda vd: scale * q.tensor @ _gram(heads) @ (vd @ k.tensor).mT, v.tensor, 7)
    got = ap.attention(ScaledSoftmax(scale), q, k, v, fused=True)
    torch.testing.assert_close(got.tensor, want, rtol=1e-10, atol=1e-10)
    if isinstance(keys, Chebyshev):
        got = ap.attention(CoefficientSoftmax(scale), q, k, v)
        torch.testing.assert_close(got.tensor, torch.softmax(scores, -1) @ _gram(keys) @ v.tensor)


def test_encoder_layer_with_vector_model_matches_a_dense_reference() -> None:
    """Post-norm encoder layer over a Chebyshev sequence and a Vector model, written out by hand.

    Everything nonlinear along the model axis -- attention for each query, the
    layer norms, the MLP's ReLU -- is ``fmap``-ed over the sequence, i.e. applied
    at each point of the sequence's grid, not to each coefficient row.
    """
    seq, d, hidden = Chebyshev(9), Vector(8), Vector(16)
    torch.manual_seed(0)
    layer = EncoderLayer(d, hidden, 1, dtype=F64)
    x = torch.randn(3, 9, 8, dtype=F64, requires_grad=True)
    got = layer(Field(x, (seq, d))).tensor

    a = layer.self_attn

    def lin(t: Tensor, w: Tensor, b: Tensor) -> Tensor:  # affine at each point: the bias is a constant function
        return _dense_fmap(lambda u: torch.nn.functional.linear(u, w, b), t, -2)

    qkv = lin(x, a.in_proj_weight, a.in_proj_bias)
    q, k, v = qkv.split(8, -1)

    def attend(qq: Tensor) -> Tensor:  # softmax along the keys' function, by its quadrature (the fused lowering)
        return _quadrature_attention(lambda vd: qq @ (vd @ k).mT / math.sqrt(8), v, 9)

    def norm(i: int, t: Tensor) -> Tensor:
        n = getattr(layer, f"norm{i}")
        return _dense_fmap(lambda u: torch.nn.functional.layer_norm(u, (8,), n.weight, n.bias), t, -2)

    att = lin(_dense_fmap(attend, q, -2), a.out_proj.weight, a.out_proj.bias)
    h = norm(1, x + att)
    h1 = lin(h, layer.linear1.weight, layer.linear1.bias)
    ff = lin(_dense_fmap(torch.relu, h1, -2), layer.linear2.weight, layer.linear2.bias)
    want = norm(2, h + ff)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    (got * torch.randn_like(got)).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


@pytest.mark.parametrize("normalise", [None, CoefficientSoftmax(0.3)])
def test_encoder_layer_with_chebyshev_model_trains(normalise: CoefficientSoftmax | None) -> None:
    """A Funcformer layer (Chebyshev sequence and model) runs forward/backward and can fit a target."""
    seq, d = Chebyshev(8), Chebyshev(6)
    torch.manual_seed(0)
    layer = EncoderLayer(d, Chebyshev(12), 1, normalise=normalise, norm_first=True, dtype=F64)
    x = torch.randn(4, 8, 6, dtype=F64)
    target = 0.5 * x.flip(-1)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((layer(Field(x, (seq, d))).tensor - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = [p.grad for p in layer.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu() -> None:
    c = torch.tensor(decaying(rng(0), 3, 20, 5))
    s = Chebyshev(20)
    for fft in (True, False):
        got = cheb.values(c.cuda(), -2, 39, fft=fft).cpu()
        torch.testing.assert_close(got, cheb.values(c, -2, 39, fft=fft), rtol=0, atol=1e-12)
        back = cheb.coefficients(got.cuda(), -2, 20, fft=fft).cpu()
        torch.testing.assert_close(back, c, rtol=0, atol=1e-12)
    x = c.mT.contiguous()
    torch.testing.assert_close(kernels.softmax(s, x.cuda(), -1).cpu(), kernels.softmax(s, x, -1))
    torch.testing.assert_close(s.contract(x.cuda(), c.cuda(), REAL).cpu(), s.contract(x, c, REAL))


def test_compiles_fullgraph() -> None:
    """``torch.compile(fullgraph=True)`` traces the structure (cached constants included) and agrees with eager."""
    seq, d = Chebyshev(8), Chebyshev(6)
    torch.manual_seed(0)
    layer = EncoderLayer(d, Chebyshev(12), 1, norm_first=True, dtype=F64)
    x = Field(torch.randn(2, 8, 6, dtype=F64), (seq, d))

    def run(t: Tensor) -> Tensor:
        y = layer(Field(t, (seq, d))).tensor
        return cheb.values(y + cheb.derivative(y, -1), -2, 20, fft=True)

    compiled = torch.compile(run, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x.tensor), run(x.tensor), rtol=1e-12, atol=1e-12)


def test_linear_bias_is_a_constant_function_of_the_outer_axis() -> None:
    """``linear`` at every point ``s`` of an outer Chebyshev axis: ``W x(s) + b``, checked with chebval."""
    torch.manual_seed(0)
    seq, d_in, d_out = Chebyshev(7), Vector(3), Vector(4)
    x = torch.randn(2, 7, 3, dtype=F64)
    w, b = torch.randn(4, 3, dtype=F64), torch.randn(4, dtype=F64)
    got = linear(Field(w, (d_out, d_in)), Field(b, (d_out,)), Field(x, (seq, d_in))).tensor
    s = np.linspace(-1, 1, 11)
    x_at = npc.chebval(s, np.moveaxis(x.numpy(), 1, 0))  # (2, 3, 11): x(s)
    want = np.einsum("oi,bis->bos", w.numpy(), x_at) + b.numpy()[:, None]
    np.testing.assert_allclose(npc.chebval(s, np.moveaxis(got.numpy(), 1, 0)), want, rtol=1e-12, atol=1e-12)


def test_lowered_softmax_weights_are_positive_where_the_truncated_series_is_not() -> None:
    """Chebyshev keys lower through Fejér quadrature: weights ``ρ_j e^{s(t_j)} > 0`` (all ``ρ_j > 0``).

    The truncated series of ``e^s`` (the generic definition's) dips below zero for rough scores.
    """
    for m in (1, 2, 3, 31, 63, 255):
        rho = cheb.quadrature_weights(m)
        _, want = _fejer(m)
        np.testing.assert_allclose(rho.numpy(), want, rtol=1e-10, atol=1e-14)
        assert bool((rho > 0).all())
    n = 16
    scores = torch.randn(200, n, dtype=F64, generator=torch.Generator().manual_seed(0))
    truncated = kernels.softmax(Chebyshev(n), scores, -1)  # coefficients of the truncated series
    grid = torch.linspace(-1, 1, 401, dtype=F64)
    assert float(cheb.evaluate(truncated, grid, -1).min()) < 0
    q = ap.attention(
        ScaledSoftmax(),
        Field(torch.ones(1, 1, dtype=F64), (Vector(1), Vector(1))),
        Field(scores.unsqueeze(-1), (Chebyshev(n), Vector(1))),
        Field(Chebyshev(n).pure(torch.ones(200, 1, dtype=F64), -2), (Chebyshev(n), Vector(1))),
    )
    # the fused weights are positive and integrate to one: attending to the constant function 1 gives 1
    torch.testing.assert_close(q.tensor, torch.ones_like(q.tensor))
