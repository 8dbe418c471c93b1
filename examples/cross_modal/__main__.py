"""``python -m examples.cross_modal``: cross-modal attention -- a Chebyshev field reading another structure.

Two tasks, one model (:class:`models.CrossModal`, generic attention with mixed structures):

* ``--task points``: scattered samples ``(x_i, f(x_i))`` of a smooth function (a ragged, padded set)
  -> the function as a Chebyshev series; compared at equal sample counts with scipy's cubic spline and
  RBF interpolant, and with the Bayes-optimal posterior mean under the data's own prior;
* ``--task grid``: a low-resolution image of a smooth function of two variables -> a
  Chebyshev x Chebyshev series, evaluated at 4x and 8x the input resolution; compared with scipy's
  bicubic interpolation and the least-squares series.

Prints the held-out relative L² errors (median and mean) with the error ratios, and writes
``OUT/report.json`` and a resumable ``OUT/checkpoint.pt``.

Examples::

    python -m examples.cross_modal --task points          # ~3 min on one CPU core
    python -m examples.cross_modal --task grid --out runs/cross_modal_grid
    python -m examples.cross_modal --task points --preset tiny --steps 10
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from instances.chebyshev import evaluate, evaluate_2d
from training import RunDir, check_resume, describe, options, run_cli

from . import baselines, data, train
from .config import PRESETS, TASKS, Config, TaskKind
from .model import PointsModel


def _stats(e: np.ndarray) -> dict[str, float]:
    return {"median": float(np.median(e)), "mean": float(np.mean(e))}


def compare(config: Config, task: TaskKind, model: torch.nn.Module, held: data.HeldOut) -> dict[str, dict[str, float]]:
    """Held-out relative L² errors of the model and the references, per sample count or zoom (median, mean)."""
    errs = train.errors(model, held)  # type: ignore[arg-type]
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


def _row(model: np.ndarray, refs: dict[str, np.ndarray]) -> dict[str, float]:
    row = {f"model_{k}": v for k, v in _stats(model).items()}
    for name, e in refs.items():
        row.update({f"{name}_{k}": v for k, v in _stats(e).items()})
        row[f"model_over_{name}_median"] = float(np.median(model)) / float(np.median(e))
    return row


def run(argv: list[str] | None) -> int:
    p = options.program(
        "python -m examples.cross_modal",
        __doc__.split("\n")[0],
        PRESETS,
        cuda=False,
        out_help="run directory (default runs/cross_modal_TASK)",
    )
    p.add_argument("--task", choices=TASKS, default="points")
    config, a = options.config_of(p, argv, Config)
    task: TaskKind = a.task
    out: Path = a.out if a.out is not None else Path(f"runs/cross_modal_{task}")
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    with RunDir(out, "python -m examples.cross_modal"):
        check_resume(out, {**describe(config), "task": task})
        held = data.held_out(config)
        trained = train.train(config, task, held, out, progress=not a.no_progress, threads=a.threads)
        rows = compare(config, task, trained.model, held)
        report = {
            "task": task,
            "config": describe(config),
            "torch": torch.__version__,
            "parameters": sum(q.numel() for q in trained.model.parameters()),
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "held_out_relative_l2": rows,
            "history": trained.history,
        }
        (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"{task}: {report['parameters']} parameters, {trained.step} steps in {trained.elapsed:.1f}s")
    print(f"held-out relative L2 over {config.test} functions (median; ratio = model / reference):")
    for key, row in rows.items():
        refs = [k[: -len("_median")] for k in row if k.endswith("_median") and not k.startswith("model")]
        parts = [f"model {row['model_median']:.3e}"]
        parts += [f"{r} {row[r + '_median']:.3e} (ratio {row['model_over_' + r + '_median']:.3g})" for r in refs]
        print(f"  {key:>9}: " + "  ".join(parts))
    print(f"wrote {out / 'report.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2)."""
    return run_cli("python -m examples.cross_modal", lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
