"""An RNN whose state is a function: estimating a temperature profile from two point sensors.

The heat equation ``u_t = ν u_xx + f`` on ``[-1, 1]`` with ``u(±1) = 0`` evolves an unknown profile
``u_t = Σ_{k<=K} a_k(t) sin(kπ(x+1)/2)`` from ``a_k(0) ~ N(0, k^-2)``: per step, mode ``k`` decays by
``exp(-ν (kπ/2)² Δt)`` (exactly) and random heat sources stir it, ``a_k += q w``, ``w ~ N(0, k^-2)``. At
each step two sensors read ``y_t = (u_t(s_1), u_t(s_2)) + noise``.
The task is to know the *whole* profile ``u_t`` at every step from the readings so far -- a state
observer, and a natural recurrence over a function-valued state:

    h_t = σ(W h_{t-1} + U y_t + b),   h_t ∈ Chebyshev(n)  (the estimate of u_t, evaluable anywhere)

with ``W : Chebyshev(n) -> Chebyshev(n)`` the learned propagator-and-correction and ``U`` the learned
gain (``models.RNNCell`` and ``models.scan``; ``σ`` the identity by default, so the model is a linear
observer; ``--activation tanh`` also works at these amplitudes). The loss is ``∫ (h_t - u_t)²`` through
the Chebyshev structure's own measure (``applicative.dot``).

The reference is the best possible estimate: the posterior mean of the modal amplitudes given all
readings so far (a linear-Gaussian model, so this is what a Kalman filter computes), in closed form. With
the sources stirring, the optimal filter settles to a fixed gain -- exactly of the RNN's form, ``W h + U y``
-- so at late times the learned observer can match it.

The observer trains on the shared loop (:func:`training.fit`) with the shared options (``--preset``, ``--config``,
``--steps``, ``--out``, ``--device``, ``--threads``, ``--no-progress``, ``--FIELD VALUE``); ``--out DIR`` writes
``DIR/report.json`` and a resumable ``DIR/checkpoint.pt``.

    python -m examples.observer              # about a minute on one core
    python -m examples.observer --preset tiny
    python -m examples.observer --activation tanh --out runs/observer
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Unpack

import numpy as np
import torch
from numpy.polynomial import chebyshev as npcheb
from torch import Tensor

from applicative import Field, Vector, add, dot, scale
from instances import Chebyshev
from models import RNNCell, scan
from training import RunDir, Trained, at_least, between, check_resume, describe, fit_config, options, run_cli
from training.config import MAX_BATCH, MAX_MODES, MAX_STEPS, Checked, document_bounds
from training.loop import FitOptions, Optimised

SENSORS = (-0.3, 0.55)
#: held-out trajectories the errors are measured on
HELD_OUT = 500


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines a run (and so its checkpoint); validated on construction.

    Attributes:
        modes: ``K``, the sine modes in the initial profile.
        terms: ``n``, the Chebyshev terms of the state.
        steps_in_time: ``T``, readings per trajectory.
        nu, dt: the diffusivity and the time step.
        noise: the sensor noise (standard deviation); stir: ``q``, the heat sources' strength per step.
        steps, batch, lr: Adam with a cosine decay to zero at ``steps``, ``batch`` fresh trajectories per step.
        activation: ``σ``, ``identity`` (a linear observer) or ``tanh``.
        seed: seeds the trajectories and the initialisation.
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
    """

    modes: int = between(6, 1, MAX_MODES)
    terms: int = between(24, 1, MAX_MODES)
    steps_in_time: int = between(16, 1, 10**5)
    nu: float = between(0.02, 0.0, 100.0)
    dt: float = field(default=0.1, metadata={"above": 0.0, "max": 100.0})
    noise: float = field(default=1e-2, metadata={"above": 0.0, "max": 100.0})
    stir: float = between(0.1, 0.0, 100.0)
    steps: int = between(1500, 1, MAX_STEPS)
    batch: int = between(64, 1, MAX_BATCH)
    lr: float = field(default=1e-2, metadata={"above": 0.0})
    activation: Literal["identity", "tanh"] = "identity"
    seed: int = at_least(0, 0)
    eval_every: int = between(250, 1, MAX_STEPS)
    checkpoint_every: int = between(500, 1, MAX_STEPS)


document_bounds(Config)


PRESETS = {"default": Config(), "tiny": Config(steps=300, batch=32, eval_every=100, checkpoint_every=100)}


def modes(config: Config, x: np.ndarray) -> np.ndarray:
    """``sin(kπ(x+1)/2)`` for ``k = 1..K``: ``(len(x), K)``."""
    k = np.arange(1, config.modes + 1)
    return np.sin(np.outer(x + 1.0, k) * math.pi / 2)


def decay(config: Config) -> np.ndarray:
    """Per-step decay ``exp(-ν (kπ/2)² Δt)`` of each mode."""
    k = np.arange(1, config.modes + 1)
    return np.exp(-config.nu * (k * math.pi / 2) ** 2 * config.dt)


def mode_coefficients(config: Config) -> np.ndarray:
    """The Chebyshev coefficients of each mode: ``(K, terms)`` (24 terms resolve mode 6 to about 1e-9)."""
    n = config.terms
    x = np.cos(np.pi * (np.arange(n) + 0.5) / n)  # interpolation at the n Chebyshev points
    return np.stack([npcheb.chebfit(x, mode, n - 1) for mode in modes(config, x).T])


def trajectories(config: Config, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Amplitudes ``(n, T, K)`` of ``u_1..u_T``, readings ``(n, T, 2)``, Chebyshev coefficients ``(n, T, terms)``."""
    scale_k = 1.0 / np.arange(1, config.modes + 1)
    a = rng.standard_normal((n, config.modes)) * scale_k
    amp = np.zeros((n, config.steps_in_time, config.modes))
    for t in range(config.steps_in_time):
        a = a * decay(config) + config.stir * rng.standard_normal((n, config.modes)) * scale_k
        amp[:, t] = a
    noise = config.noise * rng.standard_normal((n, config.steps_in_time, 2))
    readings = amp @ modes(config, np.array(SENSORS)).T + noise
    return amp, readings, amp @ mode_coefficients(config)


def posterior_mean(config: Config, readings: np.ndarray) -> np.ndarray:
    """``E[a_t | y_1..y_t]`` for every ``t``: ``(n, T, K)``, by conditioning the joint Gaussian.

    The latent ``z = (a_0, w_1, ..., w_T)`` has a diagonal prior; ``a_t = G_t z`` with
    ``G_t = [D^t, q D^(t-1), ..., q D^0, 0, ...]`` and ``y_s = C a_s + e_s``, so
    ``E[a_t | y_{<=t}] = G_t Σ Hᵀ (H Σ Hᵀ + r² I)^-1 y_{<=t}`` with ``H`` the rows ``C G_s``, ``s <= t``.
    """
    big_t, k = config.steps_in_time, config.modes
    c = modes(config, np.array(SENSORS))  # (2, K)
    d = decay(config)
    sigma = np.tile(1.0 / np.arange(1, k + 1) ** 2, big_t + 1)  # prior variances of z
    g = np.zeros((big_t + 1, k, k * (big_t + 1)))  # g[t] = G_t
    for t in range(big_t + 1):
        g[t, :, :k] = np.diag(d**t)
        for s in range(1, t + 1):
            g[t, :, k * s : k * (s + 1)] = config.stir * np.diag(d ** (t - s))
    out = np.zeros((*readings.shape[:2], k))
    for t in range(1, big_t + 1):
        h = np.concatenate([c @ g[s] for s in range(1, t + 1)])  # (2t, K(T+1))
        gain = (g[t] * sigma) @ h.T @ np.linalg.inv((h * sigma) @ h.T + config.noise**2 * np.eye(len(h)))
        out[:, t - 1] = readings[:, :t].reshape(len(readings), -1) @ gain.T
    return out


def relative_l2(config: Config, est: np.ndarray, true: np.ndarray) -> np.ndarray:
    """``|est - true| / |true|`` in ``L²[-1, 1]`` per trajectory and time, from Chebyshev coefficients."""
    x = np.cos(np.pi * (np.arange(256) + 0.5) / 256)  # Gauss–Chebyshev nodes: weights π/256 · sqrt(1 - x²)
    w = np.sqrt(1 - x**2)
    e, u = npcheb.chebval(x, np.moveaxis(est - true, -1, 0)), npcheb.chebval(x, np.moveaxis(true, -1, 0))
    return np.asarray(np.sqrt((w * e**2).sum(-1) / (w * u**2).sum(-1)))


def held_out(config: Config) -> tuple[np.ndarray, np.ndarray]:
    """The held-out readings ``(500, T, 2)`` and true Chebyshev coefficients ``(500, T, terms)`` (seed + 1)."""
    _, y, c = trajectories(config, HELD_OUT, np.random.default_rng(config.seed + 1))
    return y, c


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


PROG = "python -m examples.observer"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help="write report.json and checkpoint.pt here")
    p.add_argument(
        "--activation", choices=["identity", "tanh"], default=None, help="shorthand for --config activation="
    )
    config, a = options.config_of(p, argv, Config)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    out: Path | None = a.out
    with RunDir(out, PROG) if out is not None else contextlib.nullcontext():
        if out is not None:
            check_resume(out, describe(config))
        trained = train(config, out, a.device, progress=not a.no_progress, threads=a.threads)
        errs = errors(config, trained.model)
        report: dict[str, Any] = {
            "config": describe(config),
            "device": str(a.device),
            "torch": torch.__version__,
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "resumed_from_step": trained.resumed_from,
            "held_out_median_relative_l2": errs,
            "history": trained.history,
        }
        if out is not None:
            (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"median relative L2 error of the estimated profile u_t, held out ({HELD_OUT} trajectories):")
    print(f"{'t':>3} {'RNN (Chebyshev state)':>22} {'posterior mean':>15} {'zero':>8}")
    for t in range(config.steps_in_time):
        print(f"{t + 1:>3} {errs['rnn'][t]:>22.2e} {errs['posterior_mean'][t]:>15.2e} {errs['zero'][t]:>8.2f}")
    if out is not None:
        print(f"wrote {out / 'report.json'}, {out / 'checkpoint.pt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
