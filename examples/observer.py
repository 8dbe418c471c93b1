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

    python -m examples.observer              # about a minute on one core
    python -m examples.observer --preset tiny
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace

import numpy as np
import torch
from numpy.polynomial import chebyshev as npcheb
from tqdm import tqdm

from applicative import Field, Vector, add, dot, scale
from instances import Chebyshev
from models import RNNCell, scan
from training import Parser, run_cli

SENSORS = (-0.3, 0.55)


@dataclass(frozen=True)
class Config:
    modes: int = 6  # K: sine modes in the initial profile
    terms: int = 24  # n: Chebyshev terms of the state
    steps_in_time: int = 16  # T: readings per trajectory
    nu: float = 0.02
    dt: float = 0.1
    noise: float = 1e-2  # sensor noise (standard deviation)
    stir: float = 0.1  # q: the heat sources' strength per step
    train_steps: int = 1500
    batch: int = 64
    lr: float = 1e-2
    activation: str = "identity"
    seed: int = 0


PRESETS = {"default": Config(), "tiny": Config(train_steps=300, batch=32)}


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


def train(config: Config, progress: bool = True) -> dict[str, list[float]]:
    """Train the observer; the per-time relative L² errors of the RNN and of the posterior mean (held out)."""
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    state, sensors = Chebyshev(config.terms), Vector(2)
    activation = (lambda t: t) if config.activation == "identity" else torch.tanh
    cell: RNNCell[Vector, Chebyshev] = RNNCell(sensors, state, activation, dtype=torch.float64)
    with torch.no_grad():  # W starts as the identity on functions (the profile persists): the metric's inverse
        cell.recurrent.weight.copy_(torch.linalg.inv(state.metric(torch.float64, torch.device("cpu"))))
        cell.input.weight.zero_()
        assert cell.input.bias is not None
        cell.input.bias.zero_()
    opt = torch.optim.Adam(cell.parameters(), lr=config.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, config.train_steps)
    seq = Vector(config.steps_in_time)
    bar = tqdm(range(config.train_steps), desc="observer", disable=not progress)
    for _ in bar:
        _, y, c = trajectories(config, config.batch, rng)
        h = scan(cell, Field(torch.from_numpy(y), (seq, sensors)))
        err = add(h, scale(-1.0, Field(torch.from_numpy(c), (seq, state))))
        loss = dot(err, err).tensor.mean()
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        sched.step()
        bar.set_postfix(loss=f"{float(loss.detach()):.2e}")
    _, y, c = trajectories(config, 500, np.random.default_rng(config.seed + 1))
    with torch.no_grad():
        estimate = scan(cell, Field(torch.from_numpy(y), (seq, sensors))).tensor.numpy()
    best = posterior_mean(config, y) @ mode_coefficients(config)
    return {
        "rnn": np.median(relative_l2(config, estimate, c), 0).tolist(),
        "posterior_mean": np.median(relative_l2(config, best, c), 0).tolist(),
        "zero": np.median(relative_l2(config, np.zeros_like(c), c), 0).tolist(),
    }


PROG = "python -m examples.observer"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


def run(argv: list[str] | None) -> int:
    p = Parser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="default")
    p.add_argument("--activation", choices=["identity", "tanh"], default=None)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    config = PRESETS[a.preset] if a.activation is None else replace(PRESETS[a.preset], activation=a.activation)
    errors = train(config, progress=not a.no_progress)
    print("median relative L2 error of the estimated profile u_t, held out (500 trajectories):")
    print(f"{'t':>3} {'RNN (Chebyshev state)':>22} {'posterior mean':>15} {'zero':>8}")
    for t in range(config.steps_in_time):
        print(f"{t + 1:>3} {errors['rnn'][t]:>22.2e} {errors['posterior_mean'][t]:>15.2e} {errors['zero'][t]:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
