"""Expression trees folded level by level, against a recursive Python evaluator of the nested form."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVarTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from applicative import Field, StructureError, Vector, counit
from instances import Expressions, NodeAlgebra, Tree, by_op
from instances._tree_convert import flatten

A = TypeVarTuple("A")
P = 97  # arithmetic mod P keeps every value an exact small integer in float64
NAMES = ["+", "*", "-", "max", "min"]
EXACT: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: (a + b) % P,
    "*": lambda a, b: (a * b) % P,
    "-": lambda a, b: (a - b) % P,
    "max": max,
    "min": min,
}
BATCHED = by_op(
    lambda a, b: torch.remainder(a + b, P),
    lambda a, b: torch.remainder(a * b, P),
    lambda a, b: torch.remainder(a - b, P),
    torch.maximum,
    torch.minimum,
)


def evaluate(e: Any) -> int:
    """The reference: plain recursion over ``(op, left, right)``."""
    if not isinstance(e, tuple):
        return int(e)
    op, left, right = e
    return int(EXACT[op](evaluate(left), evaluate(right)))


def random_expression(rng: random.Random, depth: int, p_node: float = 0.6) -> Any:
    if depth == 0 or rng.random() > p_node:
        return rng.randrange(P)
    return (rng.choice(NAMES), random_expression(rng, depth - 1, p_node), random_expression(rng, depth - 1, p_node))


def caterpillar(rng: random.Random, length: int) -> Any:
    """A spine ``length`` deep, hanging left or right at random (height ``length``)."""
    e: Any = rng.randrange(P)
    for _ in range(length):
        leaf = rng.randrange(P)
        e = (rng.choice(NAMES), e, leaf) if rng.random() < 0.5 else (rng.choice(NAMES), leaf, e)
    return e


def leaf_field(e: Expressions, leaves: list[list[object]], shape: tuple[int, ...] | None = None) -> Field[Tree]:
    t = torch.zeros(len(leaves), e.tree.size, dtype=torch.float64)
    for i, row in enumerate(leaves):
        t[i, : len(row)] = torch.tensor([float(v) for v in row], dtype=torch.float64)  # type: ignore[arg-type]
    return Field(t if shape is None else t.reshape(*shape, e.tree.size), (e.tree,))


def fold_exact(exprs: list[Any]) -> tuple[Expressions, Tensor]:
    e, leaves = Expressions.from_nested(exprs, NAMES)
    return e, e.fold(leaf_field(e, leaves), BATCHED).tensor


def test_fold_matches_the_recursive_evaluator_on_random_expressions() -> None:
    rng = random.Random(0)
    exprs = [random_expression(rng, rng.randint(0, 9)) for _ in range(300)] + [caterpillar(rng, 40) for _ in range(5)]
    e, got = fold_exact(exprs)
    assert got.tolist() == [evaluate(x) for x in exprs]
    assert e.height == 40  # the caterpillars are the tallest


def test_python_steps_are_the_height_and_each_covers_the_whole_batch() -> None:
    rng = random.Random(1)
    exprs = [random_expression(rng, 6, 0.8) for _ in range(50)] + [7]
    e, leaves = Expressions.from_nested(exprs, NAMES)
    sizes: list[int] = []

    def counting(left: Field[*A], right: Field[*A], op: Tensor) -> Field[*A]:
        sizes.append(op.shape[0])
        return BATCHED(left, right, op)

    e.fold(leaf_field(e, leaves), counting)
    height = max(max(flatten(_shape(x), 64)[1]) for x in exprs)
    assert len(sizes) == height == e.height  # one batched call per level, not one per node
    assert sum(sizes) == sum(len(row) - 1 for row in leaves)  # every internal node exactly once
    # node depths in in-order agree with the nested form's
    for i, x in enumerate(exprs):
        want = _node_depths(x)
        assert e.node_depths()[i, : len(want)].tolist() == want


def _depths(tree: Tree) -> Tensor:
    return torch.where(tree.mask, tree.depth, -1)


def _shape(e: Any) -> Any:
    return (_shape(e[1]), _shape(e[2])) if isinstance(e, tuple) else e


def _node_depths(e: Any, d: int = 0) -> list[int]:
    if not isinstance(e, tuple):
        return []
    return [*_node_depths(e[1], d + 1), d, *_node_depths(e[2], d + 1)]


expressions = st.recursive(
    st.integers(0, P - 1),
    lambda kids: st.tuples(st.sampled_from(NAMES), kids, kids),
    max_leaves=24,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(expressions, min_size=1, max_size=5))
def test_fold_matches_the_recursive_evaluator_hypothesis(exprs: list[Any]) -> None:
    _, got = fold_exact(exprs)
    assert got.tolist() == [evaluate(x) for x in exprs]


def test_a_two_dimensional_batch_and_single_leaves() -> None:
    rng = random.Random(2)
    exprs = [random_expression(rng, 4) for _ in range(6)]
    exprs[3] = 5
    e, leaves = Expressions.from_nested(exprs, NAMES)
    shaped = Expressions(Tree(_depths(e.tree).reshape(2, 3, -1)), e.ops.reshape(2, 3, -1), len(NAMES))
    out = shaped.fold(leaf_field(shaped, leaves, (2, 3)), BATCHED)
    assert out.tensor.shape == (2, 3)
    assert out.tensor.reshape(-1).tolist() == [evaluate(x) for x in exprs]
    only, got = fold_exact([3, 4])  # every tree a single leaf: no levels at all
    assert only.height == 0 and got.tolist() == [3, 4]


@pytest.mark.parametrize("algebra", [NodeAlgebra.SUM, NodeAlgebra.MEAN])
def test_folding_with_plus_or_the_mean_everywhere_is_the_tree_counit(algebra: NodeAlgebra) -> None:
    rng = random.Random(3)
    shapes = [random_expression(rng, 7, 0.7) for _ in range(40)] + [caterpillar(rng, 30)]
    e, _ = Expressions.from_nested(shapes, NAMES)
    tree = Tree(_depths(e.tree), algebra)  # the same shapes with the chosen measure
    x = Field(torch.randn(len(shapes), tree.size, 3, dtype=torch.float64), (tree, Vector(3)))
    step = torch.add if algebra is NodeAlgebra.SUM else (lambda a, b: (a + b) / 2)
    got = Expressions(tree, e.ops, len(NAMES)).fold(x, by_op(step))
    torch.testing.assert_close(got.tensor, counit(x).tensor)


def test_gradients_match_the_recursive_evaluator() -> None:
    rng = random.Random(4)
    exprs = [random_expression(rng, 5, 0.8) for _ in range(12)]
    fns: list[Callable[[Tensor, Tensor], Tensor]] = [
        lambda a, b: a * b + a,
        lambda a, b: torch.sin(a) - b,
        lambda a, b: a / (1 + b * b),
    ] * 2
    e, leaves = Expressions.from_nested(exprs, NAMES)
    x = torch.randn(len(exprs), e.tree.size, dtype=torch.float64, requires_grad=True)
    got = e.fold(Field(x, (e.tree,)), by_op(*fns[:5])).tensor
    (g,) = torch.autograd.grad(got.sum(), x)
    # the reference: the same expressions evaluated recursively on the same leaf tensors
    want_g = torch.zeros_like(x)
    for i, ex in enumerate(exprs):
        it = iter(range(len(leaves[i])))
        xi = x.detach().clone().requires_grad_(True)

        def rec(node: Any, row: int = i, src: Tensor = xi, pos: Any = it) -> Tensor:
            if not isinstance(node, tuple):
                return src[row, next(pos)]
            return fns[NAMES.index(node[0])](rec(node[1]), rec(node[2]))

        value = rec(ex)
        torch.testing.assert_close(got[i], value.detach())
        want_g += torch.autograd.grad(value, xi)[0]
    torch.testing.assert_close(g, want_g)


def test_bad_input_is_refused() -> None:
    e, leaves = Expressions.from_nested([("+", 1, ("*", 2, 3)), 4], NAMES)
    with pytest.raises(StructureError, match="ops must have shape"):
        Expressions(e.tree, e.ops[:, :1], len(NAMES))
    with pytest.raises(StructureError, match="must lie in"):
        Expressions(e.tree, e.ops + 7, len(NAMES))
    with pytest.raises(StructureError, match="integer tensor"):
        Expressions(e.tree, e.ops.float(), len(NAMES))
    with pytest.raises(StructureError, match="node must be"):
        Expressions.from_nested([("^", 1, 2)], NAMES)
    with pytest.raises(StructureError, match="non-empty list"):
        Expressions.from_nested(("+", 1, 2), NAMES)  # a tuple is one expression, not a list of them
    other, _ = Expressions.from_nested([(("+", 1, 2)), ("+", ("+", 1, 2), 3)], NAMES)
    with pytest.raises(StructureError, match="is not this batch's"):
        e.fold(leaf_field(other, [[1, 2], [1, 2, 3]]), BATCHED)
    with pytest.raises(StructureError, match="combine must return"):
        e.fold(leaf_field(e, leaves), lambda a, b, op: Field(torch.cat([a.tensor, b.tensor]), a.axes))
    with pytest.raises(StructureError, match="at least one function"):
        by_op()


def test_listops_exact_fold_is_the_n_ary_evaluator() -> None:
    """ListOps binarised with the operators at the nodes, folded exactly, against the recursive n-ary evaluator."""
    from training.tasks.tree_listops import data, nodes

    shallow, deep = data.generate(400, 5), data.generate_deep(120, 6, deepest=7)
    assert {data.nesting(x) for x in deep.exprs} == {4, 5, 6, 7}
    for split in (shallow, deep):
        assert torch.equal(nodes.exact(split.exprs), split.labels)
    e, digits = nodes.fold_batch(shallow.exprs[:50])
    for i, x in enumerate(shallow.exprs[:50]):
        row = _digits(x)
        assert digits[i, : len(row)].tolist() == row  # the leaves are the digits, in order
        closing = (e.ops[i, : len(row) - 1] % 2 == 1).sum()
        assert int(closing) == _operators(x)  # one closing node per operator


def _digits(x: Any) -> list[int]:
    return [x] if isinstance(x, int) else [d for a in x[1] for d in _digits(a)]


def _operators(x: Any) -> int:
    return 0 if isinstance(x, int) else 1 + sum(_operators(a) for a in x[1])
