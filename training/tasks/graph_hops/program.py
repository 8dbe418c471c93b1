"""What ``python -m examples.graph_hops`` does, as one library function: :func:`execute`.

Check each model's resume before any work, draw the seeded graphs, then train and measure each model in turn;
``OUT/report.json`` is written after each model (partial runs too).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from training import RunDir, UserError, check_resume, describe
from training.options import Shared

from .config import PYG, Config, ModelKind
from .data import batch, sample
from .train import accuracy, checkpoint_config, train


def execute(
    config: Config, kinds: Sequence[ModelKind], run: Shared, say: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """Train and measure each model of ``kinds``: its parameters, node accuracy held out and seconds."""
    if any(k in PYG for k in kinds) and importlib.util.find_spec("torch_geometric") is None:
        raise UserError('the PyG models need PyTorch Geometric: pip install -e ".[bench]" (or --models ours,ours-1)')
    out = run.out
    with RunDir(out, run.program) if out is not None else contextlib.nullcontext():
        for kind in kinds if out is not None else ():
            assert out is not None
            check_resume(out / kind, checkpoint_config(config, kind), restart=run.restart)  # before the data
        rng = random.Random(config.seed)
        train_set = [sample(rng) for _ in range(config.train)]
        test_set = [sample(rng) for _ in range(config.test)]
        labels = [y for _, _, _, ys in test_set for y in ys]
        majority = max(labels.count(0), labels.count(1)) / len(labels)
        say(f"majority class on the test nodes: {majority:.1%}")
        report: dict[str, Any] = {
            "config": describe(config),
            "models": list(kinds),
            "device": str(run.device),
            "torch": torch.__version__,
            "majority_test_accuracy": majority,
            "results": [],
        }
        results = []
        for kind in kinds:
            start = time.perf_counter()
            where = None if out is None else out / kind
            trained = train(
                config, kind, train_set, test_set, where, run.device, run.progress, run.threads, run.restart
            )
            seconds = time.perf_counter() - start
            acc = accuracy(trained.model, *batch(test_set, run.device))
            params = sum(p.numel() for p in trained.model.parameters())
            r = {"model": kind, "parameters": params, "accuracy": acc, "seconds": seconds}
            results.append(r)
            say(f"{kind}: {params} parameters, accuracy {acc:.2%}, {seconds:.0f} s")
            done = {"steps": trained.step, "resumed_from_step": trained.resumed_from, "history": trained.history}
            report["results"].append({**r, **done})
            if out is not None:
                (out / "report.json").write_text(json.dumps(report, indent=1))  # after each model: partial runs too
        if out is not None:
            say(f"wrote {out / 'report.json'}")
    return results
