"""``python -m examples.poisson.generalise``: a trained model on source families it was not trained on.

Prints, per family of :mod:`operators.poisson.families`, the relative L² error against the exact solution
(mean / median / max) and the truncation floor (:mod:`training.tasks.poisson.generalise`)::

    python -m examples.poisson.generalise --out runs/poisson
"""

from __future__ import annotations

import sys
from pathlib import Path

from training import Parser, run_cli
from training.tasks.poisson import load
from training.tasks.poisson.generalise import render, table

PROG = "python -m examples.poisson.generalise"


def run(argv: list[str] | None) -> None:
    p = Parser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/poisson"), help="the run directory of a trained model")
    p.add_argument("--count", type=int, default=200, help="sources per family")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    if a.count < 1:
        p.error(f"--count must be at least 1, got {a.count}")
    print(render(table(load(a.out, a.device), a.count, a.device)))


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
