"""Training the Darcy Funcformer: a :class:`~training.Task` for the shared loop.

The loss is the mean squared relative L² error of ``u`` on the ``points x points`` grid (the predicted
series evaluated at the nodes, against the finite-difference solution); evaluation reports the mean
relative L² error (not squared) on the held-out set. Checkpoints, resumption, signals and divergence
are the shared loop's (:func:`training.fit`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import torch
from torch import Tensor

from operators.darcy import data
from training import Trained, fit_config
from training.loop import FitOptions, Optimised

from .config import Config
from .model import SPEC, DarcyModel, centred, roughness


def relative_sq(pred: Tensor, exact: Tensor) -> Tensor:
    """Per-sample ``‖pred - exact‖² / ‖exact‖²`` on the grid."""
    return data.relative_l2(pred, exact).pow(2)


def objective(model: DarcyModel, x: Tensor, exact: Tensor) -> Tensor:
    """The training loss on inputs ``x`` and grid solutions ``exact`` ``(batch, P, P)``: the batch mean of
    ``‖u - exact‖² / ‖exact‖² + λ roughness(u) / mean(exact²)`` (``λ = config.smooth``; the series ``u``)."""
    u = model(x)
    loss = relative_sq(model.on_grid(u), exact)
    if model.config.smooth > 0:
        loss = loss + model.config.smooth * roughness(u) / exact.pow(2).mean((-2, -1))
    return loss.mean()


def build_model(config: Config, train: data.DarcyData) -> DarcyModel:
    """A seeded model whose input and output scales come from the training set."""
    torch.manual_seed(config.seed)
    log_a, u = train.a.log(), train.u
    if config.homogeneous:  # the scales of what the network sees: log a - m in, u e^m out
        log_a, m = centred(log_a)
        u = u * m.exp()
    return DarcyModel(config, float(log_a.mean()), float(log_a.std()), float(u.pow(2).mean().rsqrt()))


@torch.no_grad()
def predict(model: DarcyModel, log_a: Tensor, chunk: int = 256) -> Tensor:
    """Predicted ``u`` on the grid for many inputs, float64 on the CPU."""
    return torch.cat([model.on_grid(model(log_a[i : i + chunk])).double().cpu() for i in range(0, len(log_a), chunk)])


class DarcyTask(Optimised):
    """One seeded training run: model, Adam, a one-cycle schedule and the batch sampler."""

    model: DarcyModel

    def __init__(self, config: Config, splits: data.Splits, device: torch.device) -> None:
        self.config, self.device = config, device
        self.model = build_model(config, splits.train).to(device)
        dtype = self.model.dtype
        self.optimiser = torch.optim.Adam(
            self.model.parameters(), lr=config.lr, betas=(0.9, config.beta2), weight_decay=config.weight_decay
        )
        self.schedule = torch.optim.lr_scheduler.OneCycleLR(
            self.optimiser, config.lr, total_steps=config.steps, pct_start=config.warmup
        )
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        self.x = self.model.inputs(splits.train).to(device, dtype)
        self.u = splits.train.u.to(device, dtype)
        self.x_test = self.model.inputs(splits.test).to(device, dtype)
        self.u_test = splits.test.u

    def train_step(self) -> Tensor:
        idx = torch.randint(0, len(self.x), (self.config.batch,), generator=self.sampler).to(self.device)
        which = data.random_symmetries(len(idx), self.sampler) if self.config.augment else None  # checkpointed
        x, u = data.moved(self.x[idx], self.u[idx], which)
        loss = objective(self.model, x, u)
        self.optimise(loss, clip=self.config.clip)
        return loss

    def errors(self) -> Tensor:
        """Held-out relative L² errors, per sample."""
        return data.relative_l2(predict(self.model, self.x_test), self.u_test)

    def evaluate(self) -> dict[str, float]:
        return {"held_out_rel_l2": float(self.errors().mean())}


def train(
    config: Config,
    splits: data.Splits,
    out: Path | None,
    device: torch.device | str = "cpu",
    **options: Unpack[FitOptions],
) -> tuple[Trained[DarcyModel], DarcyTask]:
    """Train (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps."""
    task = DarcyTask(config, splits, torch.device(device))
    fix = "try a smaller --config lr= or a --config clip= (gradient-norm clipping)"
    run = fit_config(task, config, out, meta=SPEC.meta(), fix=fix, **options)
    return Trained.of(task.model, run), task
