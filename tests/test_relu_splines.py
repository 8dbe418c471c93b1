"""A ReLU-attention encoder block is a cubic spline along any line (design seed: "attention is a cubic spline").

The block is built from the library's generic parts, with no layer norm::

    h = x + MultiHeadAttention(normalise=ReluAttention(scale))(x)
    y = h + MLP(activation=torch.relu)(h)

Why it is piecewise cubic along a line ``x(t) = x0 + t d``:

* ``x(t)`` is affine in ``t``, so the projections ``q = x Wqᵀ + bq``, ``k`` and
  ``v`` are each affine in ``t`` (degree 1);
* every score ``q_i · k_j`` is a product of two affine functions: quadratic in ``t``;
* ``ReluAttention`` is ``relu(scale * s) / counit(pure 1)`` -- the divisor is the
  sequence length, a constant (unlike softmax's data-dependent normaliser) -- so
  between the zeros of the scores each weight is either 0 or the quadratic itself;
* the attention output ``Σ_j w_ij v_j`` is quadratic times affine: cubic; the
  output projection and the residual add keep degree 3;
* the MLP is affine, ReLU, affine: between the zeros of its hidden pre-activations
  each hidden unit is either 0 or its (cubic) pre-activation, so the degree stays 3.

So ``y(t)`` is a polynomial of degree at most 3 between consecutive "kinks" --
the zeros of the attention scores and of the MLP's hidden pre-activations. The
same block with :class:`~applicative.ScaledSoftmax` is analytic between the MLP's
kinks, but ``exp(s(t)) / Σ exp`` is not a polynomial at all.

The test samples ``t`` on a uniform grid of step ``h`` and takes finite differences
along ``t`` (for every output of the block). For a cubic the fourth difference
``Δ⁴y`` vanishes exactly (``Δ⁴y = h⁴ y⁗(ξ)`` for smooth ``y``); a window of five
grid points is "clean" when no pre-activation of any ReLU (attention scores,
MLP hidden units, recorded while the block runs) changes sign between its points.
(A pre-activation with two zeros inside one grid step goes unseen; it would show
as a failing ``Δ⁴y``, never as a false pass.)

Criterion (float64). Evaluating ``y`` leaves a rounding error of a modest multiple
of ``ε |y|`` (``ε`` = machine epsilon); ``Δ⁴`` sums five values with coefficients
``1, -4, 6, -4, 1`` (absolute sum 16), so on a clean window of a cubic
``|Δ⁴y| ≤ 16 · c · ε · max|y|`` with ``c`` the evaluation's error growth. The
tolerance is ``TOL = 2¹⁰ ε max|y|`` (``c = 64``). Measured over 300 seeds, the
ReLU block's clean ``|Δ⁴y|`` are at most 6 % of ``TOL`` (median 2 %, i.e. about
``20 ε max|y|``). The test can fail, and claims exactly degree 3:

* the softmax block's ``Δ⁴y`` (on windows clean of the MLP's kinks) has median
  above ``10⁴ TOL`` (measured: at least 5·10⁴, typically 3·10⁶ ``TOL`` --
  ``h⁴ y⁗`` with ``h = 10⁻²``);
* the ReLU block's ``Δ³y`` on clean windows has median above ``10⁴ TOL`` (so the
  pieces are cubic, not of lower degree; measured ≥ 4·10⁵ ``TOL``). Not every
  piece need be cubic: where all of a query's scores are negative its attention
  output is 0 and that token's output is piecewise linear;
* somewhere (across a kink) the ReLU block's ``Δ⁴y`` exceeds ``10⁶ TOL`` (measured
  ≥ 2·10⁹ ``TOL``): the function is piecewise, and the kink detection is what
  makes the clean windows clean.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from applicative import (
    MLP,
    Field,
    Lowering,
    MultiHeadAttention,
    Normalise,
    ReluAttention,
    ScaledSoftmax,
    Vector,
    residual,
)

DT = torch.float64
EPS = torch.finfo(DT).eps
GRID = 201  # t in [-1, 1], step h = 1e-2


class Seq(Vector):
    size = 3


class Model(Vector):
    size = 4


class Hidden(Vector):
    size = 8


HEADS, KEY = 2, Vector(2)


class Recording(Normalise):
    """Wraps a normalisation and records the scaled scores it sees (the ReLU's pre-activations)."""

    def __init__(self, inner: Normalise) -> None:
        self.inner, self.scale = inner, inner.scale
        self.seen: list[Tensor] = []

    def __call__(self, scores: Field) -> Field:  # type: ignore[type-arg]
        self.seen.append(scores.tensor * self.scale)
        return self.inner(scores)

    @property
    def lowering(self) -> Lowering | None:
        # a softmax still runs fused (and records nothing: it has no kinks)
        return self.inner.lowering


def _block(seed: int) -> tuple[MultiHeadAttention[Model], MLP[Model, Model], Tensor, Tensor]:
    """An attention + MLP residual block with N(0, 1) parameters (biases included), and a random line."""
    g = torch.Generator().manual_seed(seed)
    attn: MultiHeadAttention[Model] = MultiHeadAttention(Model(), KEY, KEY, HEADS, dtype=DT)
    mlp: MLP[Model, Model] = MLP(Model(), Hidden(), Model(), torch.relu, dtype=DT)
    with torch.no_grad():
        for p in (*attn.parameters(), *mlp.parameters()):
            p.copy_(torch.randn(p.shape, generator=g, dtype=DT))
    x0 = torch.randn(Seq.size, Model.size, generator=g, dtype=DT)
    d = torch.randn(Seq.size, Model.size, generator=g, dtype=DT)
    return attn, mlp, x0, d


def _along_line(seed: int, normalise: Normalise) -> tuple[Tensor, Tensor, Tensor]:
    """``y(t)`` on the grid (``GRID x outputs``), the attention pre-activations and the MLP's, each ``GRID x units``."""
    attn, mlp, x0, d = _block(seed)
    rec = Recording(normalise)
    hidden: list[Tensor] = []
    handle = mlp.linear1.register_forward_hook(lambda _m, _i, out: hidden.append(out.tensor))
    t = torch.linspace(-1.0, 1.0, GRID, dtype=DT)
    x = Field(x0 + t[:, None, None] * d, (Seq(), Model()))  # the grid is a batch axis
    y = residual(mlp, residual(attn.using(rec), x))
    handle.remove()
    assert y.structures == (Seq(), Model())

    def flat(ts: list[Tensor]) -> Tensor:
        return torch.cat([s.reshape(GRID, -1) for s in ts], 1) if ts else t.new_zeros(GRID, 0)

    return y.tensor.reshape(GRID, -1), flat(rec.seen), flat(hidden)


def _clean(pre: Tensor, points: int) -> Tensor:
    """For each window of ``points`` consecutive grid points: no pre-activation changes sign inside it."""
    flips = ((pre[1:] > 0) != (pre[:-1] > 0)).any(1)  # between grid points j and j+1
    return ~flips.unfold(0, points - 1, 1).any(1)


def _diff(y: Tensor, n: int) -> Tensor:
    """``|Δⁿ y|`` along ``t``, the largest over the outputs, per window of ``n + 1`` points."""
    return torch.diff(y, n, 0).abs().amax(1)


@pytest.mark.parametrize("seed", range(4))
def test_relu_attention_block_is_a_cubic_spline_along_a_line(seed: int) -> None:
    scale = 1.0 / math.sqrt(KEY.size)

    y, scores, hidden = _along_line(seed, ReluAttention(scale))
    tol = 2**10 * EPS * y.abs().max()
    kinks = torch.cat([scores, hidden], 1)
    clean4, clean3 = _clean(kinks, 5), _clean(kinks, 4)
    d4, d3 = _diff(y, 4), _diff(y, 3)
    assert clean4.sum() >= len(clean4) // 4, "too few windows free of kinks to test anything"
    assert d4[clean4].max() <= tol, f"ReLU block: Δ⁴y {d4[clean4].max():.3g} away from kinks > {tol:.3g}"
    assert d3[clean3].median() > 1e4 * tol, "ReLU block: Δ³y vanishes away from kinks -- degree below 3"
    assert d4.max() > 1e6 * tol, "ReLU block: no kink at all along the line -- not piecewise"

    ys, _, hidden_s = _along_line(seed, ScaledSoftmax(scale))
    tol_s = 2**10 * EPS * ys.abs().max()
    clean_s = _clean(hidden_s, 5)
    s4 = _diff(ys, 4)[clean_s]
    assert clean_s.sum() >= len(clean_s) // 4
    assert s4.median() > 1e4 * tol_s, f"softmax block: Δ⁴y {s4.median():.3g} looks cubic (tol {tol_s:.3g})"
