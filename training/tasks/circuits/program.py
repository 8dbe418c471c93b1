"""What ``python -m examples.circuits`` does, as one library function: :func:`execute`.

Check each model's resume before any work, generate the seeded circuits (depths 1-4 to train on; held-out
depths 1-4, 5 and 6), then train and measure each model in turn; the report goes to ``OUT/report.json`` and
``json`` after each model (partial runs too).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from training import RunDir, UserError, check_resume, describe
from training.options import Shared

from .config import TEST_DEPTHS, TRAIN_DEPTHS, Config, ModelKind
from .data import generate, tree_size
from .train import Result, checkpoint_config, train


def execute(
    config: Config,
    kinds: Sequence[ModelKind],
    run: Shared,
    json_path: Path | None = None,
    say: Callable[[str], None] = print,
) -> list[Result]:
    """Train and measure each model of ``kinds``; their results."""
    if "gnn" in kinds and importlib.util.find_spec("torch_geometric") is None:
        raise UserError(
            '--models gnn needs PyTorch Geometric: pip install -e ".[bench]" (or leave gnn out of --models)'
        )
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    out = run.out
    with RunDir(out, run.program) if out is not None else contextlib.nullcontext():
        for kind in kinds if out is not None else ():
            assert out is not None
            check_resume(out / kind, checkpoint_config(config, kind), restart=run.restart)  # before the data
        data = generate(config.train, TRAIN_DEPTHS, seed=config.seed)
        tests = {"depth 1-4": generate(config.test, TRAIN_DEPTHS, seed=config.seed + 1000)}
        for d in TEST_DEPTHS:
            tests[f"depth {d}"] = generate(config.test, [d], seed=config.seed + 1000 + d)
        for name, split in tests.items():
            majority = max(Counter(c.value for c in split).values()) / len(split)
            nodes = sum(len(c.nodes) for c in split) / len(split)
            leaves = sum(tree_size(c) for c in split) / len(split)
            say(f"{name}: majority class {majority:.1%}, {nodes:.1f} DAG nodes, {leaves:.1f} unrolled leaves (mean)")
        report: dict[str, Any] = {
            "config": describe(config),
            "models": list(kinds),
            "device": str(run.device),
            "torch": torch.__version__,
            "results": [],
        }
        written = ([] if out is None else [out / "report.json"]) + ([] if json_path is None else [json_path])
        results = []
        for kind in kinds:
            where = None if out is None else out / kind
            r, progress = train(kind, config, data, tests, where, run.device, run.progress, run.threads, run.restart)
            results.append(r)
            say(f"{kind}: {r.parameters} parameters, {r.train_seconds:.0f} s for {progress.step} steps")
            for name in tests:
                say(f"  {name}: accuracy {r.accuracy[name]:.2%}, evaluation {r.eval_ms_per_1000[name]:.1f} ms / 1000")
            done = {"steps": progress.step, "resumed_from_step": progress.resumed_from, "history": progress.history}
            report["results"].append({**asdict(r), **done})
            for path in written:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(report, indent=1))  # after each model: partial runs too
        if written:
            say(f"wrote {', '.join(map(str, written))}")
    return results
