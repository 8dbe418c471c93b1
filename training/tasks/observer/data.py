"""The heat equation's trajectories, the sensors' readings, and the best estimate: the posterior mean.

Mode ``k`` of the profile, ``sin(kπ(x+1)/2)``, decays by ``exp(-ν (kπ/2)² Δt)`` per step (exactly) and is stirred by
``q w``, ``w ~ N(0, k^-2)``; two sensors read the profile with noise. The amplitudes and readings are jointly
Gaussian, so the posterior mean of the amplitudes given the readings so far is in closed form (what a Kalman
filter computes). Errors are relative ``L²[-1, 1]`` norms of Chebyshev series (Gauss--Chebyshev quadrature).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import chebyshev as npcheb

from .config import HELD_OUT, SENSORS, Config


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
