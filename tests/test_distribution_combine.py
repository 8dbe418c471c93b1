"""Combining distributions: the independent product and the pushforward that merges equal outcomes.

References: numpy expectations under the outer product of the probabilities (independence),
a hand-written ``collections.Counter`` pushforward, and the law checker on drawn products.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from applicative import Field, StructureError, counit, outer, pointwise, pointwise2, pure, zip_with
from applicative.laws import check_laws
from applicative.laws.__main__ import main
from instances import Distribution, ProductArbitrary, Vector, product, pushforward


def _dirichlet(rng: np.random.Generator, n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    return rng.dirichlet(np.ones(n), size=batch) if batch else rng.dirichlet(np.ones(n))


def _var(d: Distribution, values: np.ndarray) -> Field:  # type: ignore[type-arg]
    return Field(torch.from_numpy(values), (d,))


# ---- the product --------------------------------------------------------------------


def test_products_are_lawful() -> None:
    report = check_laws(ProductArbitrary(), max_examples=10)
    assert report.status("keys/values invariant") != "n/a"  # relabelling the factors is checked
    assert not report.failures


def test_command_line_checks_products(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instances._product_arbitrary:ProductArbitrary", "--examples", "3"]) == 0
    assert "0 fail" in capsys.readouterr().out


def test_independence_against_numpy() -> None:
    """E[f(X) g(Y)] = E[f(X)] E[g(Y)] on the joint, and both equal the numpy double sum."""
    rng = np.random.default_rng(0)
    p, q = _dirichlet(rng, 4), _dirichlet(rng, 3)
    x, y = rng.normal(size=4), rng.normal(size=3)
    d1, d2 = Distribution(torch.from_numpy(p)), Distribution(torch.from_numpy(q))
    pr = product(d1, d2)
    fx = pr.lift_left(pointwise(torch.sin, _var(d1, x)))
    gy = pr.lift_right(pointwise(torch.exp, _var(d2, y)))
    joint = counit(pointwise2(torch.mul, fx, gy)).tensor.item()
    want = np.einsum("i,j,i,j->", p, q, np.sin(x), np.exp(y))
    assert joint == pytest.approx(want, rel=1e-12)
    assert joint == pytest.approx(float(np.sin(x) @ p) * float(np.exp(y) @ q), rel=1e-12)
    np.testing.assert_allclose(pr.joint.probs.numpy(), np.outer(p, q).ravel(), rtol=1e-15)


def test_lifts_keep_expectations_and_are_applicative_morphisms() -> None:
    rng = np.random.default_rng(1)
    d1, d2 = Distribution(torch.from_numpy(_dirichlet(rng, 3))), Distribution(torch.from_numpy(_dirichlet(rng, 5)))
    pr = product(d1, d2)
    a, b = _var(d1, rng.normal(size=3)), _var(d1, rng.normal(size=3))
    assert counit(pr.lift_left(a)).tensor.item() == pytest.approx(counit(a).tensor.item(), rel=1e-12)
    lifted_zip = pr.lift_left(zip_with(lambda u, v: pointwise2(torch.maximum, u, v), a, b))
    zip_lifted = zip_with(lambda u, v: pointwise2(torch.maximum, u, v), pr.lift_left(a), pr.lift_left(b))
    torch.testing.assert_close(lifted_zip.tensor, zip_lifted.tensor, rtol=0, atol=0)
    c = Field(torch.tensor(2.5, dtype=torch.float64), ())
    torch.testing.assert_close(pr.lift_right(pure(d2, c)).tensor, pure(pr.joint, c).tensor, rtol=0, atol=0)


def test_flatten_of_outer_is_the_independent_pair() -> None:
    """A nested D1-of-D2 variable (outer) flattened onto the joint equals the product of the lifted variables."""
    rng = np.random.default_rng(2)
    d1, d2 = Distribution(torch.from_numpy(_dirichlet(rng, 2))), Distribution(torch.from_numpy(_dirichlet(rng, 3)))
    pr = product(d1, d2)
    x, y = _var(d1, rng.normal(size=2)), _var(d2, rng.normal(size=3))
    flat = pr.flatten(outer(x, y))
    torch.testing.assert_close(flat.tensor, pointwise2(torch.mul, pr.lift_left(x), pr.lift_right(y)).tensor)
    assert flat.structures == (pr.joint,)


def test_batched_factors_and_vector_values() -> None:
    """Per-example factors broadcast; values with an inner vector axis lift along the distribution axis."""
    rng = np.random.default_rng(3)
    p, q = _dirichlet(rng, 3, (4,)), _dirichlet(rng, 2)
    d1, d2 = Distribution(torch.from_numpy(p)), Distribution(torch.from_numpy(q))
    pr = product(d1, d2)
    assert pr.joint.batch_shape == (4,)
    x = rng.normal(size=(4, 3, 5))  # batch 4, outcomes 3, a vector of 5
    y = rng.normal(size=(2,))
    fx = pr.lift_left(Field(torch.from_numpy(x), (d1, Vector(5))))
    got = counit(fx)  # E over the joint: the left marginal's expectation
    assert got.structures == (Vector(5),)
    np.testing.assert_allclose(got.tensor.numpy(), np.einsum("bi,bik->bk", p, x), rtol=1e-12)
    xy = pointwise2(torch.mul, pr.lift_left(_var(d1, x[..., 0])), pr.lift_right(_var(d2, y)))
    want = np.einsum("bi,j,bi,j->b", p, q, x[..., 0], y)
    np.testing.assert_allclose(counit(xy).tensor.numpy(), want, rtol=1e-12)


def test_batches_line_up_on_the_leading_axes() -> None:
    """Per-example data is left-aligned: factor batches (4,) and (4, 3) give a joint batch (4, 3)."""
    rng = np.random.default_rng(6)
    p, q = _dirichlet(rng, 2, (4,)), _dirichlet(rng, 3, (4, 3))
    joint = product(Distribution(torch.from_numpy(p)), Distribution(torch.from_numpy(q))).joint
    want = np.einsum("bi,bcj->bcij", p, q).reshape(4, 3, 6)
    np.testing.assert_allclose(joint.probs.numpy(), want, rtol=1e-15)


def test_product_is_memoised_and_checks_its_inputs() -> None:
    d1, d2 = Distribution([0.5, 0.5]), Distribution([0.2, 0.8])
    assert product(d1, d2) is product(d1, d2)
    pr = product(d1, d2)
    other = Distribution([0.5, 0.5])  # equal values, another space
    with pytest.raises(StructureError, match="expected exactly one axis on"):
        pr.lift_left(_var(other, np.zeros(2)))
    with pytest.raises(StructureError, match="pairs with another Distribution"):
        d1.product(Vector(2))  # type: ignore[arg-type]
    lifted_x, lifted_y = pr.lift_left(_var(d1, np.ones(2))), product(d1, d2).lift_right(_var(d2, np.ones(2)))
    assert lifted_x.structures == lifted_y.structures  # lifted separately, they still pair


# ---- the pushforward ------------------------------------------------------------------


def _counter_pushforward(values: np.ndarray, probs: np.ndarray) -> dict[float, float]:
    c: Counter[float] = Counter()
    for v, p in zip(values.tolist(), probs.tolist(), strict=True):
        c[v] += p
    return dict(c)


def test_pushforward_against_counter() -> None:
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(1, 9))
        p = _dirichlet(rng, n)
        v = rng.integers(-2, 3, size=n).astype(np.float64)  # many ties
        got = pushforward(_var(Distribution(torch.from_numpy(p)), v))
        want = _counter_pushforward(v, p)
        vals, probs = got.tensor.numpy(), got.structures[0].probs.numpy()
        assert vals.tolist() == sorted(want)
        np.testing.assert_allclose(probs, [want[k] for k in sorted(want)], rtol=1e-12)
        # the expectation of any function of X is unchanged by merging
        e_before = float(np.exp(v) @ p)
        assert counit(pointwise(torch.exp, got)).tensor.item() == pytest.approx(e_before, rel=1e-12)


def test_pushforward_of_a_sum_of_dice() -> None:
    """Two independent dice on the product space, X + Y pushed forward: the triangular law on 2..12."""
    die = Distribution(torch.full((6,), 1 / 6, dtype=torch.float64))
    pr = product(die, die)
    face = _var(die, np.arange(1.0, 7.0))
    total = pushforward(pointwise2(torch.add, pr.lift_left(face), pr.lift_right(face)))
    sums = np.add.outer(np.arange(1, 7), np.arange(1, 7)).ravel().astype(float)
    want = _counter_pushforward(sums, np.full(36, 1 / 36))
    assert total.tensor.tolist() == list(range(2, 13))
    np.testing.assert_allclose(total.structures[0].probs.numpy(), [want[k] for k in range(2, 13)], rtol=1e-12)


def test_pushforward_batches_pad_with_probability_zero() -> None:
    rng = np.random.default_rng(5)
    p = _dirichlet(rng, 5, (3,))
    v = np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 2.0, 0.0, 2.0, 3.0], [4.0, 3.0, 2.0, 1.0, 0.0]])
    got = pushforward(_var(Distribution(torch.from_numpy(p)), v))
    vals, probs = got.tensor.numpy(), got.structures[0].probs.numpy()
    assert vals.shape == probs.shape == (3, 5)  # the widest example has 5 distinct values
    for b in range(3):
        want = _counter_pushforward(v[b], p[b])
        k = len(want)
        assert vals[b, :k].tolist() == sorted(want)
        np.testing.assert_allclose(probs[b, :k], [want[x] for x in sorted(want)], rtol=1e-12)
        assert (probs[b, k:] == 0).all() and (vals[b, k:] == max(want)).all()


def test_pushforward_left_aligns_per_example_probabilities() -> None:
    """Probabilities per example (batch 2) and values with a further batch axis (2, 3): example b uses p[b]."""
    rng = np.random.default_rng(7)
    p = _dirichlet(rng, 4, (2,))
    v = rng.integers(0, 2, size=(2, 3, 4)).astype(np.float64)
    got = pushforward(_var(Distribution(torch.from_numpy(p)), v))
    probs = got.structures[0].probs.numpy()
    for b in range(2):
        for c in range(3):
            want = _counter_pushforward(v[b, c], p[b])
            k = len(want)
            np.testing.assert_allclose(probs[b, c, :k], [want[x] for x in sorted(want)], rtol=1e-12)


def test_pushforward_float_equality() -> None:
    d = Distribution([0.25, 0.25, 0.25, 0.25])
    x = Field(torch.tensor([0.1 + 0.2, 0.3, -0.0, 0.0], dtype=torch.float64), (d,))
    exact = pushforward(x)  # 0.1 + 0.2 != 0.3 in binary; -0.0 == 0.0
    assert exact.tensor.tolist() == [0.0, 0.3, 0.1 + 0.2]
    close = pushforward(x, atol=1e-12)
    assert close.tensor.tolist() == [0.0, 0.3]
    np.testing.assert_allclose(close.structures[0].probs.numpy(), [0.5, 0.5])


@pytest.mark.parametrize(
    ("field", "match"),
    [
        (Field(torch.zeros(2, 3, dtype=torch.float64), (Distribution([0.5, 0.5]), Vector(3))), "only axis"),
        (Field(torch.tensor([0.0, float("nan")], dtype=torch.float64), (Distribution([0.5, 0.5]),)), "finite"),
        (Field(torch.zeros(2, dtype=torch.float64), (Vector(2),)), "only axis"),
    ],
    ids=["inner axis", "nan", "not a distribution"],
)
def test_pushforward_rejects_bad_input(field: Field, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(StructureError, match=match):
        pushforward(field)
