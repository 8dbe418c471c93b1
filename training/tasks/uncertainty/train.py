"""Training by negative log-likelihood on the shared loop, and the metrics.

Each model is a :class:`RegressionTask` for :func:`training.fit`: Adam, cosine decay of the
learning rate to 10%, mini-batches from a seeded sampler, gradient norm clipped at 1. Metrics on the
test split: mean NLL (nats), coverage of the central 50% and 90% predictive intervals (the fraction of
targets whose predictive CDF value lies in ``[0.25, 0.75]`` / ``[0.05, 0.95]``), and the RMSE of the
predictive mean -- computed from Gauss–Hermite points of the output distribution -- against the true
conditional mean.
"""

from __future__ import annotations

import math
from typing import Unpack

import torch
from torch import Tensor, nn
from torch import distributions as td

from applicative import counit
from instances import quadrature
from training import Trained, describe, fit
from training.loop import FitOptions, Optimised

from . import data
from .config import Config


def metrics(model: nn.Module, split: data.Split, points: int, chunk: int = 2048) -> dict[str, float]:
    """Test NLL, coverage of the 50% and 90% central intervals, and the predictive mean's RMSE."""
    nll, in50, in90, sq = 0.0, 0.0, 0.0, 0.0
    with torch.no_grad():
        for i in range(0, len(split.x), chunk):
            x, y = split.x[i : i + chunk], split.y[i : i + chunk]
            dist: td.Distribution = model(x)
            u = dist.cdf(y)
            nll -= float(dist.log_prob(y).sum())
            in50 += float(((u >= 0.25) & (u <= 0.75)).sum())
            in90 += float(((u >= 0.05) & (u <= 0.95)).sum())
            predicted = counit(quadrature(dist, points)).tensor  # E[Y | x] from the weighted points
            sq += float(((predicted - data.mean(x)) ** 2).sum())
    n = len(split.x)
    return {"nll": nll / n, "coverage50": in50 / n, "coverage90": in90 / n, "mean_rmse": math.sqrt(sq / n)}


class RegressionTask(Optimised):
    """One seeded run of one model: Adam, the schedule, the batch sampler, the test split."""

    def __init__(self, model: nn.Module, config: Config, train: data.Split, test: data.Split) -> None:
        self.model, self.config, self.train, self.test = model, config, train, test
        self.device = torch.device("cpu")
        self.optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        decay = lambda step: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / config.steps)))  # noqa: E731
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, decay)
        self.sampler = torch.Generator().manual_seed(config.seed + 1)

    def train_step(self) -> Tensor:
        idx = torch.randint(0, len(self.train.x), (self.config.batch,), generator=self.sampler)
        dist: td.Distribution = self.model(self.train.x[idx])
        loss = -dist.log_prob(self.train.y[idx]).mean()
        self.optimise(loss, clip=1.0)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        self.model.eval()
        try:
            return metrics(self.model, self.test, self.config.points)
        finally:
            self.model.train()


def train(
    name: str, model: nn.Module, config: Config, train: data.Split, test: data.Split, **options: Unpack[FitOptions]
) -> Trained[nn.Module]:
    """Train ``model`` to ``config.steps`` (no checkpoints: a run is a few minutes at most)."""
    task = RegressionTask(model, config, train, test)
    run = fit(
        task,
        config={**describe(config), "model": name},
        steps=config.steps,
        out=None,
        eval_every=config.eval_every,
        checkpoint_every=config.steps,
        fix="try a smaller --config lr=",
        **options,
    )
    return Trained.of(model, run)
