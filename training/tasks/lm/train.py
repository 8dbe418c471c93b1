"""Training a character-level model: a :class:`~training.Task` for the shared loop.

AdamW (weight decay 0.1 on matrices), linear warm-up then cosine decay, gradient norm clipped; each
step a batch of random windows of the training text (a seeded sampler). Evaluation: validation
bits per character on fixed random windows of the validation text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Unpack

import torch
from torch import Tensor, nn

from training import SINGLE, Ranks, Trained, check_batch, fit_config
from training.fingerprint import fingerprint
from training.loop import FitOptions, Optimised

from .config import Config
from .data import Corpus, windows
from .model import SPEC, CharLM

LN2 = math.log(2.0)


def schedule(config: Config) -> Callable[[int], float]:
    """The learning-rate multiplier: linear warm-up over ``warmup_steps`` steps, then cosine decay to 10%."""

    def f(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        frac = min(1.0, (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    return f


def bits(model: CharLM, x: Tensor, y: Tensor, chunk: int = 64) -> float:
    """Mean bits per character of ``model`` predicting ``y`` from ``x``."""
    with torch.no_grad():
        total = sum(
            float(
                nn.functional.cross_entropy(
                    model(x[i : i + chunk]).flatten(0, 1), y[i : i + chunk].flatten(), reduction="sum"
                )
            )
            for i in range(0, len(x), chunk)
        )
    return total / (y.numel() * LN2)


class LMTask(Optimised):
    """One seeded run: the model, AdamW, the schedule, the window sampler, fixed validation windows."""

    model: CharLM

    def __init__(self, config: Config, corpus: Corpus, device: torch.device, ranks: Ranks = SINGLE) -> None:
        torch.manual_seed(config.seed)
        self.config, self.corpus, self.device, self.ranks = config, corpus, device, ranks
        check_batch(config.batch, ranks)
        self.model = CharLM(config, corpus.vocab).to(device)
        self.net: nn.Module = self.model if ranks.world == 1 else nn.parallel.DistributedDataParallel(self.model)
        decay = [p for p in self.model.parameters() if p.ndim >= 2]
        rest = [p for p in self.model.parameters() if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
        self.optimiser = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.95))
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, schedule(config))
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        g = torch.Generator().manual_seed(config.seed + 2)
        n = config.eval_batches * config.batch
        starts = torch.randint(0, len(corpus.valid) - config.context - 1, (n,), generator=g)
        vx, vy = windows(corpus.valid, starts, config.context)
        self.valid = (vx.to(device), vy.to(device))

    def train_step(self) -> Tensor:
        c = self.config
        starts = torch.randint(0, len(self.corpus.train) - c.context - 1, (c.batch,), generator=self.sampler)
        x, y = (t.to(self.device) for t in windows(self.corpus.train, self.ranks.shard(starts), c.context))
        loss = nn.functional.cross_entropy(self.net(x).flatten(0, 1), y.flatten())
        self.optimise(loss, clip=c.clip)
        return loss / LN2  # bits per character

    def evaluate(self) -> dict[str, float]:
        self.model.eval()
        try:
            return {"valid_bits_per_char": bits(self.model, *self.valid)}
        finally:
            self.model.train()

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "vocab": self.corpus.vocab}


def data_of(corpus: Corpus) -> dict[str, Any]:
    """The training text's :func:`~training.fingerprint.fingerprint`, as the run's checkpoints record it."""
    return fingerprint(f"the Python {corpus.python} documentation", text=corpus.train)


def train(
    config: Config,
    corpus: Corpus,
    out: Path | None,
    device: torch.device | str = "cpu",
    **options: Unpack[FitOptions],
) -> Trained[CharLM]:
    """Train (or resume from ``out/checkpoint.pt``) to ``config.steps`` (or ``stop_after``)."""
    task = LMTask(config, corpus, torch.device(device), options.get("ranks", SINGLE))
    options.setdefault("data", data_of(corpus))
    run = fit_config(task, config, out, meta=SPEC.meta(), fix="try a smaller --config lr=", **options)
    return Trained.of(task.model, run)
