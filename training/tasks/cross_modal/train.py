"""Training a cross-modal model: a :class:`~training.Task` for the shared loop.

Every step draws a fresh batch of random functions (:mod:`.data`), so the model never sees a function
twice and the held-out set is simply another seed. The loss is the squared L² error of the predicted
function on [-1, 1] (``[-1, 1]²``), exact through the Chebyshev metric ``W = ∫ T_k T_l``
(``d W d``, and ``tr(dᵀ W d W)`` in 2-D), divided by the squared scale of the example's samples.
AdamW (weight decay 0.01, gradient norm clipped to 1), linear warm-up over ``steps // 20`` steps, then a
cosine to zero. Checkpoints, resumption, signals and divergence are the shared loop's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Unpack

import torch
from torch import Tensor, nn

from instances.chebyshev import evaluate, evaluate_2d, metric
from training import Trained, fit_config
from training.loop import FitOptions, Optimised

from .config import Config, TaskKind
from .data import DENSE, ZOOMS, HeldOut, grid, sample_images, sample_points, series
from .model import GridModel, PointsModel

WEIGHT_DECAY = 0.01
CLIP = 1.0


def rate(steps: int) -> Callable[[int], float]:
    """The learning-rate multiplier at each step: linear warm-up, then cosine to zero."""
    warm = max(1, steps // 20)
    return lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))


def padded(c: Tensor, modes: int) -> Tensor:
    """Coefficients ``(B, K)`` or ``(B, K, K)`` zero-padded to ``modes`` terms per axis."""
    pad = [0, modes - c.shape[-1]] * (c.ndim - 1)
    return nn.functional.pad(c, pad)


def squared_l2(pred: Tensor, c: Tensor) -> Tensor:
    """``∫ (p - f)²`` per example, exactly, for series ``(B, n)`` or ``(B, n, n)``."""
    d = pred - padded(c, pred.shape[-1])
    w = metric(pred.shape[-1], d.dtype, d.device)
    if d.ndim == 2:
        return ((d @ w) * d).sum(-1)
    return ((w @ d @ w) * d).sum((-2, -1))


def predict_points(model: PointsModel, points: Any, t: Tensor) -> Tensor:
    """The predicted functions at ``t`` ``(p,)``: ``(B, p)``."""
    with torch.no_grad():
        return evaluate(model(points.x, points.f, points.lengths), t)


def predict_grid(model: GridModel, image: Tensor, m: int) -> Tensor:
    """The predicted functions on ``linspace(-1, 1, m)²``: ``(B, m, m)``."""
    with torch.no_grad():
        s = grid(m)
        return evaluate_2d(model(image), s, s)


def relative(pred: Tensor, true: Tensor) -> Tensor:
    """``‖pred - true‖ / ‖true‖`` per example."""
    dims = tuple(range(1, true.ndim))
    return ((pred - true) ** 2).sum(dims).sqrt() / (true**2).sum(dims).sqrt()


class CrossModalTask(Optimised):
    """One seeded training run: the model, AdamW, the schedule and the data generator."""

    def __init__(self, config: Config, task: TaskKind, held: HeldOut) -> None:
        torch.manual_seed(config.seed)
        self.config, self.task, self.held, self.device = config, task, held, torch.device("cpu")
        self.model: PointsModel | GridModel = PointsModel(config) if task == "points" else GridModel(config)
        self.optimiser = torch.optim.AdamW(self.model.parameters(), lr=config.lr, weight_decay=WEIGHT_DECAY)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, rate(config.steps))
        self.sampler = torch.Generator().manual_seed(config.seed)

    def loss(self) -> Tensor:
        """The batch's mean squared L² error over the samples' squared scale."""
        c = series(self.config, self.config.batch, self.sampler, 1 if self.task == "points" else 2)
        if isinstance(self.model, PointsModel):
            p = sample_points(self.config, c, self.sampler)
            pred = self.model(p.x, p.f, p.lengths)
            s = self.model.tokens(p.x, p.f, p.lengths)[2]
        else:
            img = sample_images(self.config, c).image
            pred = self.model(img)
            s = self.model.tokens(img)[2]
        return (squared_l2(pred, c) / s**2).mean()

    def train_step(self) -> Tensor:
        loss = self.loss()
        self.optimise(loss, clip=CLIP)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        return {f"held_out_{k}": float(v.median()) for k, v in errors(self.model, self.held).items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        f = rate(self.config.steps)
        for group, base in zip(self.optimiser.param_groups, self.schedule.base_lrs, strict=True):
            group["lr"] = base * f(self.schedule.last_epoch)


def errors(model: PointsModel | GridModel, held: HeldOut) -> dict[str, Tensor]:
    """The model's relative L² errors on the held-out set: per sample count (``n8``...) or zoom (``x4``...)."""
    model.eval()
    try:
        if isinstance(model, PointsModel):
            t = grid(DENSE)
            return {
                f"n{n}": relative(predict_points(model, p, t), evaluate(p.coefficients, t))
                for n, p in held.points.items()
            }
        images, r = held.images, held.images.image.shape[-1]
        out = {}
        for z in ZOOMS:
            s = grid(z * r)
            out[f"x{z}"] = relative(predict_grid(model, images.image, z * r), evaluate_2d(images.coefficients, s, s))
        return out
    finally:
        model.train()


def train(
    config: Config, task: TaskKind, held: HeldOut, out: Path | None, **options: Unpack[FitOptions]
) -> Trained[PointsModel | GridModel]:
    """Train (or resume from ``out/checkpoint.pt``) to ``config.steps``."""
    t = CrossModalTask(config, task, held)
    run = fit_config(t, config, out, extra={"task": task}, fix="try a smaller --config lr=...", **options)
    return Trained.of(t.model, run)
