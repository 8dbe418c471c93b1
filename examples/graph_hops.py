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
models need the bench extra. Each model trains on the shared loop (:func:`training.fit`: Adam, batches of 32
graphs); ``--out DIR`` writes ``DIR/report.json`` and a resumable ``DIR/MODEL/checkpoint.pt`` per model.

Examples::

    python -m examples.graph_hops                                  # 1500 steps per model
    python -m examples.graph_hops --models ours,ours-1 --steps 500 --out runs/graph_hops
    python -m examples.graph_hops --preset tiny --models ours       # seconds
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import random
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Vector
from instances import EdgeSoftmax, Graph
from models import encoder
from training import RunDir, Trained, UserError, at_least, between, check_resume, describe, fit_config, options, run_cli
from training.config import MAX_STEPS, Checked, batch_within, document_bounds
from training.loop import Optimised

PROG = "python -m examples.graph_hops"
#: the models compared: the generic encoder (two layers, one), PyG's TransformerConv and GATConv
ModelKind = Literal["ours", "transformerconv", "gatconv", "ours-1"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)
PYG = ("transformerconv", "gatconv")
Sample = tuple[int, list[tuple[int, int]], list[int], list[int]]


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one model's run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: Adam at a constant rate, ``batch`` training graphs drawn per step (without replacement).
        train, test: seeded random graphs to train on / to measure node accuracy on.
        seed: seeds the graphs, the initialisation and the batches.
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
    """

    steps: int = between(1500, 1, MAX_STEPS)
    batch: int = between(32, 1, 2**16)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    train: int = between(4000, 1, 10**6)
    test: int = between(500, 1, 10**6)
    seed: int = at_least(0, 0)
    eval_every: int = between(500, 1, MAX_STEPS)
    checkpoint_every: int = between(500, 1, MAX_STEPS)

    def consistent(self) -> str | None:
        return batch_within(self, "training graphs")


document_bounds(Config)


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(steps=20, batch=8, train=64, test=16, eval_every=10, checkpoint_every=10),
}


class Features(Vector):
    size = 2  # one-hot: marked or not (in), the two classes (out)


def sample(rng: random.Random) -> Sample:
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


def batch(graphs: Sequence[Sample], device: torch.device | str = "cpu") -> tuple[Graph, Tensor, Tensor]:
    """The graphs with self-loops, the marks ``(B, n)`` and labels ``(B, n)`` (``-1`` at padding), on ``device``."""
    g = Graph.from_lists([e for _, e, _, _ in graphs], [n for n, _, _, _ in graphs]).with_self_loops()
    marks = torch.zeros(len(graphs), g.size, dtype=torch.int64)
    labels = torch.full((len(graphs), g.size), -1, dtype=torch.int64)
    for b, (n, _, m, y) in enumerate(graphs):
        marks[b, :n], labels[b, :n] = torch.tensor(m), torch.tensor(y)
    return Graph(g.size, g.edges.to(device), g.count.to(device)), marks.to(device), labels.to(device)


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
        real = g.edges[..., 0] != g.edges[..., 1]
        off = (torch.arange(b, device=marks.device)[:, None] * n).expand(-1, g.edges.shape[-2])[real]
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


class HopsTask(Optimised[random.Random]):
    """One seeded run of one model: Adam at a constant rate, batches drawn by a seeded ``random.Random``."""

    def __init__(
        self, config: Config, kind: ModelKind, train: Sequence[Sample], test: Sequence[Sample], device: torch.device
    ) -> None:
        torch.manual_seed(config.seed)
        self.config, self.train, self.device = config, list(train), device
        self.model = build(kind).to(device)
        self.optimiser = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, lambda step: 1.0)
        self.sampler = random.Random(config.seed)
        self.test = batch(test, device)

    def train_step(self) -> Tensor:
        g, marks, labels = batch(self.sampler.sample(self.train, self.config.batch), self.device)
        loss = nnf.cross_entropy(self.model(g, marks).reshape(-1, 2), labels.reshape(-1), ignore_index=-1)
        self.optimise(loss)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        return {"test_accuracy": accuracy(self.model, *self.test)}


def accuracy(model: nn.Module, g: Graph, marks: Tensor, labels: Tensor) -> float:
    """Node accuracy over the real (unpadded) nodes."""
    with torch.no_grad():
        pred = model(g, marks).argmax(-1)
    real = labels >= 0
    return float((pred[real] == labels[real]).float().mean())


def checkpoint_config(config: Config, kind: ModelKind) -> dict[str, Any]:
    """What a model's checkpoint records of its run (and a resume must match, ``steps`` aside)."""
    return {**describe(config), "model": kind}


def train(
    config: Config,
    kind: ModelKind,
    train: Sequence[Sample],
    test: Sequence[Sample],
    out: Path | None = None,
    device: torch.device | str = "cpu",
    progress: bool = True,
    threads: int | None = None,
) -> Trained[nn.Module]:
    """Train model ``kind`` (or resume from ``out/checkpoint.pt``) to ``config.steps``."""
    task = HopsTask(config, kind, train, test, torch.device(device))
    run = fit_config(
        task, config, out, extra={"model": kind}, fix="try a smaller --lr", progress=progress, threads=threads
    )
    return Trained.of(task.model, run)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


def experiment(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Generate, train each model and report; a bad option is a :class:`~training.UserError`."""
    p = options.program(
        PROG, __doc__.splitlines()[0], PRESETS, out_help="write report.json and MODEL/checkpoint.pt here"
    )
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of: {', '.join(MODELS)}")
    config, a = options.config_of(p, None if argv is None else list(argv), Config)
    kinds = options.names(a.models, MODELS)
    if any(k in PYG for k in kinds) and importlib.util.find_spec("torch_geometric") is None:
        raise UserError('the PyG models need PyTorch Geometric: pip install -e ".[bench]" (or --models ours,ours-1)')
    with RunDir(a.out, PROG) if a.out is not None else contextlib.nullcontext():
        return _experiment(config, kinds, a, a.out)


def _experiment(config: Config, kinds: list[ModelKind], a: Any, out: Path | None) -> list[dict[str, Any]]:
    for kind in kinds if out is not None else ():
        assert out is not None
        check_resume(out / kind, checkpoint_config(config, kind))  # before the data: a refused resume fails at once
    rng = random.Random(config.seed)
    train_set = [sample(rng) for _ in range(config.train)]
    test_set = [sample(rng) for _ in range(config.test)]
    labels = [y for _, _, _, ys in test_set for y in ys]
    majority = max(labels.count(0), labels.count(1)) / len(labels)
    print(f"majority class on the test nodes: {majority:.1%}")
    report: dict[str, Any] = {
        "config": describe(config),
        "models": list(kinds),
        "device": str(a.device),
        "torch": torch.__version__,
        "majority_test_accuracy": majority,
        "results": [],
    }
    results = []
    for kind in kinds:
        start = time.perf_counter()
        trained = train(
            config,
            kind,
            train_set,
            test_set,
            None if out is None else out / kind,
            a.device,
            progress=not a.no_progress,
            threads=a.threads,
        )
        seconds = time.perf_counter() - start
        acc = accuracy(trained.model, *batch(test_set, a.device))
        params = sum(p.numel() for p in trained.model.parameters())
        r = {"model": kind, "parameters": params, "accuracy": acc, "seconds": seconds}
        results.append(r)
        print(f"{kind}: {params} parameters, accuracy {acc:.2%}, {seconds:.0f} s", flush=True)
        report["results"].append(
            {**r, "steps": trained.step, "resumed_from_step": trained.resumed_from, "history": trained.history}
        )
        if out is not None:
            (out / "report.json").write_text(json.dumps(report, indent=1))  # after each model: partial runs too
    if out is not None:
        print(f"wrote {out / 'report.json'}")
    return results


if __name__ == "__main__":
    sys.exit(main())
