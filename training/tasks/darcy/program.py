"""What ``python -m examples.darcy`` does, as one library function: :func:`execute`.

Admit the config against the memory budget, take the run directory, check a resume, generate the seeded data
of the config's family (:mod:`operators.darcy.data`), train with the shared loop and measure the held-out
relative L² error; writes ``OUT/report.json`` and the resumable ``OUT/checkpoint.pt``, and returns the report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import torch

from operators.darcy import data
from training import RunDir, check_resume, describe
from training.options import Shared

from .config import Config
from .model import SPEC
from .train import train


def execute(config: Config, run: Shared, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Train (or resume) on the config's family and measure on its held-out set; the report."""
    assert run.out is not None
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    SPEC.admit(describe(config), budget=run.memory, training=True)  # fits in memory: before anything is built
    with RunDir(run.out, run.program):
        check_resume(run.out, describe(config), SPEC.meta(), run.memory)  # before the data: fails at once
        t0 = time.perf_counter()
        splits = data.splits(config.family, config.n_train, config.n_test, config.points, config.seed, config.refine)
        say(f"config: {config}")
        say(f"data: {len(splits.train)} train, {len(splits.test)} held-out ({time.perf_counter() - t0:.1f}s)")
        trained, task = train(config, splits, run.out, run.device, **run.fit())
        errs = task.errors()
        report = {
            "config": describe(config),
            "torch": torch.__version__,
            "parameters": sum(p.numel() for p in trained.model.parameters()),
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "resumed_from_step": trained.resumed_from,
            "held_out_relative_l2": {
                "mean": float(errs.mean()),
                "median": float(errs.median()),
                "max": float(errs.max()),
            },
            "history": trained.history,
        }
        (run.out / "report.json").write_text(json.dumps(report, indent=1))
    return report
