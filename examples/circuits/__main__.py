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
supervised. A plain loop: Adam, cosine decay, batch 128, one thread by default.

Options: ``--steps``, ``--models dag,tree,gnn``, ``--width``, ``--hidden``, ``--seed``, ``--threads``,
``--json PATH`` (write the report).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Linear
from instances import DAG, Expressions, Vector
from models import DAGFold, TreeFold
from training import Parser, run_cli
from training.cli import bounded, learning_rate, output_file, seed, threads

from .data import OPS, Circuit, dag_batch, generate, tree_batch, tree_size
from .gnn import CircuitGNN

TRAIN_DEPTHS = (1, 2, 3, 4)
TEST_DEPTHS = (5, 6)

PROG = "python -m examples.circuits"


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


def batches(kind: str, circuits: Sequence[Circuit]) -> tuple[DAG | Expressions, Tensor, Tensor]:
    return tree_batch(circuits) if kind == "tree" else dag_batch(circuits)


def accuracy(model: Classifier, circuits: Sequence[Circuit], chunk: int = 500) -> tuple[float, float]:
    """Accuracy and evaluation time per 1000 circuits (batches of ``chunk``, built beforehand)."""
    parts = [batches(model.kind, circuits[i : i + chunk]) for i in range(0, len(circuits), chunk)]
    correct, start = 0, time.perf_counter()
    with torch.no_grad():
        for s, digits, labels in parts:
            correct += int((model(s, digits).argmax(-1) == labels).sum())
    return correct / len(circuits), 1000 * (time.perf_counter() - start) / len(circuits) * 1000


def train(kind: str, args: argparse.Namespace, data: Sequence[Circuit], tests: dict[str, list[Circuit]]) -> Result:
    torch.manual_seed(args.seed)
    model = Classifier(kind, args.width, args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 * (1 + math.cos(math.pi * t / args.steps)))
    rng = random.Random(args.seed + 1)
    start = time.perf_counter()
    for step in range(args.steps):
        s, digits, labels = batches(kind, rng.sample(data, args.batch))
        loss = nnf.cross_entropy(model(s, digits), labels)
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        if (step + 1) % max(1, args.steps // 10) == 0:
            print(f"  {kind} step {step + 1}: loss {loss.item():.4f}", flush=True)
    seconds = time.perf_counter() - start
    model.eval()
    acc, ms = {}, {}
    for name, split in tests.items():
        acc[name], ms[name] = accuracy(model, split)
    return Result(kind, sum(p.numel() for p in model.parameters()), seconds, acc, ms)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


def experiment(argv: Sequence[str] | None = None) -> list[Result]:
    """Generate, train each model and report; a bad option is a :class:`~training.UserError`."""
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=bounded(1, 10**7), default=3000)
    p.add_argument("--batch", type=bounded(1, 2**16), default=128)
    p.add_argument("--width", type=bounded(1, 4096), default=64, help="state size")
    p.add_argument("--hidden", type=bounded(1, 16384), default=128, help="the cell's hidden size")
    p.add_argument("--lr", type=learning_rate, default=3e-3)
    p.add_argument("--train", type=bounded(1, 10**6), default=20000, help="training circuits")
    p.add_argument("--test", type=bounded(1, 10**6), default=2000, help="circuits per test split")
    p.add_argument("--models", default="dag,tree,gnn", help="dag, tree, gnn (needs torch_geometric: the bench extra)")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--json", type=output_file, default=None, help="write the report here")
    args = p.parse_args(argv)
    kinds = args.models.split(",")
    if args.steps < 1 or args.batch < 1 or not kinds or any(k not in ("dag", "tree", "gnn") for k in kinds):
        p.error(
            f"need --steps >= 1, --batch >= 1 and --models from dag,tree,gnn; got {args.steps}, {args.batch}, {kinds}"
        )
    if "gnn" in kinds and importlib.util.find_spec("torch_geometric") is None:
        p.error('--models gnn needs PyTorch Geometric: pip install -e ".[bench]" (or leave gnn out of --models)')
    torch.set_num_threads(args.threads)
    data = generate(args.train, TRAIN_DEPTHS, seed=args.seed)
    tests = {"depth 1-4": generate(args.test, TRAIN_DEPTHS, seed=args.seed + 1000)}
    for d in TEST_DEPTHS:
        tests[f"depth {d}"] = generate(args.test, [d], seed=args.seed + 1000 + d)
    for name, split in tests.items():
        majority = max(Counter(c.value for c in split).values()) / len(split)
        nodes = sum(len(c.nodes) for c in split) / len(split)
        leaves = sum(tree_size(c) for c in split) / len(split)
        print(f"{name}: majority class {majority:.1%}, {nodes:.1f} DAG nodes, {leaves:.1f} unrolled leaves (mean)")
    results = []
    for kind in kinds:
        r = train(kind, args, data, tests)
        results.append(r)
        print(f"{kind}: {r.parameters} parameters, {r.train_seconds:.0f} s for {args.steps} steps")
        for name in tests:
            print(f"  {name}: accuracy {r.accuracy[name]:.2%}, evaluation {r.eval_ms_per_1000[name]:.1f} ms / 1000")
    if args.json:
        with open(args.json, "w") as f:
            plain = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
            json.dump({"args": plain, "results": [asdict(r) for r in results]}, f, indent=1)
    return results


if __name__ == "__main__":
    sys.exit(main())
