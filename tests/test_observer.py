"""The function-state RNN demo: its data against the exact heat-equation solution, its reference estimate
against a hand-written Kalman filter, and a short training run that learns to observe."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
from numpy.polynomial import chebyshev as npcheb

from examples import observer
from training import RunDir
from training.tasks.observer import PRESETS
from training.tasks.observer.config import SENSORS
from training.tasks.observer.data import posterior_mean, trajectories
from training.tasks.observer.train import errors, train

CONFIG = PRESETS["tiny"]


def test_trajectories_follow_the_heat_equation_mode_by_mode() -> None:
    amp, y, c = trajectories(CONFIG, 5, np.random.default_rng(0))
    x = np.linspace(-1, 1, 37)
    k = np.arange(1, CONFIG.modes + 1)
    decay = np.exp(-CONFIG.nu * (k * math.pi / 2) ** 2 * CONFIG.dt)  # the exact heat semigroup on sin(kπ(x+1)/2)
    stirred = (amp[:, 1:] - decay * amp[:, :-1]) * k  # what the sources added, scaled to unit variance
    assert abs(stirred.std() / CONFIG.stir - 1) < 0.2 and abs(stirred.mean()) < 0.1 * CONFIG.stir
    sines = np.sin(np.outer(k, x + 1) * math.pi / 2)
    for t in (0, 7, CONFIG.steps_in_time - 1):
        np.testing.assert_allclose(npcheb.chebval(x, c[:, t].T), amp[:, t] @ sines, atol=1e-8)  # 24 terms: ~1e-9
        at_sensors = amp[:, t] @ np.sin(np.outer(k, np.array(SENSORS) + 1) * math.pi / 2)
        assert np.abs(y[:, t] - at_sensors).max() < 6 * CONFIG.noise  # readings: the profile plus small noise


def test_posterior_mean_equals_a_sequential_kalman_filter() -> None:
    _, y, _ = trajectories(CONFIG, 4, np.random.default_rng(1))
    got = posterior_mean(CONFIG, y)
    k = np.arange(1, CONFIG.modes + 1)
    a = np.diag(np.exp(-CONFIG.nu * (k * math.pi / 2) ** 2 * CONFIG.dt))  # transition of the amplitudes
    h = np.sin(np.outer(np.array(SENSORS) + 1, k) * math.pi / 2)  # readout
    r = CONFIG.noise**2 * np.eye(2)
    for b in range(len(y)):
        mean, cov = np.zeros(CONFIG.modes), np.diag(1.0 / k**2)  # prior of a_0
        for t in range(CONFIG.steps_in_time):
            mean, cov = a @ mean, a @ cov @ a.T + CONFIG.stir**2 * np.diag(1.0 / k**2)  # predict: decay, stir
            gain = cov @ h.T @ np.linalg.inv(h @ cov @ h.T + r)
            mean, cov = mean + gain @ (y[b, t] - h @ mean), (np.eye(CONFIG.modes) - gain @ h) @ cov
            np.testing.assert_allclose(got[b, t], mean, rtol=1e-6, atol=1e-9)


def test_the_rnn_learns_to_observe_the_profile() -> None:
    found = errors(CONFIG, train(CONFIG, progress=False).model)
    late = slice(CONFIG.steps_in_time // 2, None)
    rnn, best = np.median(found["rnn"][late]), np.median(found["posterior_mean"][late])
    assert min(found["zero"]) > 0.99  # the trivial estimate
    assert 0.95 * best <= rnn < 1.2 * best, (found["rnn"], found["posterior_mean"])  # at the optimal filter


def test_the_program_writes_a_resumable_run(tmp_path: Path) -> None:
    """``--out``: report.json and checkpoint.pt; a resumed run (numpy's sampler restored) is the uninterrupted one."""
    torch.set_num_threads(1)
    argv = ["--preset", "tiny", "--no-progress", "--config", "eval_every=4", "--config", "checkpoint_every=4"]
    config = CONFIG.replace(steps=8, eval_every=4, checkpoint_every=4)
    with RunDir(tmp_path / "a", "python -m examples.observer"):  # the program's run directory, as it takes one
        train(config, tmp_path / "a", progress=False, stop_after=4)  # stopped half-way
    assert observer.main([*argv, "--steps", "8", "--out", str(tmp_path / "a")]) == 0
    resumed = json.loads((tmp_path / "a" / "report.json").read_text())
    assert resumed["resumed_from_step"] == 4 and (tmp_path / "a" / "checkpoint.pt").exists()
    whole = train(config, None, progress=False)
    assert resumed["history"] == whole.history
    assert observer.main(["--activation", "relu"]) == 2
