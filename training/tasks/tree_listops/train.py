"""Training one ListOps classifier: a :class:`~training.Task` for the shared loop.

AdamW (weight decay 0.01) on the cross-entropy of the root's digit, gradient norm clipped to 1, a
linear warm-up over ``steps // 20`` steps then a cosine decay to zero at ``steps``; batches are drawn
with replacement by a seeded generator. Evaluation is the test accuracy. Checkpoints, resumption,
signals and divergence are the shared loop's (:func:`training.fit`).

A run extended past its first ``steps`` (a larger ``--steps``) follows the cosine of the new total from
where it stands (a warm restart: the rate rises from zero to the new schedule's value at that step).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Unpack

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from training import SINGLE, Ranks, Trained, check_batch, describe, fit_config
from training.fingerprint import fingerprint
from training.loop import FitOptions, Optimised

from .config import Config, ModelKind
from .data import Split, Splits, nesting
from .model import SPEC, ListOpsModel

__all__ = [
    "ListOpsTask",
    "accuracy",
    "accuracy_by_depth",
    "build",
    "checkpoint_config",
    "data_of",
    "rate",
    "train",
]

WEIGHT_DECAY = 0.01
CLIP = 1.0


def accuracy(model: ListOpsModel, split: Split) -> float:
    """The fraction of ``split`` the model classifies right."""
    return int((model.predict(split.exprs) == split.labels).sum()) / len(split)


def accuracy_by_depth(model: ListOpsModel, split: Split) -> dict[str, float]:
    """The accuracy on the expressions of each nesting depth of ``split`` (keys ``"1"``, ``"2"``, ...)."""
    right = (model.predict(split.exprs) == split.labels).tolist()
    by: dict[int, list[bool]] = {}
    for e, ok in zip(split.exprs, right, strict=True):
        by.setdefault(nesting(e), []).append(ok)
    return {str(d): sum(by[d]) / len(by[d]) for d in sorted(by)}


def rate(steps: int) -> Callable[[int], float]:
    """The schedule's multiplier of the learning rate at each step: linear warm-up, then cosine to zero."""
    warm = max(1, steps // 20)

    def f(s: int) -> float:
        return min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))

    return f


class ListOpsTask(Optimised):
    """One seeded training run of one model: the model, AdamW, the schedule, and the batch sampler."""

    model: ListOpsModel

    def __init__(
        self, config: Config, kind: ModelKind, splits: Splits, device: torch.device, ranks: Ranks = SINGLE
    ) -> None:
        torch.manual_seed(config.seed)
        self.config, self.kind, self.splits, self.device, self.ranks = config, kind, splits, device, ranks
        check_batch(config.batch, ranks)
        self.model = ListOpsModel(config, kind, device)
        # under torchrun: gradients averaged over the processes, each training on its slice of the batch
        self.net: nn.Module = self.model if ranks.world == 1 else DistributedDataParallel(self.model)
        self.optimiser = torch.optim.AdamW(self.model.parameters(), lr=config.lr, weight_decay=WEIGHT_DECAY)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, rate(config.steps))
        self.sampler = torch.Generator().manual_seed(config.seed)
        self.labels = splits.train.labels.to(device)

    def train_step(self) -> Tensor:
        train = self.splits.train
        # every process draws the same global batch; its trees are built from its own slice of the expressions
        idx = self.ranks.shard(torch.randint(len(train), (self.config.batch,), generator=self.sampler)).tolist()
        logits = self.net([train.exprs[i] for i in idx])
        loss = nn.functional.cross_entropy(logits, self.labels[idx])
        self.optimise(loss, clip=CLIP)
        return loss

    def evaluate(self) -> dict[str, float]:
        return {"test_accuracy": accuracy(self.model, self.splits.test)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        # the rate at the step reached, on this run's schedule: what was saved unless --steps grew (then the
        # cosine of the new total takes over at once)
        f = rate(self.config.steps)
        for group, base in zip(self.optimiser.param_groups, self.schedule.base_lrs, strict=True):
            group["lr"] = base * f(self.schedule.last_epoch)


def checkpoint_config(config: Config, kind: ModelKind) -> dict[str, Any]:
    """What a model's checkpoint records of its run (and a resume must match, ``steps`` aside): config and kind."""
    return {**describe(config), "model": kind}


def data_of(config: Config, splits: Splits) -> dict[str, Any]:
    """The training expressions' :func:`~training.fingerprint.fingerprint` (their labels), as checkpoints record it."""
    return fingerprint(f"the ListOps expressions of seed {config.seed}", labels=splits.train.labels)


def build(config: Config, kind: ModelKind, splits: Splits, device: torch.device, ranks: Ranks = SINGLE) -> ListOpsTask:
    """A fresh, seeded training task."""
    return ListOpsTask(config, kind, splits, device, ranks)


def train(
    config: Config,
    kind: ModelKind,
    splits: Splits,
    out: Path | None,
    device: torch.device | str = "cpu",
    **options: Unpack[FitOptions],
) -> Trained[ListOpsModel]:
    """Train model ``kind`` (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps.

    SIGINT/SIGTERM finish the current step, write a checkpoint and raise
    :class:`training.Interrupted` (a ``KeyboardInterrupt``).
    """
    task = build(config, kind, splits, torch.device(device), options.get("ranks", SINGLE))
    options.setdefault("data", data_of(config, splits))
    run = fit_config(task, config, out, extra={"model": kind}, meta=SPEC.meta(), fix="try a smaller --lr", **options)
    return Trained.of(task.model, run)
