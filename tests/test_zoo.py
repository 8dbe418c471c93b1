"""The zoo (``models.zoo``) against independent references: torch/numpy least squares, a numpy Newton solver.

Every reference is built without the library: Gram matrices of Chebyshev series from
``numpy.polynomial.chebyshev`` (``chebmul`` + ``chebint``), integrals by Gauss--Legendre quadrature,
the per-tree design matrix by walking the nested tuples' intervals in plain Python, and penalised
logistic regression by Newton's method (IRLS) in numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.polynomial.chebyshev as npc
import numpy.polynomial.legendre as npl
import pytest
import torch
from numpy.typing import NDArray
from torch import Tensor

from applicative import MLP, Field, Linear
from instances import Chebyshev, NodeAlgebra, Tree, Vector, tree_field
from models import (
    LinearRegression,
    LogisticRegression,
    MLPClassifier,
    MLPRegressor,
    design_matrix,
    fit_lbfgs,
    fit_least_squares,
    log_loss,
    squared_error,
    weight_norm2,
)

F64 = torch.float64
Arr = NDArray[np.float64]
LAM = 1e-3  # the tiny L2 penalty: objective = mean log loss + LAM/2 ‖w‖² (in the input metric)


pytestmark = pytest.mark.usefixtures("one_thread")


# ---- independent references ----------------------------------------------------------------


def cheb_gram(n: int) -> Arr:
    """``G_jk = ∫_{-1}^{1} T_j T_k`` from numpy's series product and antiderivative."""
    g = np.empty((n, n))
    for j in range(n):
        for k in range(n):
            p = npc.chebint(npc.chebmul(np.eye(n)[j], np.eye(n)[k]), lbnd=-1)
            g[j, k] = npc.chebval(1.0, p)
    return g


def newton_logistic(phi: Arr, y: Arr, lam: float, gram: Arr, iters: int = 50) -> tuple[Arr, float]:
    """``argmin mean(log(1 + e^z) - y z) + lam/2 wᵀ G w``, ``z = Φ w + b`` (bias unpenalised), by Newton."""
    n, d = phi.shape
    a = np.hstack([phi, np.ones((n, 1))])
    pen = np.zeros((d + 1, d + 1))
    pen[:d, :d] = lam * gram
    theta = np.zeros(d + 1)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(a @ theta)))
        grad = a.T @ (p - y) / n + pen @ theta
        hess = (a.T * (p * (1 - p))) @ a / n + pen
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-14:
            break
    assert np.abs(grad).max() < 1e-10, "reference Newton did not converge"
    return theta[:d], float(theta[d])


def bias(model: Linear[Any, Any]) -> Tensor:
    assert model.bias is not None
    return model.bias.detach()


def sigmoid(z: Arr) -> Arr:
    return 1.0 / (1.0 + np.exp(-z))


# ---- linear regression ------------------------------------------------------------------------


def test_linear_regression_on_vectors_equals_lstsq_on_the_raw_data() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 6, generator=g, dtype=F64)
    y = x @ torch.randn(6, 3, generator=g, dtype=F64) + 0.5 + 0.1 * torch.randn(200, 3, generator=g, dtype=F64)
    ref = torch.linalg.lstsq(torch.cat([x, torch.ones(200, 1, dtype=F64)], 1), y).solution
    xf, yf = Field(x, (Vector(6),)), Field(y, (Vector(3),))

    closed = fit_least_squares(LinearRegression(Vector(6), Vector(3), dtype=F64), xf, yf)
    torch.testing.assert_close(closed.weight.detach(), ref[:6].T, rtol=0, atol=1e-12)
    torch.testing.assert_close(bias(closed), ref[6], rtol=0, atol=1e-12)

    model = LinearRegression(Vector(6), Vector(3), dtype=F64)  # by gradient descent (L-BFGS)
    fit_lbfgs(model, lambda: squared_error(model(xf), yf))
    torch.testing.assert_close(model.weight.detach(), ref[:6].T, rtol=0, atol=1e-7)
    torch.testing.assert_close(bias(model), ref[6], rtol=0, atol=1e-7)


def test_linear_regression_on_functions_learns_the_least_squares_functional() -> None:
    """Inputs are Chebyshev series; the weight is a function ``w`` and ``ŷ = ∫ w(t) x(t) dt + b``."""
    n, m = 7, 300
    rng = np.random.default_rng(1)
    gram = cheb_gram(n)
    c = rng.standard_normal((m, n))
    hidden = rng.standard_normal(n)
    y = c @ gram @ hidden - 0.3 + 0.05 * rng.standard_normal(m)
    sol = np.linalg.lstsq(np.hstack([c @ gram, np.ones((m, 1))]), y, rcond=None)[0]  # numpy's own least squares
    xf, yf = Field(torch.tensor(c), (Chebyshev(n),)), Field(torch.tensor(y)[:, None], (Vector(1),))

    closed = fit_least_squares(LinearRegression(Chebyshev(n), Vector(1), dtype=F64), xf, yf)
    model = LinearRegression(Chebyshev(n), Vector(1), dtype=F64)
    fit_lbfgs(model, lambda: squared_error(model(xf), yf))
    for fitted, tol in ((closed, 1e-10), (model, 1e-7)):
        np.testing.assert_allclose(fitted.weight.detach().numpy()[0], sol[:n], rtol=0, atol=tol)
        np.testing.assert_allclose(bias(fitted).numpy()[0], sol[n], rtol=0, atol=tol)

    # the learned map is the functional f ↦ ∫ w f + b: check it on new functions by Gauss-Legendre quadrature
    t, q = npl.leggauss(32)
    new = rng.standard_normal((5, n))
    integral = (npc.chebval(t, sol[:n]) * npc.chebval(t, new.T)) @ q + sol[n]
    pred = closed(Field(torch.tensor(new), (Chebyshev(n),))).tensor[:, 0].detach().numpy()
    np.testing.assert_allclose(pred, integral, rtol=0, atol=1e-10)


# ---- logistic regression ----------------------------------------------------------------------


def _fit_logistic(model: LogisticRegression[Any, Vector], xf: Field[Any], labels: Tensor) -> None:
    fit_lbfgs(model, lambda: log_loss(model(xf), labels) + LAM / 2 * weight_norm2(model))


def test_logistic_regression_classifies_functions_like_a_newton_solver() -> None:
    """Label of ``f`` ~ Bernoulli(σ(∫ f g - 0.2)) for a hidden function ``g``; inputs are Chebyshev series."""
    n, m = 8, 400
    rng = np.random.default_rng(2)
    gram = cheb_gram(n)
    c = rng.standard_normal((m, n)) / (1 + np.arange(n))
    z = c @ gram @ (2.0 * rng.standard_normal(n)) - 0.2
    labels = (rng.random(m) < sigmoid(z)).astype(np.float64)
    w_ref, b_ref = newton_logistic(c @ gram, labels, LAM, gram)

    model = LogisticRegression(Chebyshev(n), Vector(1), dtype=F64)
    xf = Field(torch.tensor(c), (Chebyshev(n),))
    _fit_logistic(model, xf, torch.tensor(labels))
    p = model.probabilities(xf)[:, 0].detach().numpy()
    p_ref = sigmoid(c @ gram @ w_ref + b_ref)
    assert np.abs(p - p_ref).max() < 1e-6
    np.testing.assert_allclose(model.weight.detach().numpy()[0], w_ref, rtol=0, atol=1e-5)
    # and on functions it never saw
    new = rng.standard_normal((50, n))
    p_new = model.probabilities(Field(torch.tensor(new), (Chebyshev(n),)))[:, 0].detach().numpy()
    assert np.abs(p_new - sigmoid(new @ gram @ w_ref + b_ref)).max() < 1e-6


def random_tree(rng: np.random.Generator, depth: int, max_depth: int) -> object:
    if depth == max_depth or (depth > 0 and rng.random() < 0.45):
        return float(rng.standard_normal())
    return (random_tree(rng, depth + 1, max_depth), random_tree(rng, depth + 1, max_depth))


def cell_integrals(tree: object, levels: int) -> Arr:
    """``∫ x`` over each of the ``2^levels`` dyadic cells of [0, 1), ``x`` piecewise constant on the tree's leaves."""
    out = np.zeros(2**levels)

    def walk(t: object, lo: float, width: float) -> None:
        if isinstance(t, tuple):
            walk(t[0], lo, width / 2)
            walk(t[1], lo + width / 2, width / 2)
            return
        for j in range(2**levels):
            a, b = j / 2**levels, (j + 1) / 2**levels
            out[j] += float(t) * max(0.0, min(b, lo + width) - max(a, lo))  # type: ignore[arg-type]

    walk(tree, 0.0, 1.0)
    return out


def test_logistic_regression_on_ragged_trees_like_a_newton_solver() -> None:
    """Trees (MEAN: ``∫`` on [0, 1)) of depth up to 4 against a weight on the complete tree of depth 3."""
    levels, m = 3, 300
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 0, levels + 1) for _ in range(m)]
    phi = np.stack([cell_integrals(t, levels) for t in trees])  # the independent design matrix
    gram = np.eye(2**levels) / 2**levels  # ∫ w² for w constant on each cell
    z = phi @ (3.0 * rng.standard_normal(2**levels)) + 0.1
    labels = (rng.random(m) < sigmoid(z)).astype(np.float64)
    w_ref, b_ref = newton_logistic(phi, labels, LAM, gram)

    full = Tree(torch.full((2**levels,), levels), NodeAlgebra.MEAN)
    xf = tree_field(trees, NodeAlgebra.MEAN, dtype=F64)  # type: ignore[arg-type]
    np.testing.assert_allclose(design_matrix(full, xf).tensor.numpy(), phi, rtol=0, atol=1e-13)
    model = LogisticRegression(full, Vector(1), dtype=F64)
    _fit_logistic(model, xf, torch.tensor(labels))
    p = model.probabilities(xf)[:, 0].detach().numpy()
    assert np.abs(p - sigmoid(phi @ w_ref + b_ref)).max() < 1e-6
    np.testing.assert_allclose(model.weight.detach().numpy()[0], w_ref, rtol=0, atol=1e-5)


# ---- the MLP -------------------------------------------------------------------------------------


def test_mlp_fits_a_nonlinear_functional_that_linear_regression_cannot() -> None:
    """``y = ∫ f(t)² dt`` of Chebyshev series ``f``: the MLP fits it, the best linear functional does not."""
    n, m = 6, 256
    rng = np.random.default_rng(4)
    c = rng.standard_normal((m, n)) / (1 + np.arange(n))
    y = np.einsum("ij,jk,ik->i", c, cheb_gram(n), c)
    xf = Field(torch.tensor(c), (Chebyshev(n),))
    yf = Field(torch.tensor(y)[:, None], (Vector(1),))
    var = float(((y - y.mean()) ** 2).mean())

    lin = fit_least_squares(LinearRegression(Chebyshev(n), Vector(1), dtype=F64), xf, yf)
    assert squared_error(lin(xf), yf).item() / var > 0.5

    torch.manual_seed(0)
    mlp = MLPRegressor(Chebyshev(n), Vector(32), Vector(1), torch.tanh, dtype=F64)
    fit_lbfgs(mlp, lambda: squared_error(mlp(xf), yf), max_iter=150)
    assert squared_error(mlp(xf), yf).item() / var < 0.01


def test_mlp_classifier_on_ragged_trees_separates_what_logistic_regression_cannot() -> None:
    """Label ``|∫ g x| > median`` of ragged trees: not linearly separable; the MLP's forward equals numpy on ``Φ``."""
    levels, m = 3, 300
    rng = np.random.default_rng(5)
    trees = [random_tree(rng, 0, levels + 1) for _ in range(m)]
    phi = np.stack([cell_integrals(t, levels) for t in trees])
    s = np.abs(phi @ rng.standard_normal(2**levels))
    labels = torch.tensor((s > np.median(s)).astype(np.float64))
    full = Tree(torch.full((2**levels,), levels), NodeAlgebra.MEAN)
    xf = tree_field(trees, NodeAlgebra.MEAN, dtype=F64)  # type: ignore[arg-type]

    def accuracy(model: LogisticRegression[Tree, Vector] | MLPClassifier[Tree, Vector]) -> float:
        return float(((model.probabilities(xf)[:, 0] > 0.5).to(F64) == labels).to(F64).mean())

    logistic = LogisticRegression(full, Vector(1), dtype=F64)
    fit_lbfgs(logistic, lambda: log_loss(logistic(xf), labels))
    assert accuracy(logistic) < 0.7
    torch.manual_seed(0)
    mlp = MLPClassifier(full, Vector(16), Vector(1), torch.tanh, dtype=F64)
    fit_lbfgs(mlp, lambda: log_loss(mlp(xf), labels), max_iter=100)
    assert accuracy(mlp) > 0.98
    w1, b1, w2, b2 = (p.detach().numpy() for p in mlp.parameters())
    np.testing.assert_allclose(
        mlp(xf).tensor.detach().numpy(), np.tanh(phi @ w1.T + b1) @ w2.T + b2, rtol=0, atol=1e-10
    )


@pytest.mark.parametrize("inp", [Vector(5), Chebyshev(5)])
def test_the_zoo_shells_are_the_generic_linear_and_mlp(inp: Vector | Chebyshev) -> None:
    """Same parameters, same outputs as ``applicative.Linear`` / ``MLP`` (where those apply: no per-example data)."""
    reg, lin = LinearRegression(inp, Vector(2), dtype=F64), Linear(inp, Vector(2), dtype=F64)
    lin.load_state_dict(reg.state_dict())
    deep, ref = MLPRegressor(inp, Vector(8), Vector(2), dtype=F64), MLP(inp, Vector(8), Vector(2), dtype=F64)
    ref.load_state_dict(deep.state_dict())
    one = Field(torch.randn(5, dtype=F64), (inp,))  # no batch: no batch axis appears
    many = Field(torch.randn(4, 2, 3, 5, dtype=F64), (Vector(3), inp))
    torch.testing.assert_close(reg(one).tensor, lin(one).tensor, rtol=0, atol=1e-13)
    torch.testing.assert_close(deep(one).tensor, ref(one).tensor, rtol=0, atol=1e-13)
    torch.testing.assert_close(reg(many).tensor, lin(many).tensor, rtol=0, atol=1e-13)
    torch.testing.assert_close(deep(many).tensor, ref(many).tensor, rtol=0, atol=1e-13)
