"""Training one model of the two-hop task on the shared loop: Adam at a constant rate, node accuracy held out."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from instances import Graph
from training import Trained, describe, fit_config
from training.loop import Optimised

from .config import Config, ModelKind
from .data import Sample, batch
from .model import build


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
    restart: bool = False,
) -> Trained[nn.Module]:
    """Train model ``kind`` (or resume from ``out/checkpoint.pt``) to ``config.steps``."""
    task = HopsTask(config, kind, train, test, torch.device(device))
    run = fit_config(
        task,
        config,
        out,
        extra={"model": kind},
        fix="try a smaller --lr",
        progress=progress,
        threads=threads,
        restart=restart,
    )
    return Trained.of(task.model, run)
