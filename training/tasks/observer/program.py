"""What ``python -m examples.observer`` does, as one library function: :func:`execute`."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import torch

from training import RunDir, check_resume, describe
from training.options import Shared

from .config import Config
from .train import errors, train


def execute(config: Config, run: Shared) -> dict[str, Any]:
    """Train (or resume) the observer and measure it against the posterior mean held out; the report (written to
    ``OUT/report.json`` when there is an ``OUT``)."""
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    out = run.out
    with RunDir(out, run.program) if out is not None else contextlib.nullcontext():
        if out is not None:
            check_resume(out, describe(config), restart=run.restart)
        trained = train(config, out, run.device, progress=run.progress, threads=run.threads, restart=run.restart)
        report: dict[str, Any] = {
            "config": describe(config),
            "device": str(run.device),
            "torch": torch.__version__,
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "resumed_from_step": trained.resumed_from,
            "held_out_median_relative_l2": errors(config, trained.model),
            "history": trained.history,
        }
        if out is not None:
            (out / "report.json").write_text(json.dumps(report, indent=1))
    return report
