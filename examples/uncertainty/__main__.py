"""``python -m examples.uncertainty``: a mixture Transformer against a Gaussian MLP, by test NLL and calibration.

The task, the models and the metrics are :mod:`training.tasks.uncertainty`.

Examples::

    python -m examples.uncertainty                    # default preset (under 3 minutes on one core)
    python -m examples.uncertainty --preset tiny      # seconds
    python -m examples.uncertainty --config components=4 --json runs/uncertainty.json
"""

from __future__ import annotations

import json
import sys

import torch

from training import RunDir, options, run_cli
from training.cli import output_file
from training.tasks.uncertainty import PRESETS, Config
from training.tasks.uncertainty.program import compare, table

PROG = "python -m examples.uncertainty"


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
