"""Training the Funcformer on Poisson data: a :class:`~training.Task` for the shared loop.

The loss is the mean squared *relative* L² error of the predicted solution as a function,
``‖g_pred - g‖² / ‖g‖²`` with ``‖c‖² = tr(cᵀ W c W)`` on the leading ``modes x modes`` coefficients;
evaluation measures the error against the exact solution's full series (:func:`operators.poisson.norms.relative_l2`).
Checkpoints, resumption, signals and divergence are the shared loop's (:func:`training.fit`).
A run extended past its first ``steps`` keeps the one-cycle schedule's final learning rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from operators.poisson import norms, sources
from training import SINGLE, InputError, Ranks, Trained, check_batch, fit_config, inputs
from training.fingerprint import fingerprint
from training.loop import FitOptions, Optimised
from training.speed import autocast, check_amp, compiled

from .config import Config
from .model import SPEC, PoissonModel

__all__ = ["PoissonTask", "build", "data_of", "errors", "predict", "relative_sq", "train"]


def relative_sq(pred: Tensor, target: Tensor) -> Tensor:
    """Per-sample ``‖pred - target‖² / ‖target‖²`` in ``L²([-1,1]²)``."""
    return norms.l2_norm_sq(pred - target) / norms.l2_norm_sq(target)


@torch.no_grad()
def predict(model: PoissonModel, f: Tensor, chunk: int = 256) -> Tensor:
    """Predictions for many sources, in chunks, as float64 on the CPU.

    Raises:
        InputError: ``model`` not a :class:`PoissonModel` (the class itself, ``None``), ``chunk`` not ``>= 1``.
    """
    if not isinstance(model, PoissonModel):
        got = f"the class {model.__name__}" if isinstance(model, type) else f"a {type(model).__name__}"
        raise InputError(f"predict: model must be a trained PoissonModel (training.tasks.poisson.load), got {got}")
    inputs.count("predict", "chunk", chunk, 1)
    out = [model(f[i : i + chunk]).double().cpu() for i in range(0, len(f), chunk)]
    return torch.cat(out)


def data_of(config: Config, splits: sources.Splits) -> dict[str, Any]:
    """The training data's :func:`~training.fingerprint.fingerprint`, as the run's checkpoints record it."""
    where = f"the Poisson sources of seed {config.seed}"
    return fingerprint(where, sources=splits.train.f, solutions=splits.train.g)


def errors(model: PoissonModel, d: sources.PoissonData, device: torch.device) -> Tensor:
    """Relative L² errors of the model on ``d`` against the exact solutions (per sample)."""
    return norms.relative_l2(predict(model, d.f.to(device)), d.g)


class PoissonTask(Optimised):
    """One seeded training run: the model, Adam, a one-cycle schedule, and the batch sampler."""

    model: PoissonModel

    def __init__(
        self,
        config: Config,
        splits: sources.Splits,
        device: torch.device,
        ranks: Ranks = SINGLE,
        *,
        compile: bool = False,
        amp: bool = False,
    ) -> None:
        torch.manual_seed(config.seed)
        self.config, self.splits, self.device, self.ranks, self.amp = config, splits, device, ranks, amp
        check_batch(config.batch, ranks)
        check_amp(amp, device)
        out = config.out_modes or config.modes
        out_scale = float(1.0 / norms.l2_norm_sq(splits.train.target(out)).mean().sqrt())
        self.model = PoissonModel(config, out_scale).to(device)
        # under torchrun the gradients are averaged over the processes (each trains on its slice of the batch)
        net: nn.Module = self.model if ranks.world == 1 else DistributedDataParallel(self.model)
        self.net = compiled(net, compile)
        self.optimiser, self.schedule = config.adam(self.model.parameters())
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        dtype = getattr(torch, config.dtype)
        self.out, self.dtype = out, dtype
        self.f = splits.train.f.to(device, dtype)
        self.g = splits.train.target(out).to(device, dtype)

    def batch(self) -> tuple[Tensor, Tensor]:
        """This process's slice of the next global batch: sources and their targets (one sampler draws it)."""
        # every process draws the same global batch (one sampler state) and trains on its slice
        if self.config.online:  # fresh sources from the training law, solved exactly
            f = sources.training_law(self.config.sources, self.config.batch, self.sampler, self.config.modes)
            f, g = self.ranks.shard(f), self.ranks.shard(sources.solutions(f, self.out))
            return f.to(self.device, self.dtype), g.to(self.device, self.dtype)
        idx = self.ranks.shard(torch.randint(0, len(self.f), (self.config.batch,), generator=self.sampler))
        idx = idx.to(self.device)
        return self.f[idx], self.g[idx]

    def train_step(self) -> Tensor:
        f, g = self.batch()
        with autocast(self.amp, self.device):
            pred = self.net(f)
        loss = relative_sq(pred.to(g.dtype), g).mean()
        self.optimise(loss, clip=self.config.clip)
        return loss

    def evaluate(self) -> dict[str, float]:
        return {"held_out_rel_l2": float(errors(self.model, self.splits.test, self.device).mean())}


def build(
    config: Config,
    splits: sources.Splits,
    device: torch.device,
    ranks: Ranks = SINGLE,
    *,
    compile: bool = False,
    amp: bool = False,
) -> PoissonTask:
    """A fresh, seeded training task."""
    return PoissonTask(config, splits, device, ranks, compile=compile, amp=amp)


def train(
    config: Config,
    splits: sources.Splits,
    out: Path | None,
    device: torch.device | str = "cpu",
    *,
    compile: bool = False,
    amp: bool = False,
    **options: Unpack[FitOptions],
) -> Trained[PoissonModel]:
    """Train (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps.

    SIGINT/SIGTERM finish the current step, write a checkpoint and raise
    :class:`training.Interrupted` (a ``KeyboardInterrupt``).
    """
    task = build(config, splits, torch.device(device), options.get("ranks", SINGLE), compile=compile, amp=amp)
    fix = "try a smaller --config lr= or a --config clip= (gradient-norm clipping)"
    options.setdefault("data", data_of(config, splits))
    run = fit_config(task, config, out, meta=SPEC.meta(), fix=fix, **options)
    return Trained.of(task.model, run)
