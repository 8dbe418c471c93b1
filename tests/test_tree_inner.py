"""The fused tree inner product (one compiled walk) against the unfused path and the recursive definition."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from applicative import Field, counit, zip_with
from instances import NodeAlgebra, Tree, tree_field
from instances._tree_inner import inner_linear
from instances.tree import MAX_DEPTH

# ---- the reference: counit (fmap (uncurry (*)) (pair a b)) on nested tuples, by recursion -----------


def ref_inner(x: Any, y: Any, mean: bool) -> float:
    """``pair (Node l r) (Leaf v) = Node (pair l (Leaf v)) (pair r (Leaf v))``, so the product recurses directly."""
    if not isinstance(x, tuple) and not isinstance(y, tuple):
        return float(x * y)
    xl, xr = x if isinstance(x, tuple) else (x, x)
    yl, yr = y if isinstance(y, tuple) else (y, y)
    s = ref_inner(xl, yl, mean) + ref_inner(xr, yr, mean)
    return s / 2 if mean else s


def relabel(t: Any, values: list[float]) -> Any:
    """``t`` with its leaves replaced, left to right, by ``values`` (consumed)."""
    return (relabel(t[0], values), relabel(t[1], values)) if isinstance(t, tuple) else values.pop(0)


# ---- hypothesis trees: random shapes, caterpillars, single leaves --------------------------------

reals = st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False, width=64)
random_trees = st.recursive(reals, lambda c: st.tuples(c, c), max_leaves=24)


@st.composite
def spines(draw: st.DrawFn, deepest: int = MAX_DEPTH) -> Any:
    """A caterpillar turning left or right at random, down to ``deepest``."""
    turns = draw(st.lists(st.booleans(), min_size=1, max_size=deepest))
    t: Any = draw(reals)
    for right in turns:
        t = (draw(reals), t) if right else (t, draw(reals))
    return t


trees = st.one_of(reals, random_trees, spines(40), spines())


@st.composite
def tree_batches(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    n = draw(st.integers(1, 5))
    return draw(st.lists(trees, min_size=n, max_size=n)), draw(st.lists(trees, min_size=n, max_size=n))


def tree_of(f: Field[Any]) -> Tree:
    t = f.structures[0]
    assert isinstance(t, Tree)
    return t


def fused(a: Field[Any], b: Field[Any], xa: torch.Tensor | None = None, xb: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`inner_linear` on two tree fields (values ``xa`` / ``xb`` in place of theirs, if given)."""
    ta, tb = tree_of(a), tree_of(b)
    mean = ta.algebra is NodeAlgebra.MEAN
    out = inner_linear(
        ta.start,
        tb.start,
        ta.depth if mean else None,
        tb.depth if mean else None,
        a.tensor if xa is None else xa,
        b.tensor if xb is None else xb,
    )
    assert out is not None
    return out


def unfused(a: Field[Any], b: Field[Any]) -> torch.Tensor:
    return counit(zip_with(lambda u, v: u.with_tensor(u.tensor * v.tensor), a, b)).tensor


def with_padding(f: Field[Any], fill: float) -> torch.Tensor:
    return torch.where(tree_of(f).mask, f.tensor, fill)


algebras = pytest.mark.parametrize("algebra", list(NodeAlgebra))


# ---- values ----------------------------------------------------------------------------------------


@given(tree_batches())
def test_matches_unfused_and_reference(batch: tuple[list[Any], list[Any]]) -> None:
    ta, tb = batch
    for algebra in NodeAlgebra:
        a, b = tree_field(ta, algebra, dtype=torch.float64), tree_field(tb, algebra, dtype=torch.float64)
        got = fused(a, b)
        assert got.shape == (len(ta),) and got.dtype == torch.float64
        torch.testing.assert_close(got, unfused(a, b), rtol=1e-12, atol=1e-12)
        mean = algebra is NodeAlgebra.MEAN
        expected = [ref_inner(x, y, mean) for x, y in zip(ta, tb, strict=True)]
        assert got.tolist() == pytest.approx(expected, rel=1e-12, abs=1e-12)
        # padding is never read: nan there changes nothing
        assert torch.equal(fused(a, b, with_padding(a, float("nan")), with_padding(b, float("nan"))), got)


@settings(max_examples=20)
@given(tree_batches())
def test_symmetric_and_against_itself(batch: tuple[list[Any], list[Any]]) -> None:
    """``<a, b> = <b, a>``, and ``<a, a>`` is the counit of the squares (pairing a tree with itself refines nothing)."""
    for algebra in NodeAlgebra:
        a, b = (tree_field(t, algebra, dtype=torch.float64) for t in batch)
        torch.testing.assert_close(fused(a, b), fused(b, a), rtol=1e-12, atol=1e-12)
        squares = counit(a.with_tensor(a.tensor * a.tensor)).tensor
        torch.testing.assert_close(fused(a, a), squares, rtol=1e-12, atol=1e-12)


@algebras
def test_deep_caterpillars_and_single_leaves(algebra: NodeAlgebra) -> None:
    """Caterpillars of depth 40 turning either way, against a balanced tree, a single leaf and each other."""
    left: Any = 1.5
    right: Any = -0.5
    for k in range(40):
        left, right = (left, float(k)), (float(k) - 3.0, right)

    def balanced(n: int, v: float) -> Any:
        return v if n == 1 else (balanced(n // 2, v + 1), balanced(n - n // 2, v - 1))

    ta = [left, right, left, 2.0, balanced(37, 0.25), 3.0]
    tb = [right, left, balanced(64, 1.0), left, right, -7.0]
    mean = algebra is NodeAlgebra.MEAN
    a, b = tree_field(ta, algebra, dtype=torch.float64), tree_field(tb, algebra, dtype=torch.float64)
    assert int(tree_of(a).depth.max()) == 40
    got = fused(a, b)
    torch.testing.assert_close(got, unfused(a, b), rtol=1e-12, atol=1e-12)
    assert got.tolist() == pytest.approx([ref_inner(x, y, mean) for x, y in zip(ta, tb, strict=True)], rel=1e-12)


@algebras
def test_broadcast_batches(algebra: NodeAlgebra) -> None:
    """One tree (batch ``()``) against a batch; shared values; several batch axes; a typed axis after the batch."""
    ta: list[Any] = [((1.0, 2.0), 3.0), 4.0, (0.5, (-1.0, 2.5)), (((1.0, 2.0), 3.0), 4.0), -2.0, (3.0, 1.0)]
    one = (1.5, ((-2.0, 3.0), 0.25))
    mean = algebra is NodeAlgebra.MEAN
    a = tree_field(ta, algebra, dtype=torch.float64)
    shared = tree_field([one], algebra, dtype=torch.float64)
    s = tree_of(shared)
    single = s.with_data((s.start[0], s.depth[0]))  # batch (): one tree for every batch position
    b = Field(shared.tensor[0], (single,))
    expected = torch.tensor([ref_inner(x, one, mean) for x in ta], dtype=torch.float64)
    torch.testing.assert_close(fused(a, b), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fused(b, a), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(unfused(a, b), expected, rtol=1e-12, atol=1e-12)
    # the batch (6,) as (2, 3): breakpoints, depths and values reshaped alike
    t = tree_of(a)
    a23 = Field(a.tensor.reshape(2, 3, -1), (t.with_data((t.start.reshape(2, 3, -1), t.depth.reshape(2, 3, -1))),))
    torch.testing.assert_close(fused(a23, b), expected.reshape(2, 3), rtol=1e-12, atol=1e-12)
    # values with a typed axis after the batch (4 rows per tree): trees line up with the leading axes
    g = torch.Generator().manual_seed(1)
    xa = torch.randn(6, 4, t.size, generator=g, dtype=torch.float64)
    xb = torch.randn(1, 4, s.size, generator=g, dtype=torch.float64)  # shared by the 6 trees: one row per h
    got = fused(a, b, xa, xb)
    assert got.shape == (6, 4)
    for i in range(6):
        for h in range(4):
            vals_a, vals_b = xa[i, h, : int(t.mask[i].sum())].tolist(), xb[0, h, : int(s.mask[0].sum())].tolist()
            want = ref_inner(relabel(ta[i], vals_a), relabel(one, vals_b), mean)
            assert got[i, h].item() == pytest.approx(want, rel=1e-12, abs=1e-12)


@algebras
def test_features(algebra: NodeAlgebra) -> None:
    """A trailing feature axis is contracted featurewise (and broadcasts from size 1)."""
    ta: list[Any] = [((1.0, 2.0), 3.0), 4.0, (0.5, (-1.0, 2.5))]
    tb: list[Any] = [(0.0, (1.0, 1.0)), ((1.0, 1.0), (1.0, 1.0)), 2.0]
    a, b = tree_field(ta, algebra, dtype=torch.float64), tree_field(tb, algebra, dtype=torch.float64)
    ta_, tb_ = tree_of(a), tree_of(b)
    mean = algebra is NodeAlgebra.MEAN
    g = torch.Generator().manual_seed(0)
    xa = torch.randn(3, ta_.size, 5, generator=g, dtype=torch.float64)
    xb = torch.randn(3, tb_.size, 5, generator=g, dtype=torch.float64)
    da, db = (ta_.depth, tb_.depth) if mean else (None, None)
    got = inner_linear(ta_.start, tb_.start, da, db, xa, xb, features=True)
    assert got is not None and got.shape == (3, 5)
    for c in range(5):
        torch.testing.assert_close(got[:, c], fused(a, b, xa[..., c], xb[..., c]), rtol=1e-12, atol=1e-12)
    one = inner_linear(ta_.start, tb_.start, da, db, xa, xb[..., :1], features=True)
    assert one is not None
    torch.testing.assert_close(one, torch.stack([fused(a, b, xa[..., c], xb[..., 0]) for c in range(5)], -1))


def test_dtypes() -> None:
    a = tree_field([((1.0, 2.0), 3.0), (0.5, 0.25)], dtype=torch.float32)
    b = tree_field([(1.0, (2.0, 3.0)), 4.0], dtype=torch.float32)
    got = fused(a, b)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, unfused(a, b))
    mixed = fused(a, b, a.tensor, b.tensor.double())  # promoted, as torch promotes a product
    assert mixed.dtype == torch.float64
    torch.testing.assert_close(mixed, got.double())


def test_falls_back_off_the_cpu_and_for_other_dtypes() -> None:
    """``None`` tells the caller to take the generic path: a tensor not on the CPU, values not float32/float64."""
    a = tree_field([((1.0, 2.0), 3.0)], dtype=torch.float64)
    t = tree_of(a)
    meta = t.start.to("meta")
    assert inner_linear(meta, meta, None, None, a.tensor.to("meta"), a.tensor.to("meta")) is None
    assert inner_linear(t.start, t.start, None, None, a.tensor, a.tensor.to("meta")) is None
    for dtype in (torch.float16, torch.int64, torch.complex128):
        x = a.tensor.to(dtype)
        assert inner_linear(t.start, t.start, None, None, x, x) is None


def test_invalid_arguments_raise() -> None:
    a = tree_field([((1.0, 2.0), 3.0), 1.0], dtype=torch.float64)
    t = tree_of(a)
    with pytest.raises(ValueError, match="both depths"):
        inner_linear(t.start, t.start, t.depth, None, a.tensor, a.tensor)
    with pytest.raises(ValueError, match="do not fit"):
        inner_linear(t.start, t.start, None, None, a.tensor[..., :2], a.tensor)
    with pytest.raises(ValueError, match="broadcast"):
        inner_linear(t.start, t.start, None, None, a.tensor.expand(3, 2, 3).reshape(6, 3), a.tensor)
    with pytest.raises(ValueError, match="depths"):
        inner_linear(t.start, t.start, t.depth[:1], t.depth, a.tensor, a.tensor)


# ---- gradients ---------------------------------------------------------------------------------------

grad_trees: list[Any] = [((1.0, 2.0), (3.0, (4.0, 5.0))), 7.0, (0.5, -1.0), (((1.0, 2.0), 3.0), 4.0)]
grad_trees_b: list[Any] = [(1.0, 2.0), ((1.0, (2.0, 3.0)), 4.0), 1.0, (((0.0, (1.0, 2.0)), 3.0), 4.0)]


@algebras
@pytest.mark.parametrize("features", [False, True])
def test_gradcheck(algebra: NodeAlgebra, features: bool) -> None:
    a, b = tree_field(grad_trees, algebra, dtype=torch.float64), tree_field(grad_trees_b, algebra, dtype=torch.float64)
    ta, tb = tree_of(a), tree_of(b)
    mean = algebra is NodeAlgebra.MEAN
    da, db = (ta.depth, tb.depth) if mean else (None, None)
    g = torch.Generator().manual_seed(2)
    shape_a, shape_b = ((4, ta.size, 3), (tb.size, 3)) if features else ((4, ta.size), (tb.size,))
    xa = torch.randn(*shape_a, generator=g, dtype=torch.float64, requires_grad=True)
    xb = torch.randn(*shape_b, generator=g, dtype=torch.float64, requires_grad=True)  # shared: grads summed

    def f(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = inner_linear(ta.start, tb.start, da, db, u, v, features=features)
        assert out is not None
        return out

    assert torch.autograd.gradcheck(f, (xa, xb))
    # only one side wanted
    assert torch.autograd.gradcheck(lambda u: f(u, xb.detach()), (xa,))
    assert torch.autograd.gradcheck(lambda v: f(xa.detach(), v), (xb,))


@algebras
def test_gradients_equal_the_unfused_path(algebra: NodeAlgebra) -> None:
    a, b = tree_field(grad_trees, algebra, dtype=torch.float64), tree_field(grad_trees_b, algebra, dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    xa = torch.where(tree_of(a).mask, torch.randn(a.tensor.shape, generator=g, dtype=torch.float64), 0.0)
    xb = torch.where(tree_of(b).mask, torch.randn(b.tensor.shape, generator=g, dtype=torch.float64), 0.0)
    w = torch.randn(len(grad_trees), generator=g, dtype=torch.float64)
    grads = []
    for run in (fused, unfused):
        ua, ub = xa.clone().requires_grad_(), xb.clone().requires_grad_()
        out = fused(a, b, ua, ub) if run is fused else unfused(a.with_tensor(ua), b.with_tensor(ub))
        grads.append(torch.autograd.grad((out * w).sum(), (ua, ub)))
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # padding gets no gradient, float32 values get float32 gradients
    pa = with_padding(a, float("nan")).float().requires_grad_()
    (ga,) = torch.autograd.grad(fused(a, b, pa, xb.float()).sum(), (pa,))
    assert ga.dtype == torch.float32
    assert bool((ga[~tree_of(a).mask] == 0).all()) and bool(torch.isfinite(ga).all())
