"""``python -m examples.darcy``: train the Funcformer on Darcy flow, ``-∇·(a∇u) = 1`` on ``[0, 1]²``.

Generates seeded data of one coefficient family (``--family lognormal`` or ``piecewise``) with the
finite-difference solver, trains with the shared loop and prints the held-out relative L² error; writes
``OUT/report.json`` and a resumable ``OUT/checkpoint.pt`` (rerun the same command to continue).

Examples::

    python -m examples.darcy                      # piecewise a ∈ {3, 12}: 2000 steps, 0.1-0.25 s each on one core
    python -m examples.darcy --family lognormal --out runs/darcy-lognormal
    python -m examples.darcy --preset tiny --out /tmp/darcy-tiny
    python -m examples.darcy --config depth=2 --steps 1000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from operators.darcy import data
from training import RunDir, check_resume, describe, options, run_cli
from training.tasks.darcy.config import PRESETS, Config
from training.tasks.darcy.model import CHECKPOINT, SPEC

from . import train

PROG = "python -m examples.darcy"


def parse(argv: list[str] | None) -> tuple[Config, argparse.Namespace]:
    """The config (preset, then ``--family``, ``--config`` and ``--steps`` overrides, validated) and the options."""
    out_help = "run directory (default runs/darcy-FAMILY)"
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help=out_help)
    p.add_argument("--family", choices=data.FAMILIES, default=None, help="shorthand for --config family=...")
    config, a = options.config_of(p, argv, Config)
    if a.out is None:
        a.out = Path("runs") / f"darcy-{config.family}"
    return config, a


def run(argv: list[str] | None) -> int:
    config, a = parse(argv)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    SPEC.admit(describe(config), budget=a.budget, training=True)  # fits in memory: before anything is built
    with RunDir(a.out, PROG):
        check_resume(a.out, describe(config), SPEC.meta(), a.budget)  # before the data: a refused resume fails at once
        t0 = time.perf_counter()
        splits = data.splits(config.family, config.n_train, config.n_test, config.points, config.seed, config.refine)
        print(f"config: {config}")
        print(f"data: {len(splits.train)} train, {len(splits.test)} held-out ({time.perf_counter() - t0:.1f}s)")
        trained, task = train.train(
            config, splits, a.out, a.device, progress=not a.no_progress, threads=a.threads, budget=a.budget
        )
        errs = task.errors()
        params = sum(p.numel() for p in trained.model.parameters())
        report = {
            "config": describe(config),
            "torch": torch.__version__,
            "parameters": params,
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
        (a.out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"parameters: {params}")
    print(f"training time: {trained.elapsed:.1f}s for {trained.step} steps")
    stats = f"mean {errs.mean():.3e}  median {errs.median():.3e}  max {errs.max():.3e}"
    print(f"held-out relative L2 ({config.family}): {stats}")
    print(f"wrote {a.out / 'report.json'}, {a.out / CHECKPOINT}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
