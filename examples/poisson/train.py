"""Training the Funcformer on Poisson data: seeded, checkpointed atomically, resumable.

The loss is the mean squared *relative* L² error of the predicted solution as a function,
``‖g_pred - g‖² / ‖g‖²`` with ``‖c‖² = tr(cᵀ W c W)`` on the leading ``modes x modes`` coefficients;
evaluation measures the error against the exact solution's full series (:func:`data.relative_l2`).

Resumption: the checkpoint holds the model, optimiser, schedule, step and the batch sampler's RNG
state, written to a temporary file and moved into place with :func:`os.replace`, so an interrupted
run (Ctrl-C) continues to exactly the parameters an uninterrupted run reaches.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from tqdm import tqdm

from applicative import Field, LinearAttention, Normalise, ScaledSoftmax
from instances import Chebyshev, CoefficientSoftmax, Vector
from models.funcformer import Funcformer, FuncformerConfig

from . import data
from .config import Config

CHECKPOINT = "checkpoint.pt"


class X(Chebyshev):
    """The first argument of the source and solution: the Transformer's sequence."""


class Y(Chebyshev):
    """The second argument: the Transformer's features."""


def _normalise(config: Config, key_size: int) -> Normalise:
    scale = 1.0 / math.sqrt(key_size)
    if config.normalise == "softmax":
        return ScaledSoftmax(scale)
    if config.normalise == "coefficient":
        return CoefficientSoftmax(scale)
    return LinearAttention(scale)


class PoissonModel(nn.Module):
    """The Funcformer with fixed input/output scalings: source coefficients -> solution coefficients."""

    def __init__(self, config: Config, out_scale: float) -> None:
        super().__init__()
        dtype = getattr(torch, config.dtype)
        n = config.modes
        self.x, self.y = X(n), Y(n)
        model = Vector(config.width) if config.model == "vector" else Chebyshev(config.width)
        key_size = config.width // config.heads if config.model == "vector" else config.width
        cfg = FuncformerConfig(
            heads=config.heads, depth=config.depth, normalise=_normalise(config, key_size), eps=config.eps
        )
        self.net: Funcformer[X, Y, Vector | Chebyshev] = Funcformer(
            self.x, self.y, model, Vector(config.hidden), cfg, dtype=dtype
        )
        self.out_scale = out_scale
        self.dtype = dtype

    def forward(self, f: Tensor) -> Tensor:
        """``f`` ``(batch, n, n)`` -> predicted ``g`` ``(batch, n, n)`` (the model's dtype)."""
        u = self.net(Field(f.to(self.dtype), (self.x, self.y))).tensor
        return u / self.out_scale


def relative_sq(pred: Tensor, target: Tensor) -> Tensor:
    """Per-sample ``‖pred - target‖² / ‖target‖²`` in ``L²([-1,1]²)``."""
    return data.l2_norm_sq(pred - target) / data.l2_norm_sq(target)


@torch.no_grad()
def predict(model: PoissonModel, f: Tensor, chunk: int = 256) -> Tensor:
    """Predictions for many sources, in chunks, as float64 on the CPU."""
    out = [model(f[i : i + chunk]).double().cpu() for i in range(0, len(f), chunk)]
    return torch.cat(out)


def errors(model: PoissonModel, d: data.PoissonData, device: torch.device) -> Tensor:
    """Relative L² errors of the model on ``d`` against the exact solutions (per sample)."""
    return data.relative_l2(predict(model, d.f.to(device)), d.g)


@dataclass
class State:
    """Everything a checkpoint holds."""

    step: int
    model: PoissonModel
    optimiser: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler
    sampler: torch.Generator
    history: list[tuple[int, float, float]]  # (step, train loss, held-out mean relative L2)
    elapsed: float


def build(config: Config, splits: data.Splits, device: torch.device) -> State:
    """A fresh, seeded training state."""
    torch.manual_seed(config.seed)
    out_scale = float(1.0 / data.l2_norm_sq(splits.train.target(config.modes)).mean().sqrt())
    model = PoissonModel(config, out_scale).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, config.lr, total_steps=config.steps, pct_start=config.warmup)
    sampler = torch.Generator().manual_seed(config.seed + 1)
    return State(0, model, opt, sched, sampler, [], 0.0)


def save(state: State, config: Config, path: Path) -> None:
    """Write the checkpoint atomically (temporary file, then ``os.replace``)."""
    blob = {
        "config": dataclasses.asdict(config),
        "step": state.step,
        "model": state.model.state_dict(),
        "out_scale": state.model.out_scale,
        "optimiser": state.optimiser.state_dict(),
        "schedule": state.schedule.state_dict(),
        "sampler": state.sampler.get_state(),
        "history": state.history,
        "elapsed": state.elapsed,
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)


def load(state: State, config: Config, path: Path) -> bool:
    """Restore ``state`` from ``path`` if it holds a checkpoint of the same config; return whether it did."""
    if not path.exists():
        return False
    blob = torch.load(path, map_location="cpu", weights_only=False)
    if blob["config"] != dataclasses.asdict(config):
        raise ValueError(f"{path} was written by a different config; use another --out or delete it")
    state.model.load_state_dict(blob["model"])
    state.model.out_scale = blob["out_scale"]
    state.optimiser.load_state_dict(blob["optimiser"])
    state.schedule.load_state_dict(blob["schedule"])
    state.sampler.set_state(blob["sampler"])
    state.step, state.history, state.elapsed = blob["step"], blob["history"], blob["elapsed"]
    return True


def train(
    config: Config,
    splits: data.Splits,
    out: Path | None,
    device: torch.device | str = "cpu",
    *,
    progress: bool = True,
    stop_after: int | None = None,
    on_step: Callable[[State], None] | None = None,
) -> State:
    """Train (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps.

    Ctrl-C finishes the current step, writes a checkpoint and raises :class:`KeyboardInterrupt`.
    """
    device = torch.device(device)
    state = build(config, splits, device)
    path = None if out is None else out / CHECKPOINT
    if path is not None:
        out.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        load(state, config, path)
    n = config.modes
    dtype = getattr(torch, config.dtype)
    f_train = splits.train.f.to(device, dtype)
    g_train = splits.train.target(n).to(device, dtype)
    last = stop_after if stop_after is not None else config.steps
    bar = tqdm(total=config.steps, initial=state.step, disable=not progress, desc="train", dynamic_ncols=True)
    start = time.perf_counter() - state.elapsed
    test_err = state.history[-1][2] if state.history else float("nan")
    interrupted: list[int] = []
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda sig, frame: interrupted.append(sig))
    try:
        while state.step < min(last, config.steps) and not interrupted:
            idx = torch.randint(0, len(f_train), (config.batch,), generator=state.sampler).to(device)
            loss = relative_sq(state.model(f_train[idx]), g_train[idx]).mean()
            state.optimiser.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            if config.clip > 0:
                nn.utils.clip_grad_norm_(state.model.parameters(), config.clip)
            state.optimiser.step()
            state.schedule.step()
            state.step += 1
            state.elapsed = time.perf_counter() - start
            at_eval = state.step % config.eval_every == 0 or state.step == config.steps
            at_checkpoint = path is not None and (
                state.step % config.checkpoint_every == 0 or state.step == config.steps
            )
            if at_eval:
                test_err = float(errors(state.model, splits.test, device).mean())
            # read the loss (a host sync) only where a bad value would be recorded or saved
            diverged = (at_eval or at_checkpoint) and (
                not math.isfinite(loss.item()) or (at_eval and not math.isfinite(test_err))
            )
            if diverged:
                raise FloatingPointError(
                    f"training diverged at step {state.step} (loss {loss.item()}, held-out error {test_err}); "
                    f"the last checkpoint is kept in {out}; try a smaller --config lr= or --config clip="
                )
            if at_eval:
                state.history.append((state.step, loss.item(), test_err))
            if at_checkpoint:
                save(state, config, path)  # type: ignore[arg-type]
            bar.update(1)
            if state.step % 25 == 0:  # reading the loss waits for the device: not every step
                bar.set_postfix(loss=f"{loss.item():.2e}", test_rel_l2=f"{test_err:.2e}", refresh=False)
            if on_step is not None:
                on_step(state)
    finally:
        bar.close()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if path is not None:
        save(state, config, path)
    if interrupted:
        raise KeyboardInterrupt(f"interrupted at step {state.step}; checkpoint written to {path}")
    return state
