"""Batched trees against the design source's Haskell instance, transcribed as plain recursive Python."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import applicative as ap
from applicative import REAL, Field, StructureError, Vector, counit, pointwise, zip_with
from applicative import _kernels as kernels
from applicative.laws import check_laws
from instances import MAX_PLUS, NodeAlgebra, Tree, TreeArbitrary, tree_field
from instances._tree_convert import parse_sexp, pretty, to_sexp
from instances._tree_linear_merge import merge_linear
from instances._tree_partition import merge
from instances.tree import MAX_DEPTH

# ---- the reference: data Tree l = Node (Tree l) (Tree l) | Leaf l -------------------


@dataclass(frozen=True)
class Leaf:
    x: Any


@dataclass(frozen=True)
class Node:
    left: Leaf | Node
    right: Leaf | Node


Ref = Leaf | Node


def ref_of(t: Any) -> Ref:
    return Node(ref_of(t[0]), ref_of(t[1])) if isinstance(t, tuple) else Leaf(t)


def nested_of(t: Ref) -> Any:
    return (nested_of(t.left), nested_of(t.right)) if isinstance(t, Node) else t.x


def ref_fmap(f: Any, t: Ref) -> Ref:
    if isinstance(t, Node):
        return Node(ref_fmap(f, t.left), ref_fmap(f, t.right))
    return Leaf(f(t.x))


def ref_pair(a: Ref, b: Ref) -> Ref:
    if isinstance(a, Node) and isinstance(b, Node):
        return Node(ref_pair(a.left, b.left), ref_pair(a.right, b.right))
    if isinstance(a, Node):
        assert isinstance(b, Leaf)
        return Node(ref_fmap(lambda v: (v, b.x), a.left), ref_fmap(lambda v: (v, b.x), a.right))
    if isinstance(b, Node):
        return Node(ref_fmap(lambda v: (a.x, v), b.left), ref_fmap(lambda v: (a.x, v), b.right))
    return Leaf((a.x, b.x))


def ref_depths(t: Any, d: int = 0) -> list[int]:
    """Leaf depths, left to right, of a tree written as nested 2-tuples."""
    return ref_depths(t[0], d + 1) + ref_depths(t[1], d + 1) if isinstance(t, tuple) else [d]


def ref_counit(t: Ref, add: Any) -> Any:
    """``counit (Node l r) = counit l ~+~ counit r``; ``counit (Leaf x) = x``."""
    return add(ref_counit(t.left, add), ref_counit(t.right, add)) if isinstance(t, Node) else t.x


# ---- hypothesis trees: random, deep unbalanced, single leaves --------------------------

digits = st.integers(-9, 9).map(float)
random_trees = st.recursive(digits, lambda c: st.tuples(c, c), max_leaves=24)


@st.composite
def spines(draw: st.DrawFn) -> Any:
    """A caterpillar of depth up to MAX_DEPTH, turning left or right at random."""
    turns = draw(st.lists(st.booleans(), min_size=1, max_size=MAX_DEPTH))
    t: Any = draw(digits)
    for right in turns:
        t = (draw(digits), t) if right else (t, draw(digits))
    return t


trees = st.one_of(digits, random_trees, spines())


@st.composite
def tree_batches(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    n = draw(st.integers(1, 4))
    return draw(st.lists(trees, min_size=n, max_size=n)), draw(st.lists(trees, min_size=n, max_size=n))


def values_of(f: Field[Any], i: int) -> Any:
    tree = f.structures[0]
    assert isinstance(tree, Tree)
    return tree.to_nested(f.tensor[i], i)


# ---- conversions ----------------------------------------------------------------------


@given(st.lists(trees, min_size=1, max_size=5))
def test_nested_round_trip(ts: list[Any]) -> None:
    tree, leaves = Tree.from_nested(ts)
    assert tree.size == max(len(x) for x in leaves)
    for i, t in enumerate(ts):
        assert tree.to_nested(leaves[i], i) == t
        assert parse_sexp(tree.to_sexp([str(v) for v in leaves[i]], i)) == ref_tree_str(t)


def ref_tree_str(t: Any) -> Any:
    return nested_of(ref_fmap(str, ref_of(t)))


def test_sexp_and_printout() -> None:
    texts = ["((a b) c)", "x", "(p (q (r s)))"]
    tree, atoms = Tree.from_sexp(texts)
    assert atoms == [["a", "b", "c"], ["x"], ["p", "q", "r", "s"]]
    assert [tree.to_sexp(atoms[i], i) for i in range(3)] == texts
    assert tree.depths(2) == [1, 2, 3, 3]
    assert tree.show(atoms[0], 0) == "┬\n├─┬\n│ ├─ a\n│ └─ b\n└─ c"
    assert pretty(parse_sexp("(a b)")) == "┬\n├─ a\n└─ b"
    assert to_sexp(parse_sexp("  ( (1  2)3 ) ")) == "((1 2) 3)"
    assert "Tree(sum, batch=(3,), leaves<=4)" == repr(tree)


# ---- pair, zip_with, fmap, counit against the reference ------------------------------------


@given(tree_batches())
def test_pair_matches_reference(batch: tuple[list[Any], list[Any]]) -> None:
    ta, tb = batch
    a, b = tree_field(ta, dtype=torch.float64), tree_field(tb, dtype=torch.float64)
    c = zip_with(lambda u, v: Field(u.tensor * 100 + v.tensor, ()), a, b)
    for i, (x, y) in enumerate(zip(ta, tb, strict=True)):
        expected = ref_fmap(lambda p: p[0] * 100 + p[1], ref_pair(ref_of(x), ref_of(y)))
        assert values_of(c, i) == nested_of(expected)


@given(tree_batches())
def test_linear_merge_equals_sorting_merge(batch: tuple[list[Any], list[Any]]) -> None:
    """The CPU kernel (two-pointer merge) and the device-agnostic path (one sort) agree exactly."""
    (ta, _), (tb, _) = Tree.from_nested(batch[0]), Tree.from_nested(batch[1])
    start, *sorted_out = merge(ta.start, tb.start)
    linear_out = merge_linear(ta.start, tb.start)
    for got, want in zip(linear_out, sorted_out, strict=True):
        assert torch.equal(got, want)
    joined = ta.join(tb, "test")
    assert isinstance(joined, Tree)
    assert torch.equal(joined.start, start)  # computed lazily from the two sources


def test_linear_merge_on_full_and_broadcast_rows() -> None:
    """Rows with no padding, a tree shared by a batch (a stride-0 view), several batch axes."""
    (shared, _), (batch, _) = Tree.from_nested([((0, 0), 0)]), Tree.from_nested([(0, (0, 0)), 0, ((0, 0), (0, 0))])
    a = shared.start.expand(3, -1)
    for pair in ((a, batch.start), (batch.start, a), (a.reshape(1, 3, -1), batch.start.reshape(1, 3, -1))):
        for got, want in zip(merge_linear(*pair), merge(*pair)[1:], strict=True):
            assert torch.equal(got, want)


@given(st.lists(trees, min_size=1, max_size=4))
def test_fmap_matches_reference(ts: list[Any]) -> None:
    a = tree_field(ts, dtype=torch.float64)
    b = pointwise(lambda t: t * t - 3, a)
    for i, t in enumerate(ts):
        assert values_of(b, i) == nested_of(ref_fmap(lambda v: v * v - 3, ref_of(t)))


@given(st.lists(trees, min_size=1, max_size=4))
def test_counit_matches_reference(ts: list[Any]) -> None:
    for algebra, add in ((NodeAlgebra.SUM, lambda x, y: x + y), (NodeAlgebra.MEAN, lambda x, y: (x + y) / 2)):
        a = tree_field(ts, algebra, dtype=torch.float64)
        got = counit(a).tensor.tolist()
        assert got == pytest.approx([ref_counit(ref_of(t), add) for t in ts], rel=1e-12, abs=1e-12)
        # the tropical ring: max of the leaves for both algebras (1/2 = one in an idempotent semiring)
        top = Field(a.tensor, a.axes, MAX_PLUS)
        assert counit(top).tensor.tolist() == [ref_counit(ref_of(t), max) for t in ts]


@settings(max_examples=20)
@given(tree_batches())
def test_mean_counit_is_invariant_under_refinement(batch: tuple[list[Any], list[Any]]) -> None:
    """Copying a leaf down preserves its integral against the dyadic (Lebesgue) measure."""
    a = tree_field(batch[0], NodeAlgebra.MEAN, dtype=torch.float64)
    b = tree_field(batch[1], NodeAlgebra.MEAN, dtype=torch.float64)
    on_join = zip_with(lambda u, v: u, a, b)
    torch.testing.assert_close(counit(on_join).tensor, counit(a).tensor, rtol=1e-12, atol=1e-12)


def test_pair_broadcasts_a_shared_tree_against_a_batch() -> None:
    a = tree_field([(1.0, 2.0), 3.0, ((4.0, 5.0), 6.0)], dtype=torch.float64)
    shared, leaves = Tree.from_nested([((0.0, 0.0), 0.0)])
    one = Tree(shared.depth[0])  # batch () -- one tree shared by the whole batch
    template = Field(torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64), (one,))
    c = zip_with(lambda u, v: Field(u.tensor + v.tensor, ()), a, template)
    assert values_of(c, 0) == (((11.0, 21.0), 32.0))
    assert values_of(c, 1) == ((13.0, 23.0), 33.0)
    assert values_of(c, 2) == ((14.0, 25.0), 36.0)
    assert leaves == [[0.0, 0.0, 0.0]]


# ---- padding never leaks -------------------------------------------------------------------


def _with_padding(ts: list[Any], fill: float, algebra: NodeAlgebra = NodeAlgebra.SUM) -> Field[Tree]:
    f = tree_field(ts, algebra, dtype=torch.float64)
    tree = f.structures[0]
    assert isinstance(tree, Tree)
    return f.with_tensor(torch.where(tree.mask, f.tensor, fill))


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_padding_is_masked(algebra: NodeAlgebra) -> None:
    ts: list[Any] = [((1.0, 2.0), (3.0, (4.0, 5.0))), 7.0, (0.5, -1.0)]
    clean, dirty = _with_padding(ts, 0.0, algebra), _with_padding(ts, float("nan"), algebra)
    tree = clean.structures[0]
    torch.testing.assert_close(counit(dirty).tensor, counit(clean).tensor)
    # softmax: zero weight on padding, and it equals a masked softmax against the measure
    big = _with_padding(ts, 1e30, algebra).tensor
    sm = kernels.softmax(tree, big, -1)
    logw = tree.log_measure(big.dtype, big.device)
    ref = torch.zeros_like(big)
    for i in range(3):
        n = int(tree.mask[i].sum())
        w = logw[i, :n].exp()
        e = torch.exp(big[i, :n] - big[i, :n].max())
        ref[i, :n] = e / (w * e).sum()
    # at the leaves the masked softmax; padding has weight zero, whatever it holds
    torch.testing.assert_close(torch.where(tree.mask, sm, 0), ref)
    torch.testing.assert_close(tree.counit(sm, -1, REAL), torch.ones(3, dtype=torch.float64))


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_fused_kernels_equal_generic_definitions(algebra: NodeAlgebra) -> None:
    ts: list[Any] = [((1.0, 2.0), (3.0, (4.0, 5.0))), 7.0, (0.5, -1.0)]
    tree = tree_field(ts, algebra).structures[0]
    assert isinstance(tree, Tree)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 2, tree.size, generator=g, dtype=torch.float64)  # (batch, m, n)
    b = torch.randn(3, tree.size, 4, generator=g, dtype=torch.float64)  # (batch, n, k)
    torch.testing.assert_close(tree.contract(a, b, REAL), kernels.generic_contract(tree, a, b, REAL))
    torch.testing.assert_close(tree.contract(a, b, MAX_PLUS), kernels.generic_contract(tree, a, b, MAX_PLUS))
    x = torch.randn(3, tree.size, generator=g, dtype=torch.float64)
    sm = kernels.softmax(tree, x, -1)  # at the leaves the definition; at padding (weight zero) selected out: 0
    torch.testing.assert_close(
        torch.where(tree.mask, sm, 0), torch.where(tree.mask, kernels.generic_softmax(tree, x, -1), 0)
    )
    assert bool((sm[~tree.mask] == 0).all())
    w = torch.randn(tree.size, generator=g, dtype=torch.float64)
    dirty = torch.where(tree.mask, x, float("nan"))  # padding must not leak into the statistics
    ln = kernels.layer_norm(tree, dirty, w, None, 1e-5)
    assert ln.shape == (3, tree.size)
    for i, t in enumerate(ts):  # per tree, over its real leaves, with its measure (reference depths, plain numpy)
        depths = np.array(ref_depths(t))
        n = len(depths)
        m = np.ones(n) if algebra is NodeAlgebra.SUM else 2.0**-depths  # MEAN: total mass 1 (Kraft)
        v = x[i, :n].numpy()
        mean = (m * v).sum() / m.sum()
        var = (m * (v - mean) ** 2).sum() / m.sum()
        want = (v - mean) / np.sqrt(var + 1e-5) * w[:n].numpy()
        np.testing.assert_allclose(ln[i, :n].numpy(), want, rtol=1e-12, atol=1e-12)
    # the attention factor: q M kᵀ with M the diagonal measure
    q = torch.randn(3, 5, tree.size, generator=g, dtype=torch.float64)
    qf = kernels.factor(tree, q)
    torch.testing.assert_close(qf @ qf.transpose(-1, -2), tree.contract(q, q.transpose(-1, -2), REAL))


def test_address_bits_are_the_paths() -> None:
    ts: list[Any] = [((0, 1), (2, (3, 4))), 5]
    tree, _ = Tree.from_nested(ts)
    paths = [[[-1, -1], [-1, 1], [1, -1], [1, 1, -1], [1, 1, 1]], [[]]]
    got = tree.address(4)
    for i, row in enumerate(paths):
        for j, p in enumerate(row):
            assert got[i, j].tolist() == p + [0] * (4 - len(p))
    assert bool((got[1, 1:] == 0).all())


# ---- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "depths",
    [[1, 2], [1, 1, 1], [0, 0], [2, 1, 2], [1, -1, 1], [-1, -1], [-2], [MAX_DEPTH + 1], [0.0]],
)
def test_invalid_depths_raise(depths: list[float]) -> None:
    dtype = torch.float32 if isinstance(depths[0], float) else torch.int64
    with pytest.raises(StructureError):
        Tree(torch.tensor([depths], dtype=dtype))


def test_invalid_inputs_raise() -> None:
    with pytest.raises(StructureError, match="2-tuple"):
        Tree.from_nested([(1, 2, 3)])
    deep: Any = 0
    for _ in range(MAX_DEPTH + 1):
        deep = (deep, 0)
    with pytest.raises(StructureError, match="maximum depth"):
        Tree.from_nested([deep])
    for bad in ["(a b c)", "(a b", "a b", "(a b))", ""]:
        with pytest.raises(StructureError):
            Tree.from_sexp([bad])
    t1, _ = Tree.from_nested([(1, 2), 3])
    t2, _ = Tree.from_nested([(1, 2), 3, 4])
    with pytest.raises(StructureError, match=r"batch=\(3,\)"):
        zip_with(lambda u, v: u, Field(torch.zeros(2, 2), (t1,)), Field(torch.zeros(3, 2), (t2,)))
    tm, _ = Tree.from_nested([(1, 2), 3], NodeAlgebra.MEAN)
    with pytest.raises(StructureError, match=r"Tree\(mean"):
        zip_with(lambda u, v: u, Field(torch.zeros(2, 2), (t1,)), Field(torch.zeros(2, 2), (tm,)))
    coarse, _ = Tree.from_nested([((1, 2), 3)])
    other, _ = Tree.from_nested([(1, (2, 3))])
    with pytest.raises(StructureError, match="refine"):
        coarse.refine(torch.zeros(1, 3), -1, other)
    with pytest.raises(StructureError, match="size"):
        Field(torch.zeros(2, 5), (t1,))


def test_refine_to_an_unrelated_refinement() -> None:
    """``refine`` to a finer tree not built by ``join`` still copies values down."""
    coarse, _ = Tree.from_nested([((1, 2), 3)])
    fine, _ = Tree.from_nested([((1, 2), (3, (4, 5)))])
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert coarse.refine(x, -1, fine).tolist() == [[1.0, 2.0, 3.0, 3.0, 3.0]]


def test_mean_counit_needs_a_half() -> None:
    from applicative import Ring

    class Counting(Ring):  # the naturals: no 1/2, not idempotent
        def zero(self, like: torch.Tensor) -> torch.Tensor:
            return torch.zeros_like(like)

        def one(self, like: torch.Tensor) -> torch.Tensor:
            return torch.ones_like(like)

        def add(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a + b

        def mul(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a * b

    tree, _ = Tree.from_nested([(1, 2)], NodeAlgebra.MEAN)
    with pytest.raises(StructureError, match="cannot weigh values by a measure"):
        tree.counit(torch.zeros(1, 2), -1, Counting())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu() -> None:
    ts: list[Any] = [((1.0, 2.0), (3.0, (4.0, 5.0))), 7.0, (0.5, -1.0)]
    us: list[Any] = [(1.0, 2.0), ((3.0, 4.0), 5.0), 6.0]
    for dev in ("cpu", "cuda"):
        a, b = tree_field(ts, device=dev), tree_field(us, device=dev)
        c = zip_with(lambda u, v: Field(u.tensor * v.tensor, ()), a, b)
        if dev == "cpu":
            ref = counit(c).tensor
        else:
            torch.testing.assert_close(counit(c).tensor.cpu(), ref)


def test_dyadic_weights_sum_to_one() -> None:
    tree, _ = Tree.from_nested([((1, 2), (3, (4, 5))), 7], NodeAlgebra.MEAN)
    assert kernels.mass(tree, torch.zeros(2, tree.size, dtype=torch.float64)).tolist() == [1.0, 1.0]
    assert math.isinf(float(tree.log_measure(torch.float64, torch.device("cpu"))[1, 1]))


# ---- the laws (applicative.laws), for both node algebras ---------------------------------


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_tree_is_lawful(algebra: NodeAlgebra) -> None:
    report = check_laws(TreeArbitrary(algebra), max_examples=4)
    statuses = {r.law.name: r.status for r in report.results}
    for name in ("left unit", "associativity", "Fubini S∘S", "contract", "softmax", "keys/values invariant"):
        assert statuses[name] in ("exact", "approximate"), report.table()


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_tree_is_lawful_over_max_plus(algebra: NodeAlgebra) -> None:
    report = check_laws(TreeArbitrary(algebra), MAX_PLUS, max_examples=3)
    assert all(r.status in ("exact", "n/a") for r in report.results), report.table()


@pytest.mark.parametrize("outputs", [1, 2, 3])
def test_a_linear_map_on_a_shared_tree_applies_to_ragged_trees(outputs: int) -> None:
    """A weight whose columns live on one shared tree, applied to a batch of other trees: each example's
    value is refined with the weight onto their common refinement (the weight's rows are not the batch)."""
    shared: Any = ((0.0, 0.0), (0.0, 0.0))  # the complete depth-2 tree
    xs: list[Any] = [((1.0, 2.0), 3.0), (4.0, (5.0, (6.0, 7.0))), 8.0]
    x = tree_field(xs, dtype=torch.float64)
    tree = tree_field([shared]).structures[0]
    w = torch.randn(outputs, tree.size, dtype=torch.float64)
    b = torch.randn(outputs, dtype=torch.float64)
    got = ap.linear(Field(w, (Vector(outputs), tree)), Field(b, (Vector(outputs),)), x).tensor
    for i, xi in enumerate(xs):
        one = tree_field([xi], dtype=torch.float64)
        want = (
            torch.stack([ap.dot(Field(w[o : o + 1], (tree,)), one).tensor[0] for o in range(outputs)]) + b
        )  # each output: counit (zip_with mul w_o x), on the pair's refinement
        torch.testing.assert_close(got[i], want)
