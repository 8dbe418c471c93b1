"""``python -m examples.tree_listops``: Treeformer vs Vector Transformer (equal parameter count) vs a fold.

Trains each model named by ``--models`` (``tree-mean``, ``tree-sum``, ``vector``, ``fold``; see
:mod:`training.tasks.tree_listops.model`) in turn with the shared loop (:func:`training.fit`) and
prints its train and test accuracy, the test accuracy by nesting depth, and the accuracy on a split
nested deeper than any training expression (``--deep N --deepest D``: ``N`` expressions nesting
``4 .. D`` levels; ``--deep 0`` skips it). Writes ``OUT/report.json`` (results, histories, device, torch) and a
resumable ``OUT/<model>/checkpoint.pt`` per model: rerun the same command after Ctrl-C or a SIGTERM to
continue; a larger ``--steps`` extends a finished run. ``examples.tree_listops.load(OUT, "tree-mean")``
returns a trained model.

Every config field can be set as ``--FIELD VALUE`` (``--steps 50``) or ``--config FIELD=VALUE``; a bad
value is one line on stderr and exit status 2, before any work.

Examples::

    python -m examples.tree_listops            # tree-mean, tree-sum, vector: ~3-4 min each on a shared CPU core
    python -m examples.tree_listops --steps 50 --train 2000 --test 500 --out runs/smoke   # a smoke run
    python -m examples.tree_listops --preset tiny --out runs/tiny                         # seconds
    python -m examples.tree_listops --preset fold --models fold --out runs/fold           # 4-7 min: ~99% test
    python -m examples.tree_listops --device cuda --steps 6000 --out runs/long            # longer, on a GPU
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

import torch

from training import (
    RunDir,
    check_batch,
    check_resume,
    describe,
    device_of,
    options,
    run_cli,
    setup,
)
from training.tasks.tree_listops import data
from training.tasks.tree_listops.config import MODELS, PRESETS, Config, ModelKind
from training.tasks.tree_listops.model import SPEC

from . import train

PROG = "python -m examples.tree_listops"


def parse(argv: list[str] | None = None) -> tuple[Config, list[ModelKind], argparse.Namespace]:
    """The config (preset, then ``--config`` items, then ``--FIELD`` options; validated), the models, the rest."""
    out_help = "report.json and MODEL/checkpoint.pt go here"
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out="runs/tree_listops", out_help=out_help)
    p.add_argument(
        "--models",
        default="tree-mean,tree-sum,vector",
        help=f"comma-separated, of: {', '.join(MODELS)} (default: all but fold, which wants --preset fold)",
    )
    config, a = options.config_of(p, argv, Config)
    return config, models_of(a.models), a


def models_of(text: str) -> list[ModelKind]:
    """``--models``, checked: known names, each once."""
    return options.names(text, MODELS)


def run(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run the job; return each model's results (as in ``report.json``, without the histories)."""
    config, models, a = parse(argv)
    ranks, device = setup(device_of(a.device))  # joins the process group under torchrun
    check_batch(config.batch, ranks)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    results: dict[str, dict[str, Any]] = {}
    # writable, ours, and each model's checkpoint (if resuming) written with this config -- before any work
    for name in models:  # each fits in memory: before anything is built
        SPEC.admit(train.checkpoint_config(config, name), budget=a.budget, training=True)
    with RunDir(a.out, PROG) if ranks.main else contextlib.nullcontext():
        for name in models:
            check_resume(a.out / name, train.checkpoint_config(config, name), SPEC.meta(), a.budget)
        splits = data.splits(config.train, config.test, config.seed, config.deep, config.deepest)
        test, deep = splits.test, splits.deep
        majority = float(torch.bincount(test.labels, minlength=10).max()) / len(test)
        print(f"config: {config}")
        print(f"ListOps: {len(splits.train)} train / {len(test)} test; majority-class test accuracy {majority:.3f}")
        if deep is not None:
            print(f"deeper test split: {len(deep)} expressions nesting {data.DEPTH + 1}..{config.deepest} levels")
        report: dict[str, Any] = {
            "config": describe(config),
            "models": list(models),
            "device": str(device),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "majority_test_accuracy": majority,
            "results": {},
        }
        for name in models:
            trained = train.train(
                config,
                name,
                splits,
                a.out / name,
                device,
                progress=not a.no_progress,
                ranks=ranks,
                threads=a.threads,
                budget=a.budget,
            )
            if not ranks.main:
                continue
            sample = data.Split(splits.train.exprs[:2000], splits.train.labels[:2000])
            results[name] = {
                "params": sum(p.numel() for p in trained.model.parameters()),
                "train_seconds": round(trained.elapsed, 1),
                "train_accuracy": train.accuracy(trained.model, sample),
                "test_accuracy": train.accuracy(trained.model, test),
                "test_accuracy_by_depth": train.accuracy_by_depth(trained.model, test),
            }
            if deep is not None:
                results[name]["deep_accuracy"] = train.accuracy(trained.model, deep)
                results[name]["deep_accuracy_by_depth"] = train.accuracy_by_depth(trained.model, deep)
            resumed = "" if trained.resumed_from is None else f" (resumed from step {trained.resumed_from})"
            print(f"{name:>10}: {json.dumps(results[name])}{resumed}", flush=True)
            report["results"][name] = {
                **results[name],
                "steps": trained.step,
                "resumed_from_step": trained.resumed_from,
                "checkpoint": str(a.out / name / train.CHECKPOINT),
                "history": trained.history,
            }
            (a.out / "report.json").write_text(json.dumps(report, indent=1))  # after each model: partial runs too
    ranks.barrier()  # every process leaves the group together, once rank 0 has written its report
    if not ranks.main:
        return results
    print(f"wrote {a.out / 'report.json'} and {', '.join(str(a.out / m / train.CHECKPOINT) for m in models)}")
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
