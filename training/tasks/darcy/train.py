"""Training on Darcy flow: the operator task on the generated samples (:mod:`operators.darcy.data`).

The loss is the operator task's (:func:`training.tasks.operator.task.objective`: the squared relative L² error of
``u`` on the grid, by the nodes' trapezoid rule -- with ``u = 0`` at the ends, the plain sums -- and the smoothing
penalty); evaluation reports the mean relative L² error on the held-out set. Checkpoints, resumption, signals and
divergence are the shared loop's (:func:`training.fit`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

import torch

from operators.darcy import data
from operators.dataset import Samples, samples
from training import Trained, fit_config
from training.fingerprint import fingerprint
from training.loop import FitOptions
from training.tasks.operator.task import OperatorTask, Run, check_fit

from .config import Config
from .model import SHAPE, SPEC, as_built

#: the name of the held-out set in the task's evaluations (``test_rel_l2``)
TEST = "test"


def samples_of(d: data.DarcyData, where: str) -> Samples:
    """The samples ``a -> u`` on the square's nodes, checked (``u = 0`` at the ends)."""
    return samples(d.a, d.u, SHAPE.axes, where=where)


def data_of(config: Config, splits: data.Splits) -> dict[str, Any]:
    """The training data's :func:`~training.fingerprint.fingerprint`, as the run's checkpoints record it."""
    where = f"darcy {config.family} n_train={config.n_train} points={config.points} seed={config.seed}"
    return fingerprint(where, coefficients=splits.train.a, solutions=splits.train.u)


def train(
    config: Config,
    splits: data.Splits,
    out: Path | None,
    device: torch.device | str = "cpu",
    **options: Unpack[FitOptions],
) -> Run:
    """Train (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps."""
    config = as_built(config)
    train_set = samples_of(splits.train, f"{config.family} training set")
    test = samples_of(splits.test, f"{config.family} held-out set")
    check_fit(config, train_set)
    task = OperatorTask(config, train_set, {TEST: test}, torch.device(device))
    fix = "try a smaller --config lr= or a --config clip= (gradient-norm clipping)"
    progress = fit_config(task, config, out, meta=SPEC.meta(), fix=fix, **options)
    return Run(Trained.of(task.model, progress), task)
