"""Learn arithmetic circuits mod 10 with shared subexpressions: the DAG fold against the tree fold on the unrolled tree.

``python -m examples.circuits`` trains two models with the same learned node cell (:class:`models.NodeCell`,
the same parameters) on seeded circuits (:mod:`examples.circuits.data`) of depths 1-4 and reports held-out
accuracy on depths 1-4 and on depths 5 and 6, never seen in training, with each model's evaluation time:

* ``dag``: :class:`models.DAGFold` on the circuit as a :class:`instances.DAG` -- every node computed once;
* ``tree``: :class:`models.TreeFold` on the circuit unrolled into its expression tree
  (:class:`instances.Expressions`) -- every shared subexpression recomputed once per path;
* ``gnn``: the message-passing peer, a gated relational graph network from PyTorch Geometric with as many
  rounds as the batch's deepest circuit (:mod:`examples.circuits.gnn`; the ``bench`` extra).

Both compute the same function of the same parameters (the unrolled tree's fold equals the DAG's fold for
any cell), so they should learn alike; what differs is the cost, which grows with the tree (up to ``2^depth``
leaves) for one and with the circuit (``3 depth + 1`` nodes) for the other. Only the output's value is
supervised. Each model trains on the shared loop (:func:`training.fit`): Adam, cosine decay, batch 128.

Options: the shared ones (``--preset``, ``--config``, ``--steps``, ``--out``, ``--device``, ``--threads``,
``--no-progress``, and ``--FIELD VALUE`` for each field of :class:`Config`: ``--width``, ``--hidden``, ``--seed``,
...), ``--models dag,tree,gnn`` and ``--json PATH`` (write the report there too). ``--out DIR`` writes
``DIR/report.json`` and a resumable ``DIR/MODEL/checkpoint.pt`` per model.

Examples::

    python -m examples.circuits                                  # dag, tree, gnn: 3000 steps each
    python -m examples.circuits --models dag,tree --out runs/circuits
    python -m examples.circuits --preset tiny --models dag       # seconds
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Linear
from instances import DAG, Expressions, Vector
from models import DAGFold, TreeFold
from training import RunDir, UserError, at_least, between, check_resume, describe, fit_config, options, run_cli
from training.cli import output_file
from training.config import MAX_STEPS, Checked, batch_within, document_bounds
from training.loop import Optimised, Progress

from .data import OPS, Circuit, dag_batch, generate, tree_batch, tree_size
from .gnn import CircuitGNN

TRAIN_DEPTHS = (1, 2, 3, 4)
TEST_DEPTHS = (5, 6)

PROG = "python -m examples.circuits"
#: the models compared: the DAG fold, the tree fold on the unrolled circuit, the message-passing peer
ModelKind = Literal["dag", "tree", "gnn"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one model's run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: Adam with a cosine decay to zero at ``steps``, gradient norm clipped to 1; ``batch``
            training circuits drawn per step (without replacement).
        width, hidden: the state size and the node cell's hidden size.
        train, test: seeded circuits to train on (depths 1-4) / per test split (depths 1-4, 5 and 6).
        seed: seeds the circuits, the initialisation and the batches.
        eval_every, checkpoint_every: steps between held-out evaluations (depths 1-4) / checkpoints.
    """

    steps: int = between(3000, 1, MAX_STEPS)
    batch: int = between(128, 1, 2**16)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    width: int = between(64, 1, 4096)
    hidden: int = between(128, 1, 16384)
    train: int = between(20000, 1, 10**6)
    test: int = between(2000, 1, 10**6)
    seed: int = at_least(0, 0)
    eval_every: int = between(1000, 1, MAX_STEPS)
    checkpoint_every: int = between(500, 1, MAX_STEPS)

    def consistent(self) -> str | None:
        return batch_within(self, "training circuits")


document_bounds(Config)


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(steps=20, batch=16, width=8, hidden=8, train=200, test=40, eval_every=10, checkpoint_every=10),
}


class Digits(Vector):
    size = 10


@dataclass(frozen=True)
class Result:
    model: str
    parameters: int
    train_seconds: float
    accuracy: dict[str, float]
    eval_ms_per_1000: dict[str, float]


class Classifier(nn.Module):
    """A fold (DAG or tree) of one-hot digits, read out at the output node by a linear map onto the 10 digits."""

    def __init__(self, kind: str, width: int, hidden: int) -> None:
        super().__init__()
        self.kind = kind
        if kind == "gnn":
            self.gnn = CircuitGNN(width, len(OPS))
            return
        state, cell_hidden = Vector(width), Vector(hidden)
        fold = DAGFold if kind == "dag" else TreeFold
        self.fold = fold(Digits(), state, cell_hidden, len(OPS))
        self.head: Linear[Vector, Digits] = Linear(state, Digits())

    def forward(self, structure: DAG | Expressions, digits: Tensor) -> Tensor:
        x = nnf.one_hot(digits, 10).to(torch.float32)
        if self.kind == "gnn":
            assert isinstance(structure, DAG)
            return self.gnn(structure, digits)  # type: ignore[no-any-return]
        if isinstance(structure, DAG):
            assert isinstance(self.fold, DAGFold)
            out = structure.last(self.fold(structure, Field(x, (structure, Digits()))))
        else:
            assert isinstance(self.fold, TreeFold)
            out = self.fold(structure, Field(x, (structure.tree, Digits())))
        return self.head(out).tensor  # (B, 10) logits


def batches(
    kind: str, circuits: Sequence[Circuit], device: torch.device | str | None = None
) -> tuple[DAG | Expressions, Tensor, Tensor]:
    return tree_batch(circuits, device) if kind == "tree" else dag_batch(circuits, device)


def accuracy(model: Classifier, circuits: Sequence[Circuit], chunk: int = 500) -> tuple[float, float]:
    """Accuracy and evaluation time per 1000 circuits (batches of ``chunk``, built beforehand on the model's device)."""
    device = next(model.parameters()).device
    parts = [batches(model.kind, circuits[i : i + chunk], device) for i in range(0, len(circuits), chunk)]
    correct, start = 0, time.perf_counter()
    with torch.no_grad():
        for s, digits, labels in parts:
            correct += int((model(s, digits).argmax(-1) == labels).sum())
    return correct / len(circuits), 1000 * (time.perf_counter() - start) / len(circuits) * 1000


class CircuitTask(Optimised[random.Random]):
    """One seeded run of one model: Adam, the cosine schedule, batches drawn by a seeded ``random.Random``."""

    model: Classifier

    def __init__(
        self, config: Config, kind: ModelKind, data: Sequence[Circuit], held: Sequence[Circuit], device: torch.device
    ) -> None:
        torch.manual_seed(config.seed)
        self.config, self.kind, self.data, self.held, self.device = config, kind, data, held, device
        self.model = Classifier(kind, config.width, config.hidden).to(device)
        self.optimiser = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        steps = config.steps
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimiser, lambda t: 0.5 * (1 + math.cos(math.pi * t / steps))
        )
        self.sampler = random.Random(config.seed + 1)

    def train_step(self) -> Tensor:
        s, digits, labels = batches(self.kind, self.sampler.sample(self.data, self.config.batch), self.device)
        loss = nnf.cross_entropy(self.model(s, digits), labels)
        self.optimise(loss, clip=1.0)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        self.model.eval()
        try:
            return {"accuracy_depth_1_4": accuracy(self.model, self.held)[0]}
        finally:
            self.model.train()


def checkpoint_config(config: Config, kind: ModelKind) -> dict[str, Any]:
    """What a model's checkpoint records of its run (and a resume must match, ``steps`` aside)."""
    return {**describe(config), "model": kind}


def train(
    kind: ModelKind,
    config: Config,
    data: Sequence[Circuit],
    tests: dict[str, list[Circuit]],
    out: Path | None = None,
    device: torch.device | str = "cpu",
    progress: bool = True,
    threads: int | None = None,
) -> tuple[Result, Progress]:
    """Train model ``kind`` (or resume from ``out/checkpoint.pt``) to ``config.steps``; its results and run."""
    task = CircuitTask(config, kind, data, tests["depth 1-4"], torch.device(device))
    extra = {"model": kind}
    run = fit_config(task, config, out, extra=extra, fix="try a smaller --lr", progress=progress, threads=threads)
    model = task.model
    model.eval()
    acc, ms = {}, {}
    for name, split in tests.items():
        acc[name], ms[name] = accuracy(model, split)
    return Result(kind, sum(p.numel() for p in model.parameters()), run.elapsed, acc, ms), run


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


def experiment(argv: Sequence[str] | None = None) -> list[Result]:
    """Generate, train each model and report; a bad option is a :class:`~training.UserError`."""
    out_help = "write report.json and MODEL/checkpoint.pt here"
    p = options.program(PROG, __doc__.splitlines()[0], PRESETS, out_help=out_help)
    p.add_argument("--models", default="dag,tree,gnn", help="dag, tree, gnn (needs torch_geometric: the bench extra)")
    p.add_argument("--json", type=output_file, default=None, help="also write the report here")
    config, a = options.config_of(p, None if argv is None else list(argv), Config)
    kinds = options.names(a.models, MODELS)
    if "gnn" in kinds and importlib.util.find_spec("torch_geometric") is None:
        raise UserError(
            '--models gnn needs PyTorch Geometric: pip install -e ".[bench]" (or leave gnn out of --models)'
        )
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    with RunDir(a.out, PROG) if a.out is not None else contextlib.nullcontext():
        return _experiment(config, kinds, a, a.out)


def _experiment(config: Config, kinds: list[ModelKind], a: Any, out: Path | None) -> list[Result]:
    for kind in kinds if out is not None else ():
        assert out is not None
        check_resume(out / kind, checkpoint_config(config, kind))  # before the data: a refused resume fails at once
    data = generate(config.train, TRAIN_DEPTHS, seed=config.seed)
    tests = {"depth 1-4": generate(config.test, TRAIN_DEPTHS, seed=config.seed + 1000)}
    for d in TEST_DEPTHS:
        tests[f"depth {d}"] = generate(config.test, [d], seed=config.seed + 1000 + d)
    for name, split in tests.items():
        majority = max(Counter(c.value for c in split).values()) / len(split)
        nodes = sum(len(c.nodes) for c in split) / len(split)
        leaves = sum(tree_size(c) for c in split) / len(split)
        print(f"{name}: majority class {majority:.1%}, {nodes:.1f} DAG nodes, {leaves:.1f} unrolled leaves (mean)")
    report: dict[str, Any] = {
        "config": describe(config),
        "models": list(kinds),
        "device": str(a.device),
        "torch": torch.__version__,
        "results": [],
    }
    written = ([] if out is None else [out / "report.json"]) + ([] if a.json is None else [a.json])
    results = []
    for kind in kinds:
        where = None if out is None else out / kind
        r, run = train(kind, config, data, tests, where, a.device, progress=not a.no_progress, threads=a.threads)
        results.append(r)
        print(f"{kind}: {r.parameters} parameters, {r.train_seconds:.0f} s for {run.step} steps")
        for name in tests:
            print(f"  {name}: accuracy {r.accuracy[name]:.2%}, evaluation {r.eval_ms_per_1000[name]:.1f} ms / 1000")
        report["results"].append(
            {**asdict(r), "steps": run.step, "resumed_from_step": run.resumed_from, "history": run.history}
        )
        for path in written:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(report, indent=1))  # after each model: partial runs too
    if written:
        print(f"wrote {', '.join(map(str, written))}")
    return results


if __name__ == "__main__":
    sys.exit(main())
