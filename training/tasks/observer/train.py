"""The observer: an RNN whose state is a Chebyshev series, trained on the shared loop against the true profile."""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import numpy as np
import torch
from torch import Tensor

from applicative import Field, Vector, add, dot, scale
from instances import Chebyshev
from models import RNNCell, scan
from training import Trained, fit_config
from training.loop import FitOptions, Optimised

from .config import Config
from .data import held_out, mode_coefficients, posterior_mean, relative_l2, trajectories


def estimate(cell: RNNCell[Vector, Chebyshev], config: Config, readings: np.ndarray) -> np.ndarray:
    """The observer's estimates (Chebyshev coefficients ``(n, T, terms)``) from ``readings`` ``(n, T, 2)``."""
    device = next(cell.parameters()).device
    with torch.no_grad():
        y = torch.from_numpy(readings).to(device)
        return scan(cell, Field(y, (Vector(config.steps_in_time), Vector(2)))).tensor.cpu().numpy()


class ObserverTask(Optimised[np.random.Generator]):
    """One seeded run: the cell (``W`` starting as the identity on functions), Adam, the cosine, numpy's sampler."""

    def __init__(self, config: Config, device: torch.device) -> None:
        torch.manual_seed(config.seed)
        self.config, self.device = config, device
        self.state, self.sensors, self.seq = Chebyshev(config.terms), Vector(2), Vector(config.steps_in_time)
        activation = (lambda t: t) if config.activation == "identity" else torch.tanh
        cell: RNNCell[Vector, Chebyshev] = RNNCell(self.sensors, self.state, activation, dtype=torch.float64)
        with torch.no_grad():  # W starts as the identity on functions (the profile persists): the metric's inverse
            cell.recurrent.weight.copy_(torch.linalg.inv(self.state.metric(torch.float64, torch.device("cpu"))))
            cell.input.weight.zero_()
            assert cell.input.bias is not None
            cell.input.bias.zero_()
        self.model = self.cell = cell.to(device)
        self.optimiser = torch.optim.Adam(cell.parameters(), lr=config.lr)
        self.schedule = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimiser, config.steps)
        self.sampler = np.random.default_rng(config.seed)
        self.held = held_out(config)

    def train_step(self) -> Tensor:
        _, y, c = trajectories(self.config, self.config.batch, self.sampler)
        h = scan(self.cell, Field(torch.from_numpy(y).to(self.device), (self.seq, self.sensors)))
        err = add(h, scale(-1.0, Field(torch.from_numpy(c).to(self.device), (self.seq, self.state))))
        loss = dot(err, err).tensor.mean()
        self.optimise(loss)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        y, c = self.held
        return {"held_out_rel_l2": float(np.median(relative_l2(self.config, estimate(self.cell, self.config, y), c)))}


def train(
    config: Config, out: Path | None = None, device: torch.device | str = "cpu", **options: Unpack[FitOptions]
) -> Trained[RNNCell[Vector, Chebyshev]]:
    """Train the observer (or resume from ``out/checkpoint.pt``) to ``config.steps``."""
    task = ObserverTask(config, torch.device(device))
    run = fit_config(task, config, out, fix="try a smaller --lr", **options)
    return Trained.of(task.cell, run)


def errors(config: Config, cell: RNNCell[Vector, Chebyshev]) -> dict[str, list[float]]:
    """The per-time median relative L² errors of the observer, the posterior mean and zero, held out."""
    y, c = held_out(config)
    best = posterior_mean(config, y) @ mode_coefficients(config)
    return {
        "rnn": np.median(relative_l2(config, estimate(cell, config, y), c), 0).tolist(),
        "posterior_mean": np.median(relative_l2(config, best, c), 0).tolist(),
        "zero": np.median(relative_l2(config, np.zeros_like(c), c), 0).tolist(),
    }
