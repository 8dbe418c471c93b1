r"""The linear-regression-to-Transformer zoo, written once over any input structure.

Every model here is an affine map ``x ↦ W x + b`` (or two with ``fmap σ`` between them) from the
generic linear algebra: a row ``w_o`` of ``W`` is a value *on the input structure* ``I`` and
``(W x)_o = ⟨w_o, x⟩ = counit (zip_with mul w_o x)`` contracts ``I``'s measure. So over

* ``Vector(n)``: ``W x`` is the matrix product (the textbook models);
* ``Chebyshev(n)``: each row is a function and ``(W x)_o = ∫ w_o(t) x(t) dt`` (a functional of ``x``);
* a ``Tree``: each row is a piecewise-constant function on a fixed tree, and a batch of ragged trees
  meets it on their common refinement (``NodeAlgebra.MEAN``: ``∫ w x`` on ``[0, 1)``).

The closed form. With ``Φ(x)_j = ⟨e_j, x⟩`` for the stored basis ``e_j`` of ``I`` (:func:`design_matrix`:
``M x`` for a basis with Gram matrix ``M``, ``w ⊙ x`` for a measure ``w``), ``W x = Φ(x) Wᵀ``, so
least squares over any structure is ordinary least squares on the design matrix ``[Φ(x), 1]``
(the normal equations in ``I``'s metric, bias aside: ``M Xᵀ X M w = M Xᵀ y``; :func:`fit_least_squares`).

Logistic regression is the same map read as logits; :func:`log_loss` and :func:`weight_norm2`
(``Σ_o ⟨w_o, w_o⟩``, ``∫ w²`` for a function) make the penalised convex objective, minimised by
:func:`fit_lbfgs`. The MLP is ``linear ∘ fmap σ ∘ linear`` (:class:`~applicative.MLP`). Shapes
throughout: an input ``Field[*T, I]`` with tensor ``(*batch, *T, |I|)`` gives ``(*batch, *T, |O|)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

import torch
import torch.nn.functional as nnf
from torch import Tensor, nn

from applicative import MLP, Field, Linear, Structure, Vector, add, dot, expect_field, linear, pointwise, scale

from ._inputs import model_input

I = TypeVar("I", bound=Structure)
O = TypeVar("O", bound=Structure)
A = TypeVarTuple("A")
B = TypeVarTuple("B")

__all__ = [
    "LinearRegression",
    "LogisticRegression",
    "MLPClassifier",
    "MLPRegressor",
    "design_matrix",
    "fit_lbfgs",
    "fit_least_squares",
    "log_loss",
    "probabilities",
    "squared_error",
    "weight_norm2",
]


def _shared(f: Field[*A], like: Field[*B]) -> Field[*A]:
    """A parameter with one size-1 batch axis per batch axis of ``like``: one value shared by every example.

    Said explicitly because an input structure with per-example data (a batch of trees) lines its
    data up with the leading axes of what it refines: without these axes a weight's rows would be
    read as the batch of trees.
    """
    return Field(f.tensor.reshape(*(1,) * len(like.batch_shape), *f.tensor.shape), f.axes, f.ring)


def _affine(layer: Linear[I, O], x: Field[*B, I]) -> Field[*B, O]:
    """``layer``'s ``W x + b`` with its parameters shared by every example (see :func:`_shared`)."""
    b = layer.bias_field
    return linear(_shared(layer.weight_field, x), None if b is None else _shared(b, x), x)


def design_matrix(inp: I, x: Field[*B, I]) -> Field[*B, Vector]:
    """``Φ(x)_j = ⟨e_j, x⟩``: the design matrix of linear models on ``inp``, ``(*batch, *T, |inp|)``.

    For every weight ``W`` on ``inp``, ``W x = Φ(x) Wᵀ``: ``Φ(x) = M x`` with ``M`` the Gram matrix of
    ``inp``'s stored basis (``∫ T_j T_k`` for Chebyshev), ``w ⊙ x`` for a measure ``w``, the integrals
    of ``x`` over the leaves of a fixed tree. Computed as ``linear(I, x)``, nothing structure-specific.
    """
    eye = Field(torch.eye(inp.size, dtype=x.dtype, device=x.device), (Vector(inp.size), inp), x.ring)
    return linear(_shared(eye, x), None, x)


class LinearRegression(Linear[I, O]):
    """``ŷ = W x + b`` from features ``I`` to outputs ``O``: weight ``(|O|, |I|)`` (rows on ``I``), bias ``(|O|,)``."""

    def forward(self, x: Field[*B, I]) -> Field[*B, O]:
        expect_field(type(self).__name__, x)
        return _affine(self, model_input(type(self).__name__, "x", x, self.weight.dtype))


class LogisticRegression(LinearRegression[I, O]):
    """Logits ``z = W x + b`` over ``classes`` ``O``: one logit is Bernoulli ``σ(z)``, more a softmax."""

    def probabilities(self, x: Field[*B, I]) -> Tensor:
        return probabilities(self(x))


class MLPRegressor(MLP[I, O]):
    """``ŷ = W₂ σ(W₁ x + b₁) + b₂``: the generic MLP, ``I → hidden → O`` (``σ`` applied by ``fmap``)."""

    def forward(self, x: Field[*B, I]) -> Field[*B, O]:
        expect_field(type(self).__name__, x)
        x = model_input(type(self).__name__, "x", x, self.linear1.weight.dtype)
        return _affine(self.linear2, pointwise(self.activation, _affine(self.linear1, x)))


class MLPClassifier(MLPRegressor[I, O]):
    """The MLP's outputs read as logits over the classes ``O`` (see :func:`probabilities`)."""

    def probabilities(self, x: Field[*B, I]) -> Tensor:
        return probabilities(self(x))


def probabilities(logits: Field[*B, O]) -> Tensor:
    """``σ(z)`` for one logit (the probability of class 1), else ``softmax(z)`` over the classes."""
    z = logits.tensor
    return torch.sigmoid(z) if z.shape[-1] == 1 else torch.softmax(z, -1)


def log_loss(logits: Field[*B, O], labels: Tensor) -> Tensor:
    """Mean negative log-likelihood: labels ``0/1`` ``(*batch,)`` for one logit, class indices for more."""
    z = logits.tensor
    if z.shape[-1] == 1:
        return nnf.binary_cross_entropy_with_logits(z[..., 0], labels.to(z.dtype))
    return nnf.cross_entropy(z.reshape(-1, z.shape[-1]), labels.reshape(-1))


def squared_error(pred: Field[*B, O], target: Field[*B, O]) -> Tensor:
    """Mean over examples of ``‖ŷ - y‖²`` in the output structure's measure (``⟨r, r⟩``: ``∫ r²`` for functions)."""
    r = add(pred, scale(-1.0, target))
    return dot(r, r).tensor.mean()


def weight_norm2(model: nn.Module) -> Tensor:
    """``Σ ‖w_o‖²`` over the rows of every affine layer, in its input structure's metric (``∫ w²``, ``Σ w²``)."""
    norms = [dot(m.weight_field, m.weight_field).tensor.sum() for m in model.modules() if isinstance(m, Linear)]
    return torch.stack(norms).sum()


def fit_lbfgs(model: nn.Module, objective: Callable[[], Tensor], max_iter: int = 1000, tol: float = 1e-10) -> Tensor:
    """Minimise ``objective()`` over ``model``'s parameters: full-batch L-BFGS, strong-Wolfe line search.

    Stops when the gradient's largest entry is below ``tol`` or after ``max_iter`` iterations;
    returns the final objective (detached). For the convex objectives here (least squares, penalised
    logistic regression) that is the global minimum.
    """
    opt = torch.optim.LBFGS(
        model.parameters(),
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=tol,
        tolerance_change=0.0,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        opt.zero_grad()
        loss = objective()
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    opt.step(closure)  # type: ignore[no-untyped-call]
    with torch.no_grad():
        return objective()


def fit_least_squares(model: LinearRegression[I, O], x: Field[*B, I], y: Field[*B, O]) -> LinearRegression[I, O]:
    """Set ``model``'s ``W, b`` to ``argmin Σ ‖W x + b - y‖²`` (closed form) and return it.

    Ordinary least squares on ``[Φ(x), 1]`` (:func:`design_matrix`) with ``torch.linalg.lstsq``: every
    position of ``x``'s batch and leading typed axes is an example. The minimiser is the same for the
    residual measured in any fixed output metric (one design matrix for every output). Rank-deficient
    designs get the minimum-norm stored weights on the CPU; CUDA's solver needs full column rank.
    """
    phi = design_matrix(model.inp, x).tensor
    a = phi.reshape(-1, phi.shape[-1])
    if model.bias is not None:
        a = torch.cat([a, a.new_ones(a.shape[0], 1)], -1)
    sol = torch.linalg.lstsq(a, y.tensor.reshape(a.shape[0], -1).to(a.dtype)).solution  # (|I| (+1), |O|)
    with torch.no_grad():
        model.weight.copy_(sol[: model.inp.size].T)
        if model.bias is not None:
            model.bias.copy_(sol[-1])
    return model
