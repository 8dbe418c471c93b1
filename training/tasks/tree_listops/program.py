"""What ``python -m examples.tree_listops`` does, as one library function: :func:`execute`.

For each model named, admit its config against the memory budget; take the run directory and check every
model's resume before any work; generate the seeded ListOps splits; then train each model in turn with the
shared loop (under ``torchrun``, data parallel) and measure its train, test and deeper-split accuracies.
Writes ``OUT/report.json`` after each model (partial runs too) and a resumable ``OUT/MODEL/checkpoint.pt``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import torch

from training import RunDir, check_batch, check_resume, describe, device_of, setup
from training.options import Shared

from . import data, train
from .config import Config, ModelKind
from .model import CHECKPOINT, SPEC


def execute(
    config: Config, models: Sequence[ModelKind], run: Shared, say: Callable[[str], None] = print
) -> dict[str, dict[str, Any]]:
    """Train each of ``models``; their results (as in ``report.json``, without the histories; empty on a process
    other than rank 0 under torchrun)."""
    assert run.out is not None
    ranks, device = setup(device_of(run.device))  # joins the process group under torchrun
    check_batch(config.batch, ranks)
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    results: dict[str, dict[str, Any]] = {}
    for name in models:  # each fits in memory: before anything is built
        SPEC.admit(train.checkpoint_config(config, name), budget=run.memory, training=True)
    # writable, ours, and each model's checkpoint (if resuming) written with this config -- before any work
    with RunDir(run.out, run.program) if ranks.main else contextlib.nullcontext():
        for name in models:
            check_resume(
                run.out / name,
                train.checkpoint_config(config, name),
                SPEC.meta(),
                run.memory,
                restart=run.restart,
            )
        splits = data.splits(config.train, config.test, config.seed, config.deep, config.deepest)
        for name in models:  # and on these data: before a model is built
            config_of = train.checkpoint_config(config, name)
            seen = train.data_of(config, splits)
            check_resume(run.out / name, config_of, SPEC.meta(), run.memory, data=seen, restart=run.restart)
        test, deep = splits.test, splits.deep
        majority = float(torch.bincount(test.labels, minlength=10).max()) / len(test)
        say(f"config: {config}")
        say(f"ListOps: {len(splits.train)} train / {len(test)} test; majority-class test accuracy {majority:.3f}")
        if deep is not None:
            say(f"deeper test split: {len(deep)} expressions nesting {data.DEPTH + 1}..{config.deepest} levels")
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
            trained = train.train(config, name, splits, run.out / name, device, **run.fit(ranks))
            if not ranks.main:
                continue
            model, sample = trained.model, data.Split(splits.train.exprs[:2000], splits.train.labels[:2000])
            results[name] = {
                "params": sum(p.numel() for p in model.parameters()),
                "train_seconds": round(trained.elapsed, 1),
                "train_accuracy": train.accuracy(model, sample),
                "test_accuracy": train.accuracy(model, test),
                "test_accuracy_by_depth": train.accuracy_by_depth(model, test),
            }
            if deep is not None:
                results[name]["deep_accuracy"] = train.accuracy(model, deep)
                results[name]["deep_accuracy_by_depth"] = train.accuracy_by_depth(model, deep)
            resumed = "" if trained.resumed_from is None else f" (resumed from step {trained.resumed_from})"
            say(f"{name:>10}: {json.dumps(results[name])}{resumed}")
            report["results"][name] = {
                **results[name],
                "steps": trained.step,
                "resumed_from_step": trained.resumed_from,
                "checkpoint": str(run.out / name / CHECKPOINT),
                "history": trained.history,
            }
            (run.out / "report.json").write_text(json.dumps(report, indent=1))  # after each model: partial runs too
    ranks.barrier()  # every process leaves the group together, once rank 0 has written its report
    return results
