"""Continuous distributions as weighted point sets, against closed forms and ``torch.distributions``.

Tolerances (float64): Gauss–Hermite polynomial moments of degree <= 2n-1 to 1e-12 relative
(exact up to rounding); E[e^X] of a normal / mixture to 1e-12 with n = 20; Gauss–Legendre in the
CDF: Uniform exact (1e-12), Exponential / Laplace / LogNormal mean and variance to 1e-3 relative
with n = 256; sampling (Gamma, Beta) to 5 standard errors with n = 20000.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import distributions as td

from applicative import Field, StructureError, counit, pointwise
from instances import Distribution, gaussian_mixture, normal_points, quadrature
from instances.continuous import hermite_rule, rule

F64 = torch.float64


def _t(*v: float) -> torch.Tensor:
    return torch.tensor(v, dtype=F64)


def expect(x: Field[Distribution], f: object = None) -> np.ndarray:
    """``E[f(X)]`` by the structure's counit."""
    y = x if f is None else pointwise(f, x)  # type: ignore[arg-type]
    return counit(y).tensor.numpy()


def _normal_moment(mu: float, sigma: float, k: int) -> float:
    """E[(mu + sigma Z)^k] = Σ_j C(k, j) mu^(k-j) sigma^j E[Z^j], E[Z^j] = (j-1)!! for even j."""
    ez = [0.0 if j % 2 else float(np.prod(np.arange(j - 1, 0, -2))) if j else 1.0 for j in range(k + 1)]
    return sum(math.comb(k, j) * mu ** (k - j) * sigma**j * ez[j] for j in range(k + 1))


def test_hermite_rule_is_a_probability_and_matches_numpy() -> None:
    z, p = hermite_rule(7)
    zn, wn = np.polynomial.hermite_e.hermegauss(7)
    np.testing.assert_allclose(z.numpy(), zn)
    assert p.sum().item() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(p.numpy(), wn / math.sqrt(2 * math.pi))


@pytest.mark.parametrize("n", [1, 3, 8])
def test_gauss_hermite_is_exact_for_polynomials(n: int) -> None:
    mu, sigma = _t(0.3, -1.2), _t(0.7, 2.0)
    x = normal_points(mu, sigma, n)
    for k in range(2 * n):  # degree <= 2n - 1: exact
        got = expect(x, lambda t, k=k: t**k)
        want = [_normal_moment(m, s, k) for m, s in zip(mu.tolist(), sigma.tolist(), strict=True)]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if n < 8:  # degree 2n is not: the rule must be off (so the test can fail)
        got = expect(x, lambda t: t ** (2 * n))
        want = [_normal_moment(m, s, 2 * n) for m, s in zip(mu.tolist(), sigma.tolist(), strict=True)]
        assert not np.allclose(got, want, rtol=1e-6)


def test_normal_smooth_functions() -> None:
    mu, sigma = _t(0.5, -1.0, 0.0), _t(1.0, 0.3, 0.8)
    x = quadrature(td.Normal(mu, sigma), 20)
    np.testing.assert_allclose(expect(x, torch.exp), torch.exp(mu + sigma**2 / 2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(expect(x, torch.cos), (torch.cos(mu) * torch.exp(-(sigma**2) / 2)).numpy(), rtol=1e-12)


def test_gaussian_mixture_against_torch() -> None:
    rng = np.random.default_rng(0)
    w = torch.from_numpy(rng.dirichlet(np.ones(3), size=4))  # batch 4, K = 3
    mu, sigma = torch.from_numpy(rng.normal(size=(4, 3))), torch.from_numpy(rng.uniform(0.2, 1.5, (4, 3)))
    mix = td.MixtureSameFamily(td.Categorical(probs=w), td.Normal(mu, sigma))
    x = quadrature(mix, 10)
    assert x.tensor.shape == (4, 30) and rule(mix) == "gauss-hermite"
    m = expect(x)
    np.testing.assert_allclose(m, mix.mean.numpy(), rtol=1e-12)
    var = counit(Field((x.tensor - torch.from_numpy(m).unsqueeze(-1)) ** 2, x.axes)).tensor.numpy()
    np.testing.assert_allclose(var, mix.variance.numpy(), rtol=1e-12)
    e_exp = (w * torch.exp(mu + sigma**2 / 2)).sum(-1)
    np.testing.assert_allclose(expect(quadrature(mix, 20), torch.exp), e_exp.numpy(), rtol=1e-12)  # n = 10: ~4e-11
    direct = gaussian_mixture(w, mu, sigma, 10)
    torch.testing.assert_close(direct.tensor, x.tensor)
    torch.testing.assert_close(direct.structures[0].probs, x.structures[0].probs)


@pytest.mark.parametrize(
    ("dist", "rtol"),
    [
        (td.Uniform(_t(-1.0, 2.0), _t(3.0, 2.5)), 1e-12),
        (td.Exponential(_t(0.5, 2.0)), 1e-3),
        (td.Laplace(_t(0.3), _t(1.5)), 1e-3),
        (td.LogNormal(_t(0.0), _t(0.5)), 1e-3),
    ],
    ids=["uniform", "exponential", "laplace", "lognormal"],
)
def test_gauss_legendre_in_the_cdf(dist: td.Distribution, rtol: float) -> None:
    assert rule(dist) == "gauss-legendre-cdf"
    x = quadrature(dist, 256)
    m = expect(x)
    np.testing.assert_allclose(m, dist.mean.numpy(), rtol=rtol)
    var = counit(Field((x.tensor - torch.from_numpy(m).unsqueeze(-1)) ** 2, x.axes)).tensor.numpy()
    np.testing.assert_allclose(var, dist.variance.numpy(), rtol=rtol)


def test_exponential_e_exp_closed_form() -> None:
    """E[e^{tX}] = λ / (λ - t) for X ~ Exponential(λ), t < λ."""
    lam = _t(3.0)
    x = quadrature(td.Exponential(lam), 256)
    np.testing.assert_allclose(expect(x, torch.exp), (lam / (lam - 1)).numpy(), rtol=1e-3)


@pytest.mark.parametrize(
    "dist", [td.Gamma(_t(2.0, 5.0), _t(1.0, 3.0)), td.Beta(_t(2.0), _t(3.0))], ids=["gamma", "beta"]
)
def test_sampling_rule_within_standard_errors(dist: td.Distribution) -> None:
    assert rule(dist) == "sampling"
    n = 20000
    x = quadrature(dist, n, seed=3)
    se = (dist.variance / n).sqrt().numpy()
    assert (np.abs(expect(x) - dist.mean.numpy()) < 5 * se).all()
    torch.testing.assert_close(quadrature(dist, n, seed=3).tensor, x.tensor)  # seeded: the same points


def test_sampling_leaves_the_global_generator_alone() -> None:
    torch.manual_seed(11)
    before = torch.rand(3)
    torch.manual_seed(11)
    quadrature(td.Gamma(_t(2.0), _t(1.0)), 10, seed=0)
    torch.testing.assert_close(torch.rand(3), before)


def test_float32_stays_float32() -> None:
    x = quadrature(td.Normal(torch.tensor(0.0), torch.tensor(1.0)), 5)
    assert x.tensor.dtype == torch.float32 and x.structures[0].probs.dtype == torch.float32


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: quadrature(td.MultivariateNormal(torch.zeros(2), torch.eye(2)), 4), "scalar distributions only"),
        (lambda: quadrature(td.Normal(0.0, 1.0), 0), "int >= 1"),
        (lambda: normal_points(_t(0.0), _t(-1.0), 4), "scales > 0"),
        (lambda: gaussian_mixture(_t(0.5, 0.6), _t(0.0, 1.0), _t(1.0, 1.0), 4), "sum to 1"),
    ],
    ids=["event shape", "points", "scale", "weights"],
)
def test_bad_input_is_refused(call: object, match: str) -> None:
    with pytest.raises(StructureError, match=match):
        call()  # type: ignore[operator]
