"""What ``python -m examples.darcy`` does, as one library function: :func:`execute`.

Admit the config against the memory budget, take the run directory, check a resume, generate the seeded data
of the config's family (:mod:`operators.darcy.data`), train with the shared loop and measure the held-out
relative L² error; writes ``OUT/report.json`` and the resumable ``OUT/checkpoint.pt``, and returns the
:class:`Report`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from operators.darcy import data
from training import RunDir, check_resume, describe
from training.options import Shared
from training.tasks.operator.program import Errors

from .config import Config
from .model import SPEC, as_built
from .train import TEST, data_of, train


@dataclass(frozen=True)
class Report:
    """What :func:`execute` returns (and writes to ``report.json``: :meth:`to_json`)."""

    config: dict[str, Any]
    torch: str
    parameters: int
    train_seconds: float
    steps: int
    resumed_from_step: int | None
    held_out_relative_l2: Errors
    history: list[dict[str, float]]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def execute(config: Config, run: Shared, say: Callable[[str], None] = print) -> Report:
    """Train (or resume) on the config's family and measure on its held-out set; the report."""
    assert run.out is not None
    config = as_built(config)
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    SPEC.admit(describe(config), budget=run.memory, training=True)  # fits in memory: before anything is built
    with RunDir(run.out, run.program):
        check_resume(run.out, describe(config), SPEC.meta(), run.memory, restart=run.restart)  # fails at once
        t0 = time.perf_counter()
        splits = data.splits(config.family, config.n_train, config.n_test, config.points, config.seed, config.refine)
        say(f"config: {config}")
        say(f"data: {len(splits.train)} train, {len(splits.test)} held-out ({time.perf_counter() - t0:.1f}s)")
        seen = data_of(config, splits)
        check_resume(run.out, describe(config), SPEC.meta(), run.memory, data=seen, restart=run.restart)
        options = run.fit()
        options["data"] = seen
        result = train(config, splits, run.out, run.device, **options)
        trained, task = result.trained, result.task
        report = Report(
            describe(config),
            torch.__version__,
            sum(p.numel() for p in trained.model.parameters()),
            trained.elapsed,
            trained.step,
            trained.resumed_from,
            Errors.of(task.errors()[TEST], task.tests[TEST]),
            trained.history,
        )
        (run.out / "report.json").write_text(json.dumps(report.to_json(), indent=1))
    return report
