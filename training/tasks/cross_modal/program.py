"""What ``python -m examples.cross_modal`` does, as library functions: :func:`execute` and :func:`compare`."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from instances.chebyshev import evaluate, evaluate_2d
from training import RunDir, check_resume, describe
from training.options import Shared

from . import baselines, data, train
from .config import Config, TaskKind
from .model import GridModel, PointsModel


def _stats(e: np.ndarray) -> dict[str, float]:
    return {"median": float(np.median(e)), "mean": float(np.mean(e))}


def _row(model: np.ndarray, refs: dict[str, np.ndarray]) -> dict[str, float]:
    row = {f"model_{k}": v for k, v in _stats(model).items()}
    for name, e in refs.items():
        row.update({f"{name}_{k}": v for k, v in _stats(e).items()})
        row[f"model_over_{name}_median"] = float(np.median(model)) / float(np.median(e))
    return row


def compare(config: Config, model: PointsModel | GridModel, held: data.HeldOut) -> dict[str, dict[str, float]]:
    """Held-out relative L² errors of the model and the references, per sample count or zoom (median, mean)."""
    errs = train.errors(model, held)
    rows: dict[str, dict[str, float]] = {}
    if isinstance(model, PointsModel):
        t = data.grid(data.DENSE)
        tn = t.numpy()
        for n, p in held.points.items():
            true = evaluate(p.coefficients, t).numpy()
            refs = {
                "spline": baselines.spline(p, tn),
                "rbf": baselines.rbf(p, tn),
                "oracle": baselines.posterior_mean(config, p, tn),
            }
            rows[f"n={n}"] = _row(errs[f"n{n}"].numpy(), {k: baselines.relative_l2(v, true) for k, v in refs.items()})
        return rows
    r = held.images.image.shape[-1]
    for z in data.ZOOMS:
        m = z * r
        s = data.grid(m)
        true = evaluate_2d(held.images.coefficients, s, s).numpy()
        refs = {
            "bicubic": baselines.bicubic(held.images, m),
            "oracle": baselines.least_squares_2d(config, held.images, m),
        }
        rows[f"{m}x{m}"] = _row(errs[f"x{z}"].numpy(), {k: baselines.relative_l2(v, true) for k, v in refs.items()})
    return rows


def execute(config: Config, task: TaskKind, run: Shared) -> dict[str, Any]:
    """Train (or resume) the model of ``task`` and compare it with the references; writes and returns the report."""
    assert run.out is not None
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    with RunDir(run.out, run.program):
        check_resume(run.out, {**describe(config), "task": task}, restart=run.restart)
        held = data.held_out(config)
        trained = train.train(
            config, task, held, run.out, progress=run.progress, threads=run.threads, restart=run.restart
        )
        report = {
            "task": task,
            "config": describe(config),
            "torch": torch.__version__,
            "parameters": sum(q.numel() for q in trained.model.parameters()),
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "held_out_relative_l2": compare(config, trained.model, held),
            "history": trained.history,
        }
        (run.out / "report.json").write_text(json.dumps(report, indent=1))
    return report
