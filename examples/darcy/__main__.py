"""``python -m examples.darcy``: train the operator model on Darcy flow, ``-∇·(a∇u) = 1`` on ``[0, 1]²``.

Generates seeded data of one coefficient family (``--family lognormal`` or ``piecewise``) with the
finite-difference solver, trains the operator task's model with its Darcy options (``log a`` read, ``u(c a) =
u(a) / c`` built in, the square's symmetries) and prints the held-out relative L² error; writes
``OUT/report.json`` and a resumable ``OUT/checkpoint.pt`` (rerun the same command to continue).

Examples::

    python -m examples.darcy                      # piecewise a ∈ {3, 12}: 2000 steps
    python -m examples.darcy --family lognormal --out runs/darcy-lognormal
    python -m examples.darcy --preset tiny --out /tmp/darcy-tiny
    python -m examples.darcy --config depth=2 --steps 1000
"""

from __future__ import annotations

import sys
from pathlib import Path

from operators.darcy import FAMILIES
from training import options, run_cli
from training.tasks.darcy import PRESETS, Config
from training.tasks.darcy.program import execute

PROG = "python -m examples.darcy"


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help="run directory (default runs/darcy-FAMILY)")
    p.add_argument("--family", choices=FAMILIES, default=None, help="shorthand for --config family=...")
    config, a = options.config_of(p, argv, Config)
    a.out = a.out or Path("runs") / f"darcy-{config.family}"
    r = execute(config, options.Shared.of(a, PROG))
    e = r.held_out_relative_l2
    print(f"parameters: {r.parameters}")
    print(f"training time: {r.train_seconds:.1f}s for {r.steps} steps")
    print(f"held-out relative L2 ({config.family}): mean {e.mean:.3e}  median {e.median:.3e}  max {e.max:.3e}")
    print(f"wrote {a.out / 'report.json'}, {a.out / 'checkpoint.pt'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
