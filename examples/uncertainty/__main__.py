"""``python -m examples.uncertainty``: a mixture Transformer against a Gaussian MLP, by test NLL and calibration.

Examples::

    python -m examples.uncertainty                    # default preset (under 3 minutes on one core)
    python -m examples.uncertainty --preset tiny      # seconds
    python -m examples.uncertainty --config components=4 --json runs/uncertainty.json
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import torch

from training import RunDir, describe, options, run_cli
from training.cli import output_file

from . import data, train
from .config import PRESETS, Config
from .model import GaussianMLP, MixtureTransformer, count

PROG = "python -m examples.uncertainty"


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


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, cuda=False, out_help="write report.json here")
    p.add_argument("--json", type=output_file, default=None, help="also write the report (with histories) here")
    config, a = options.config_of(p, argv, Config)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    report = compare(config, progress=not a.no_progress, threads=a.threads)
    print(table(report))
    if a.out is not None:
        with RunDir(a.out, PROG):
            (a.out / "report.json").write_text(json.dumps(report, indent=1))
        print(f"wrote {a.out / 'report.json'}")
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(report, indent=1))
        print(f"wrote {a.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
