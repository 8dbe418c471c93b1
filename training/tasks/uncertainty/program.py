"""What ``python -m examples.uncertainty`` does, as library functions: :func:`compare` and :func:`table`."""

from __future__ import annotations

import time
from typing import Any

import torch

from training import describe

from . import data, train
from .config import Config
from .model import GaussianMLP, MixtureTransformer, count


def compare(config: Config, *, progress: bool = True, threads: int | None = None) -> dict[str, Any]:
    """Train both models on the seeded task; their parameter counts, test metrics and training seconds."""
    train_split, test_split = data.task(config.train, config.test, config.seed)
    torch.manual_seed(config.seed)
    mixture = MixtureTransformer(config.components, config.width, config.hidden, config.heads, config.depth)
    torch.manual_seed(config.seed)
    gaussian = GaussianMLP.matching(count(mixture))
    report: dict[str, Any] = {"config": describe(config), "oracle_nll": test_split.oracle_nll, "models": {}}
    for name, model in (("mixture_transformer", mixture), ("gaussian_mlp", gaussian)):
        start = time.perf_counter()
        trained = train.train(name, model, config, train_split, test_split, progress=progress, threads=threads)
        final = train.metrics(model, test_split, config.points)
        report["models"][name] = {
            "parameters": count(model),
            "seconds": time.perf_counter() - start,
            **final,
            "history": trained.history,
        }
    return report


def table(report: dict[str, Any]) -> str:
    """The comparison as a few aligned lines."""
    lines = [f"{'model':<20} {'params':>7} {'test NLL':>9} {'cover50':>8} {'cover90':>8} {'mean RMSE':>10} {'s':>6}"]
    for name, m in report["models"].items():
        lines.append(
            f"{name:<20} {m['parameters']:>7} {m['nll']:>9.4f} {m['coverage50']:>8.3f} {m['coverage90']:>8.3f} "
            f"{m['mean_rmse']:>10.4f} {m['seconds']:>6.1f}"
        )
    lines.append(f"{'true density':<20} {'':>7} {report['oracle_nll']:>9.4f} {0.5:>8.3f} {0.9:>8.3f}")
    return "\n".join(lines)
