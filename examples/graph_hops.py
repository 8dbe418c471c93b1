"""A graph task that needs two hops: the generic encoder as a graph Transformer against PyTorch Geometric.

Seeded random graphs (16-32 nodes, undirected, average degree 3), about 8% of the nodes marked. A node's
label: is there a marked node at distance 1 or 2 (itself excluded)? One round of message passing sees
only distance 1, so a model needs two layers. Models, at about equal parameters:

* ``ours``: :func:`models.encoder` (2 layers, width 32, 4 heads, MLP 64) on ``Field[Graph, Features]`` with
  :class:`instances.EdgeSoftmax` -- attention along the edges (self-loops added), the generic layers as
  they are, the edge-list kernel underneath;
* ``transformerconv``: PyG ``TransformerConv`` x 2 (4 heads, concatenated, root weight), ReLU, a linear head;
* ``gatconv``: PyG ``GATConv`` x 2 (4 heads, self-loops), ELU, a linear head (GAT's own recipe);
* ``ours-1``: the encoder with one layer, which cannot see two hops (the ablation).

Node accuracy on 500 held-out graphs (majority class printed beside it). ``--models`` picks; the PyG
models need the bench extra. Run: ``python -m examples.graph_hops [--steps N]``.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Vector
from instances import EdgeSoftmax, Graph
from models import encoder
from training import Parser, run_cli
from training.cli import bounded, seed, threads

PROG = "python -m examples.graph_hops"


class Features(Vector):
    size = 2  # one-hot: marked or not (in), the two classes (out)


def sample(rng: random.Random) -> tuple[int, list[tuple[int, int]], list[int], list[int]]:
    """One graph: node count, directed edges (both ways), marks, labels."""
    n = rng.randint(16, 32)
    pairs = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(int(1.5 * n))}
    edges = [(a, b) for a, b in pairs] + [(b, a) for a, b in pairs]
    marked = [int(rng.random() < 0.08) for _ in range(n)]
    near = [set() for _ in range(n)]  # type: list[set[int]]
    for a, b in edges:
        near[b].add(a)
    labels = []
    for i in range(n):
        two = set(near[i]).union(*(near[j] for j in near[i])) - {i}
        labels.append(int(any(marked[j] for j in two)))
    return n, edges, marked, labels


def batch(graphs: Sequence[tuple[int, list[tuple[int, int]], list[int], list[int]]]) -> tuple[Graph, Tensor, Tensor]:
    """The graphs with self-loops, the marks ``(B, n)`` and labels ``(B, n)`` (``-1`` at padding)."""
    g = Graph.from_lists([e for _, e, _, _ in graphs], [n for n, _, _, _ in graphs]).with_self_loops()
    marks = torch.zeros(len(graphs), g.size, dtype=torch.int64)
    labels = torch.full((len(graphs), g.size), -1, dtype=torch.int64)
    for b, (n, _, m, y) in enumerate(graphs):
        marks[b, :n], labels[b, :n] = torch.tensor(m), torch.tensor(y)
    return g, marks, labels


class Ours(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.net = encoder(Features(), Vector(32), Vector(64), heads=4, depth=depth, normalise=EdgeSoftmax(8**-0.5))

    def forward(self, g: Graph, marks: Tensor) -> Tensor:
        x = Field(nnf.one_hot(marks, 2).to(torch.float32), (g, Features()))
        return self.net(x).tensor  # (B, n, 2) logits


class PyG(nn.Module):
    """Two PyG attention layers on the batch flattened into one graph (PyG's batching), and a linear head."""

    def __init__(self, kind: str, width: int) -> None:
        super().__init__()
        with warnings.catch_warnings():  # PyG's import uses torch.jit.script, which torch deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch_geometric.nn import GATConv, TransformerConv
        self.kind, self.embed = kind, nn.Linear(2, width)
        if kind == "transformerconv":
            self.convs = nn.ModuleList([TransformerConv(width, width // 4, heads=4) for _ in range(2)])
        else:
            self.convs = nn.ModuleList([GATConv(width, width // 4, heads=4) for _ in range(2)])
        self.head = nn.Linear(width, 2)

    def forward(self, g: Graph, marks: Tensor) -> Tensor:
        b, n = marks.shape
        e = g.edges.reshape(b, -1, 2)
        e = e[e[..., 0] != e[..., 1]]  # TransformerConv's root weight and GAT's own self-loops see the node itself
        off = (torch.arange(b)[:, None] * n).expand(-1, g.edges.shape[-2])[g.edges[..., 0] != g.edges[..., 1]]
        edge_index = (e + off[:, None]).T  # (2, E): sources, targets
        h = self.embed(nnf.one_hot(marks.reshape(-1), 2).to(torch.float32))
        for conv in self.convs:
            h = conv(h, edge_index)
            h = torch.relu(h) if self.kind == "transformerconv" else nnf.elu(h)
        return self.head(h).reshape(b, n, 2)  # type: ignore[no-any-return]


def build(kind: str) -> nn.Module:
    if kind == "ours":
        return Ours(2)
    if kind == "ours-1":
        return Ours(1)
    return PyG(kind, 48 if kind == "transformerconv" else 92)  # widths nearest ours in parameters (+10%, +4%)


def run(kind: str, train: Sequence[Any], test: Sequence[Any], steps: int, seed: int) -> dict[str, Any]:
    torch.manual_seed(seed)
    model = build(kind)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    start = time.perf_counter()
    for _ in range(steps):
        g, marks, labels = batch(rng.sample(list(train), 32))
        loss = nnf.cross_entropy(model(g, marks).reshape(-1, 2), labels.reshape(-1), ignore_index=-1)
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    seconds = time.perf_counter() - start
    g, marks, labels = batch(test)
    with torch.no_grad():
        pred = model(g, marks).argmax(-1)
    real = labels >= 0
    acc = float((pred[real] == labels[real]).float().mean())
    params = sum(p.numel() for p in model.parameters())
    return {"model": kind, "parameters": params, "accuracy": acc, "seconds": seconds}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


def experiment(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Generate, train each model and report; a bad option is a :class:`~training.UserError`."""
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=bounded(1, 10**7), default=1500)
    p.add_argument("--models", default="ours,transformerconv,gatconv,ours-1")
    p.add_argument("--train", type=bounded(1, 10**6), default=4000)
    p.add_argument("--test", type=bounded(1, 10**6), default=500)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--threads", type=threads, default=1)
    args = p.parse_args(argv)
    kinds = args.models.split(",")
    if args.steps < 1 or any(k not in ("ours", "ours-1", "transformerconv", "gatconv") for k in kinds):
        p.error(f"need --steps >= 1 and --models from ours,ours-1,transformerconv,gatconv; got {kinds}")
    if any(k in ("transformerconv", "gatconv") for k in kinds) and importlib.util.find_spec("torch_geometric") is None:
        p.error('the PyG models need PyTorch Geometric: pip install -e ".[bench]" (or --models ours,ours-1)')
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train = [sample(rng) for _ in range(args.train)]
    test = [sample(rng) for _ in range(args.test)]
    labels = [y for _, _, _, ys in test for y in ys]
    print(f"majority class on the test nodes: {max(labels.count(0), labels.count(1)) / len(labels):.1%}")
    results = []
    for kind in kinds:
        r = run(kind, train, test, args.steps, args.seed)
        results.append(r)
        print(f"{kind}: {r['parameters']} parameters, accuracy {r['accuracy']:.2%}, {r['seconds']:.0f} s", flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
