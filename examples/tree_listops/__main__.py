"""``python -m examples.tree_listops``: Treeformer vs Vector Transformer (equal parameter count) vs a fold.

Trains each model named by ``--models`` (``tree-mean``, ``tree-sum``, ``vector``, ``fold``; see
:mod:`training.tasks.tree_listops.model`) in turn with the shared loop and prints its train and test accuracy,
by nesting depth, and on a split nested deeper than any training expression (``--deep N --deepest D``;
``--deep 0`` skips it). Writes ``OUT/report.json`` and a resumable ``OUT/<model>/checkpoint.pt`` per model
(rerun to continue; a larger ``--steps`` extends a finished run);
``training.tasks.tree_listops.load(OUT, "tree-mean")`` returns a trained model.
Every config field is also an option (``--steps 50``, or ``--config FIELD=VALUE``).

Examples::

    python -m examples.tree_listops            # tree-mean, tree-sum, vector: ~3-4 min each on a shared CPU core
    python -m examples.tree_listops --steps 50 --train 2000 --test 500 --out runs/smoke   # a smoke run
    python -m examples.tree_listops --preset tiny --out runs/tiny                         # seconds
    python -m examples.tree_listops --preset fold --models fold --out runs/fold           # 4-7 min: ~99% test
"""

from __future__ import annotations

import sys
from typing import Any

from training import options, run_cli
from training.tasks.tree_listops import PRESETS, Config
from training.tasks.tree_listops.config import MODELS
from training.tasks.tree_listops.program import execute

PROG = "python -m examples.tree_listops"


def run(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run the job; return each model's results (as in ``report.json``, without the histories)."""
    out_help = "report.json and MODEL/checkpoint.pt go here"
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out="runs/tree_listops", out_help=out_help)
    p.add_argument(
        "--models",
        default="tree-mean,tree-sum,vector",
        help=f"comma-separated, of: {', '.join(MODELS)} (default: all but fold, which wants --preset fold)",
    )
    config, a = options.config_of(p, argv, Config)
    models = options.names(a.models, MODELS)
    results = execute(config, models, options.Shared.of(a, PROG), say=lambda s: print(s, flush=True))
    if results:
        print(f"wrote {a.out / 'report.json'} and {', '.join(str(a.out / m / 'checkpoint.pt') for m in models)}")
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
