"""``python -m examples.cross_modal``: cross-modal attention -- a Chebyshev field reading another structure.

Two tasks, one model (:class:`models.CrossModal`; the task side is :mod:`training.tasks.cross_modal`):

* ``--task points``: scattered samples ``(x_i, f(x_i))`` of a smooth function (a ragged, padded set)
  -> the function as a Chebyshev series; compared at equal sample counts with scipy's cubic spline and
  RBF interpolant, and with the Bayes-optimal posterior mean under the data's own prior;
* ``--task grid``: a low-resolution image of a smooth function of two variables -> a
  Chebyshev x Chebyshev series, evaluated at 4x and 8x the input resolution; compared with scipy's
  bicubic interpolation and the least-squares series.

Prints the held-out relative L² errors (median) with the error ratios, and writes ``OUT/report.json`` and a
resumable ``OUT/checkpoint.pt``.

Examples::

    python -m examples.cross_modal --task points          # ~3 min on one CPU core
    python -m examples.cross_modal --task grid --out runs/cross_modal_grid
    python -m examples.cross_modal --task points --preset tiny --steps 10
"""

from __future__ import annotations

import sys
from pathlib import Path

from training import options, run_cli
from training.tasks.cross_modal import PRESETS, TASKS, Config
from training.tasks.cross_modal.program import execute

PROG = "python -m examples.cross_modal"


def run(argv: list[str] | None) -> int:
    out_help = "run directory (default runs/cross_modal_TASK)"
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, cuda=False, out_help=out_help)
    p.add_argument("--task", choices=TASKS, default="points")
    config, a = options.config_of(p, argv, Config)
    a.out = a.out or Path(f"runs/cross_modal_{a.task}")
    r = execute(config, a.task, options.Shared.of(a, PROG))
    print(f"{a.task}: {r['parameters']} parameters, {r['steps']} steps in {r['train_seconds']:.1f}s")
    print(f"held-out relative L2 over {config.test} functions (median; ratio = model / reference):")
    for key, row in r["held_out_relative_l2"].items():
        refs = [k[: -len("_median")] for k in row if k.endswith("_median") and not k.startswith("model")]
        parts = [f"model {row['model_median']:.3e}"]
        parts += [f"{x} {row[x + '_median']:.3e} (ratio {row['model_over_' + x + '_median']:.3g})" for x in refs]
        print(f"  {key:>9}: " + "  ".join(parts))
    print(f"wrote {a.out / 'report.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
