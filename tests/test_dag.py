"""DAGs folded level by level, against a memoised recursive evaluator written here (values and gradients)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVarTuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor
from torch.utils.data import default_collate

from applicative import Field, StructureError, Vector, cat
from instances import DAG, DAGArbitrary, Expressions, by_op
from instances.dag import Node
from models import DAGFold

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


pytestmark = pytest.mark.usefixtures("one_thread")


def random_dag(rng: random.Random, size: int, p_source: float = 0.25, window: int = 4) -> list[Node]:
    """``size`` nodes in topological order; children drawn mostly among the last ``window`` nodes (deep, shared)."""
    nodes: list[Node] = [None]
    for i in range(1, size):
        if rng.random() < p_source:
            nodes.append(None)
            continue

        def child(i: int = i) -> int:
            return rng.randrange(max(0, i - window), i) if rng.random() < 0.8 else rng.randrange(i)

        nodes.append((rng.choice(NAMES), child(), child()))
    return nodes


def evaluate(nodes: list[Node], values: list[Any], ops: Mapping[str, Callable[[Any, Any], Any]]) -> list[Any]:
    """The reference: recursion from every node down to the sources, each node evaluated once (memoised)."""
    memo: dict[int, Any] = {}

    def rec(i: int) -> Any:
        if i not in memo:
            node = nodes[i]
            memo[i] = values[i] if node is None else ops[node[0]](rec(node[1]), rec(node[2]))
        return memo[i]

    return [rec(i) for i in range(len(nodes))]


def sources(rng: random.Random, dags: list[list[Node]], n: int) -> Tensor:
    """Integer source values ``(batch, n)`` (``0`` at operation nodes and padding)."""
    x = torch.zeros(len(dags), n, dtype=torch.float64)
    for b, nodes in enumerate(dags):
        for i, node in enumerate(nodes):
            if node is None:
                x[b, i] = rng.randrange(P)
    return x


def test_fold_matches_the_memoised_evaluator_on_thousands_of_random_dags() -> None:
    rng = random.Random(0)
    dags = [random_dag(rng, rng.randint(1, 40), rng.uniform(0.05, 0.5), rng.randint(1, 6)) for _ in range(3000)]
    d = DAG.from_lists(dags, NAMES)
    x = sources(rng, dags, d.size)
    got = d.fold(Field(x, (d,)), BATCHED)
    assert got.structures[0] is d
    for b, nodes in enumerate(dags):
        want = evaluate(nodes, [int(v) for v in x[b, : len(nodes)].tolist()], EXACT)
        assert got.tensor[b, : len(nodes)].tolist() == want
    assert d.last(got).tensor.tolist() == [got.tensor[b, len(n) - 1].item() for b, n in enumerate(dags)]


nodes_strategy = st.integers(1, 14).flatmap(
    lambda n: st.tuples(
        *[
            st.none()
            if i == 0
            else st.one_of(st.none(), st.tuples(st.sampled_from(NAMES), st.integers(0, i - 1), st.integers(0, i - 1)))
            for i in range(n)
        ]
    )
)


@settings(max_examples=60, deadline=None)
@given(st.lists(nodes_strategy, min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_fold_matches_the_memoised_evaluator_hypothesis(dags: list[tuple[Node, ...]], rng: random.Random) -> None:
    lists = [list(n) for n in dags]
    d = DAG.from_lists(lists, NAMES)
    x = sources(rng, lists, d.size)
    got = d.fold(Field(x, (d,)), BATCHED).tensor
    for b, nodes in enumerate(lists):
        assert got[b, : len(nodes)].tolist() == evaluate(nodes, [int(v) for v in x[b].tolist()], EXACT)


SMOOTH: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "+": lambda a, b: a * b + a,
    "*": lambda a, b: torch.sin(a) - b,
    "-": lambda a, b: a / (1 + b * b),
    "max": lambda a, b: torch.tanh(a + 2 * b),
    "min": lambda a, b: a - 0.5 * b,
}


def test_gradients_match_the_memoised_evaluator() -> None:
    rng = random.Random(1)
    dags = [random_dag(rng, rng.randint(1, 24), 0.3, 3) for _ in range(1000)]
    d = DAG.from_lists(dags, NAMES)
    x = torch.randn(len(dags), d.size, 2, dtype=torch.float64, requires_grad=True)
    w = torch.randn(len(dags), d.size, 2, dtype=torch.float64) * d.mask.unsqueeze(-1)  # a weight on every node
    got = d.fold(Field(x, (d, Vector(2))), by_op(*(SMOOTH[k] for k in NAMES)))
    (g,) = torch.autograd.grad((got.tensor * w).sum(), x)
    # the reference: every DAG evaluated recursively (memoised) on its own leaf tensor, one backward for all
    xr = x.detach().clone().requires_grad_(True)
    rows = xr.unbind(0)
    values = [torch.stack(evaluate(nodes, list(rows[b].unbind(0)), SMOOTH)) for b, nodes in enumerate(dags)]
    mask = d.mask
    torch.testing.assert_close(got.tensor[mask], torch.cat(values).detach())
    (want,) = torch.autograd.grad((torch.cat(values) * w[mask]).sum(), xr)
    torch.testing.assert_close(g, want)


def test_one_batched_step_per_level_and_every_node_once() -> None:
    rng = random.Random(2)
    dags = [random_dag(rng, 30, 0.2, 2) for _ in range(50)] + [[None]]
    d = DAG.from_lists(dags, NAMES)
    sizes: list[int] = []

    def counting(left: Field[*A], right: Field[*A], op: Tensor) -> Field[*A]:
        sizes.append(op.shape[0])
        return BATCHED(left, right, op)

    d.fold(Field(sources(rng, dags, d.size), (d,)), counting)
    depth: list[int] = []
    for nodes in dags:  # levels by hand
        lv: list[int] = []
        for node in nodes:
            lv.append(0 if node is None else 1 + max(lv[node[1]], lv[node[2]]))
        depth.append(max(lv))
        assert d.level[len(depth) - 1, : len(nodes)].tolist() == lv
    assert len(sizes) == max(depth) == d.height  # the Python loop runs once per level, not per node
    assert sum(sizes) == sum(n is not None for nodes in dags for n in nodes)  # each operation node once


def unroll(nodes: list[Node], values: list[int], i: int) -> Any:
    """Node ``i`` written as a tree: every shared subexpression repeated."""
    node = nodes[i]
    return values[i] if node is None else (node[0], unroll(nodes, values, node[1]), unroll(nodes, values, node[2]))


def test_sharing_is_transparent_the_fold_equals_the_unrolled_tree_fold() -> None:
    rng = random.Random(3)
    dags = [random_dag(rng, rng.randint(2, 14), 0.3, 2) for _ in range(200)]
    d = DAG.from_lists(dags, NAMES)
    x = sources(rng, dags, d.size)
    ints = [[int(v) for v in row] for row in x.tolist()]
    trees = [unroll(nodes, ints[b], len(nodes) - 1) for b, nodes in enumerate(dags)]
    e, leaves = Expressions.from_nested(trees, NAMES)
    t = torch.zeros(len(trees), e.tree.size, dtype=torch.float64)
    for b, row in enumerate(leaves):
        t[b, : len(row)] = torch.tensor([float(v) for v in row])  # type: ignore[arg-type]
    tree_values = e.fold(Field(t, (e.tree,)), BATCHED).tensor
    assert torch.equal(d.last(d.fold(Field(x, (d,)), BATCHED)).tensor, tree_values)
    assert e.tree.size > d.size  # the unrolled trees are larger: the sharing was real


def test_with_plus_the_fold_is_linear_the_path_count_measure() -> None:
    rng = random.Random(4)
    dags = [random_dag(rng, rng.randint(1, 20), 0.3, 3) for _ in range(40)]
    d = DAG.from_lists(dags, NAMES)
    x = torch.randn(len(dags), d.size, 3, dtype=torch.float64) * d.sources.unsqueeze(-1)
    got = d.fold(Field(x, (d, Vector(3))), by_op(torch.add)).tensor
    for b, nodes in enumerate(dags):
        paths = torch.zeros(d.size, d.size, dtype=torch.float64)  # paths[v, s]: paths from source s to node v
        for i, node in enumerate(nodes):
            if node is None:
                paths[i, i] = 1
            else:
                paths[i] = paths[node[1]] + paths[node[2]]
        torch.testing.assert_close(got[b, : len(nodes)], (paths @ x[b])[: len(nodes)])


def test_a_two_dimensional_batch() -> None:
    rng = random.Random(5)
    dags = [random_dag(rng, rng.randint(1, 12)) for _ in range(6)]
    flat = DAG.from_lists(dags, NAMES)
    shaped = DAG(flat.children.reshape(2, 3, -1, 2), flat.ops.reshape(2, 3, -1), 5, flat.count.reshape(2, 3))
    x = sources(rng, dags, flat.size)
    got = shaped.fold(Field(x.reshape(2, 3, -1), (shaped,)), BATCHED)
    assert shaped.last(got).tensor.shape == (2, 3)
    torch.testing.assert_close(got.tensor.reshape(6, -1), flat.fold(Field(x, (flat,)), BATCHED).tensor)


def test_data_moves_collates_concatenates_and_indexes() -> None:
    rng = random.Random(6)
    dags = [random_dag(rng, n) for n in (3, 9, 1, 6)]
    singles = [DAG.from_lists([nodes], NAMES).index_batch(0) for nodes in dags]
    assert singles[0].batch_shape == ()
    xs = [Field(sources(rng, [nodes], len(nodes))[0], (s,)) for nodes, s in zip(dags, singles, strict=True)]
    batch = default_collate(xs)  # one example each, of different node counts: padded to the largest
    d = batch.structures[0]
    assert isinstance(d, DAG) and d.batch_shape == (4,) and d.size == 9
    assert d.count.tolist() == [3, 9, 1, 6]
    folded = d.fold(batch, BATCHED)
    for b, (nodes, xb) in enumerate(zip(dags, xs, strict=True)):
        want = evaluate(nodes, [int(v) for v in xb.tensor.tolist()], EXACT)
        assert folded.tensor[b, : len(nodes)].tolist() == want
    both = cat([batch[:2], batch[2:]])
    assert both.structures[0].equals(d) and torch.equal(both.tensor, batch.tensor)
    moved = batch.to("meta")
    assert all(t.device.type == "meta" for t in moved.structures[0].data())
    assert moved.to("meta").structures == moved.structures  # moving twice: one structure object
    leaves, spec = torch.utils._pytree.tree_flatten(batch)
    assert len(leaves) == 5  # the values and the DAG's four tensors
    again = torch.utils._pytree.tree_unflatten(leaves, spec)
    assert again.structures[0].equals(d)


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")  # dynamo, at a graph break
@pytest.mark.parametrize("prebuilt", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_the_learned_fold_compiles(prebuilt: bool) -> None:
    torch.manual_seed(0)
    rng = random.Random(7)
    dags = [random_dag(rng, rng.randint(1, 8), window=2) for _ in range(20)]
    d = DAG.from_lists(dags, NAMES)
    model = DAGFold(Vector(3), Vector(8), Vector(16), len(NAMES))
    x = Field(torch.randn(len(dags), d.size, 3), (d, Vector(3)))

    def run(dag: DAG, f: Field[DAG, Vector]) -> Tensor:
        return dag.last(model(dag, f)).tensor

    want = run(DAG.from_lists(dags, NAMES), x)  # on a fresh DAG object: d's schedule is not built yet
    if prebuilt:  # with the schedule built (one host read), the whole fold is one graph
        assert d.height >= 1
    compiled = torch.compile(run, backend="aot_eager", fullgraph=prebuilt)
    torch.testing.assert_close(compiled(d, x), want)


def test_the_learned_fold_is_the_cell_applied_recursively() -> None:
    torch.manual_seed(1)
    rng = random.Random(8)
    dags = [random_dag(rng, rng.randint(1, 16)) for _ in range(30)]
    d = DAG.from_lists(dags, NAMES)
    model = DAGFold(Vector(3), Vector(6), Vector(10), len(NAMES), dtype=torch.float64)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    x = Field(torch.randn(len(dags), d.size, 3, dtype=torch.float64), (d, Vector(3)))
    out = d.last(model(d, x)).tensor
    g = torch.autograd.grad(out.square().sum(), list(model.parameters()))
    h = model.leaf_norm(model.embed(x)).tensor
    codes = {k: torch.tensor([c]) for c, k in enumerate(NAMES)}

    def cell(a: Tensor, b: Tensor, k: str) -> Tensor:
        s = Vector(6)
        return model.cell(Field(a[None], (s,)), Field(b[None], (s,)), codes[k]).tensor[0]

    ops = {k: (lambda a, b, k=k: cell(a, b, k)) for k in NAMES}
    want = torch.stack([evaluate(n, [h[b, i] for i in range(len(n))], ops)[-1] for b, n in enumerate(dags)])
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(g, torch.autograd.grad(want.square().sum(), list(model.parameters())))


def test_bad_input_is_refused() -> None:
    two = torch.tensor([[[-1, -1], [-1, -1], [0, 1]]])
    ops = torch.zeros(1, 3, dtype=torch.int64)
    with pytest.raises(StructureError, match=r"shape \(\*batch, N, 2\)"):
        DAG(two[..., :1], ops, 1)
    with pytest.raises(StructureError, match="integer tensor"):
        DAG(two.float(), ops, 1)
    with pytest.raises(StructureError, match="ops must have shape"):
        DAG(two, ops[:, :2], 1)
    with pytest.raises(StructureError, match="topological order"):
        DAG(torch.tensor([[[-1, -1], [2, 0], [0, 1]]]), ops, 1)
    with pytest.raises(StructureError, match="one child"):
        DAG(torch.tensor([[[-1, -1], [0, -1], [0, 1]]]), ops, 1)
    with pytest.raises(StructureError, match="must lie in"):
        DAG(two, ops + 3, 2)
    with pytest.raises(StructureError, match="count must lie in"):
        DAG(two, ops, 1, [4])
    with pytest.raises(StructureError, match="level disagrees"):
        DAG(two, ops, 1, level=torch.tensor([[0, 0, 2]]))
    with pytest.raises(StructureError, match="a node must be None"):
        DAG.from_lists([[None, ("^", 0, 0)]], NAMES)
    with pytest.raises(StructureError, match="non-empty list"):
        DAG.from_lists([], NAMES)
    with pytest.raises(StructureError, match="topological"):
        DAG.from_lists([[None, ("+", 1, 0)]], NAMES)
    d = DAG(two, ops, 1)
    assert d.level.tolist() == [[0, 0, 1]]  # a correct level is accepted
    assert DAG(two, ops, 1, level=torch.tensor([[0, 0, 1]])).equals(d)
    other = DAG(torch.tensor([[[-1, -1], [0, 0], [0, 1]]]), ops, 1)
    with pytest.raises(StructureError, match="is not this batch's"):
        d.fold(Field(torch.zeros(1, 3), (other,)), by_op(torch.add))
    with pytest.raises(StructureError, match="combine must return"):
        d.fold(Field(torch.zeros(1, 3), (d,)), lambda a, b, op: Field(torch.cat([a.tensor, b.tensor]), a.axes))
    with pytest.raises(StructureError, match="the cell was built for"):
        DAGFold(Vector(2), Vector(4), Vector(4), 1)(DAG(two, ops, 3), Field(torch.zeros(1, 3, 2), (d, Vector(2))))


def test_dag_is_lawful() -> None:
    from applicative.laws import check_laws

    report = check_laws(DAGArbitrary(), max_examples=10)
    assert report.status("fused = generic (S keys)") != "n/a"
    assert report.status("additivity") != "n/a" and report.status("softmax") != "n/a"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_fold_on_cuda_equals_the_cpu_fold() -> None:
    rng = random.Random(9)
    dags = [random_dag(rng, rng.randint(1, 30)) for _ in range(200)]
    d = DAG.from_lists(dags, NAMES)
    x = Field(sources(rng, dags, d.size), (d,))
    want = d.fold(x, BATCHED).tensor
    moved = x.to("cuda")
    dc = moved.structures[0]
    assert isinstance(dc, DAG) and dc.children.is_cuda
    torch.testing.assert_close(dc.fold(moved, BATCHED).tensor.cpu(), want)
