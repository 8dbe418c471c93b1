"""Training one circuit classifier: a :class:`~training.Task` for the shared loop, and its measures.

Adam with a cosine decay to zero, batches drawn by a seeded ``random.Random`` (without replacement), the
cross-entropy of the output's digit, gradient norm clipped to 1; evaluation: accuracy on held-out circuits of
depths 1-4, and per test split the accuracy and the evaluation time per 1000 circuits.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as nnf

from instances import DAG, Expressions
from training import describe, fit_config
from training.loop import Optimised, Progress

from .config import Config, ModelKind
from .data import Circuit, dag_batch, tree_batch
from .model import Classifier


@dataclass(frozen=True)
class Result:
    """One model's run: its parameters, training seconds, and per test split its accuracy and evaluation time."""

    model: str
    parameters: int
    train_seconds: float
    accuracy: dict[str, float]
    eval_ms_per_1000: dict[str, float]


def batches(
    kind: str, circuits: Sequence[Circuit], device: torch.device | str | None = None
) -> tuple[DAG | Expressions, Tensor, Tensor]:
    """A batch of circuits as the model ``kind`` reads them: the structure, the digits and the outputs."""
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
    restart: bool = False,
) -> tuple[Result, Progress]:
    """Train model ``kind`` (or resume from ``out/checkpoint.pt``) to ``config.steps``; its results and run."""
    task = CircuitTask(config, kind, data, tests["depth 1-4"], torch.device(device))
    extra = {"model": kind}
    run = fit_config(
        task, config, out, extra=extra, fix="try a smaller --lr", progress=progress, threads=threads, restart=restart
    )
    model = task.model
    model.eval()
    acc, ms = {}, {}
    for name, split in tests.items():
        acc[name], ms[name] = accuracy(model, split)
    return Result(kind, sum(p.numel() for p in model.parameters()), run.elapsed, acc, ms), run
