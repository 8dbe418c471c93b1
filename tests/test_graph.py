"""Graphs: attention along edges (edge-list kernel) against a masked-attention reference written here."""

from __future__ import annotations

import random
from typing import Any, TypeVar, TypeVarTuple

import pytest
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.data import default_collate

from applicative import Field, Normalise, Structure, StructureError, Vector, attention, cat
from instances import EdgeSoftmax, Graph, GraphArbitrary
from models import encoder

F = TypeVar("F", bound=Structure)
I = TypeVarTuple("I")


pytestmark = pytest.mark.usefixtures("one_thread")


def random_graphs(rng: random.Random, batch: int, n: int) -> tuple[Graph, list[list[tuple[int, int]]], list[int]]:
    """Graphs with repeated edges, self-loops and nodes without in-edges."""
    counts = [rng.randint(1, n) for _ in range(batch)]
    edges = [[(rng.randrange(c), rng.randrange(c)) for _ in range(rng.randint(0, 3 * c))] for c in counts]
    return Graph.from_lists(edges, counts), edges, counts


def reference(q: Tensor, k: Tensor, v: Tensor, edges: list[list[tuple[int, int]]], scale: float) -> Tensor:
    """Masked attention, node by node: ``o_i = Σ_{j -> i} softmax(scale q_i·k_j) v_j`` (0 without in-edges)."""
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for b, rows in enumerate(edges):
        for i in range(q.shape[-2]):
            sources = [j for j, t in rows if t == i]  # with multiplicity
            if not sources:
                continue
            s = torch.stack([(q[b, ..., i, :] * k[b, ..., j, :]).sum(-1) * scale for j in sources], -1)
            w = torch.softmax(s, -1)  # (*heads, len(sources))
            out[b, ..., i, :] = sum(w[..., m, None] * v[b, ..., j, :] for m, j in enumerate(sources))
    return out


def test_edge_attention_equals_the_masked_reference_values_and_gradients() -> None:
    rng = random.Random(0)
    g, edges, _ = random_graphs(rng, 6, 9)
    heads, d = 3, 4
    torch.manual_seed(0)
    q, k, v = (torch.randn(6, heads, g.size, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    fq, fk, fv = (Field(t, (g, Vector(d))) for t in (q, k, v))
    norm = EdgeSoftmax(0.7)
    fused = attention(norm, fq, fk, fv)
    generic = attention(norm, fq, fk, fv, fused=False)  # the definition: dense scores, non-edges masked
    want = reference(q, k, v, edges, 0.7)
    mask = g.mask[:, None, :, None]
    torch.testing.assert_close(fused.tensor * mask, want * mask, rtol=0, atol=1e-12)
    torch.testing.assert_close(generic.tensor * mask, want * mask, rtol=0, atol=1e-12)
    w = torch.randn_like(want) * mask
    grads = torch.autograd.grad((fused.tensor * w).sum(), (q, k, v))
    wants = torch.autograd.grad((want * w).sum(), (q, k, v))
    for a, b in zip(grads, wants, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


class Dense(Normalise):
    """EdgeSoftmax's definition with no kernel of its own: the generic path (dense masked scores)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        return EdgeSoftmax(self.scale)(scores)


def test_the_generic_encoder_is_a_graph_transformer() -> None:
    rng = random.Random(1)
    g, _, _ = random_graphs(rng, 4, 10)
    g = g.with_self_loops()
    model, hidden = Vector(8), Vector(16)
    torch.manual_seed(1)
    net = encoder(model, model, hidden, heads=2, depth=2, normalise=EdgeSoftmax(0.5), dtype=torch.float64)
    x = Field(torch.randn(4, g.size, 8, dtype=torch.float64), (g, model))
    got = net(x)
    for layer in net.layers:
        layer.self_attn.normalise = Dense(0.5)  # type: ignore[union-attr]
    want = net(x)
    mask = g.mask[..., None]
    torch.testing.assert_close(got.tensor * mask, want.tensor * mask, rtol=0, atol=1e-10)


class MaxNumel(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.most = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, Tensor):
                self.most = max(self.most, t.numel())
        return out


def test_no_dense_scores_memory_linear_in_edges() -> None:
    n, e, d = 4000, 16000, 8
    gen = torch.Generator().manual_seed(2)
    edges = torch.randint(0, n, (1, e, 2), generator=gen)
    g = Graph(n, edges)
    q, k, v = (Field(torch.randn(1, n, d, generator=gen), (g, Vector(d))) for _ in range(3))
    with MaxNumel() as m:
        out = attention(EdgeSoftmax(), q, k, v)
    assert out.tensor.shape == (1, n, d)
    assert m.most <= e * d  # the largest tensor is per edge: nothing of n x n = 16,000,000
    sub = Graph(n, edges[:, :50])  # spot check a few nodes against the reference
    small = attention(EdgeSoftmax(), *(Field(f.tensor, (sub, Vector(d))) for f in (q, k, v)))
    rows = [[(int(a), int(b)) for a, b in edges[0, :50].tolist()]]
    want = reference(q.tensor, k.tensor, v.tensor, rows, 1.0)
    torch.testing.assert_close(small.tensor, want, rtol=1e-5, atol=1e-5)


def test_data_collates_concatenates_and_moves() -> None:
    rng = random.Random(3)
    g, edges, counts = random_graphs(rng, 3, 6)
    singles = [Graph.from_lists([e], [c]).index_batch(0) for e, c in zip(edges, counts, strict=True)]
    xs = [Field(torch.randn(c, 2), (s, Vector(2))) for s, c in zip(singles, counts, strict=True)]
    batch = default_collate(xs)
    joined = batch.structures[0]
    assert isinstance(joined, Graph) and joined.count.tolist() == counts
    assert torch.equal(joined.adjacency()[:, : g.size, : g.size], g.adjacency())
    both = cat([batch[:1], batch[1:]])
    assert both.structures[0].equals(joined)
    moved = batch.to("meta")
    assert all(t.device.type == "meta" for t in moved.structures[0].data())


def test_bad_input_is_refused() -> None:
    with pytest.raises(StructureError, match="shape"):
        Graph(3, torch.zeros(1, 4, 3, dtype=torch.int64))
    with pytest.raises(StructureError, match="integer tensor"):
        Graph(3, torch.zeros(1, 4, 2))
    with pytest.raises(StructureError, match="beyond its example's count"):
        Graph(3, torch.tensor([[[0, 2]]]), [2])
    with pytest.raises(StructureError, match="one index -1"):
        Graph(3, torch.tensor([[[0, -1]]]))
    g = Graph(3, torch.tensor([[[0, 1]]]))
    x = Field(torch.randn(1, 3, 2), (g, Vector(2)))
    p = Field(torch.randn(1, 3, 2), (Graph(3, torch.tensor([[[1, 0]]])), Vector(2)))
    with pytest.raises(StructureError, match="on one Graph"):
        attention(EdgeSoftmax(), x, p, p)
    v = Field(torch.randn(1, 3, 2), (Vector(3), Vector(2)))
    with pytest.raises(StructureError, match="on one Graph"):
        attention(EdgeSoftmax(), v, v, v)


def test_graph_is_lawful() -> None:
    from applicative.laws import check_laws

    report = check_laws(GraphArbitrary(), max_examples=10)
    assert report.status("fused = generic (S keys)") != "n/a"
