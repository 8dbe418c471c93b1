"""Learn arithmetic circuits mod 10 with shared subexpressions: the DAG fold against the tree fold on the unrolled tree.

``python -m examples.circuits`` trains models with the same learned node cell (:class:`models.NodeCell`) on seeded
circuits of depths 1-4 (:mod:`training.tasks.circuits`) and reports held-out accuracy on depths 1-4 and on depths
5 and 6, never seen in training, with each model's evaluation time:

* ``dag``: :class:`models.DAGFold` on the circuit as a :class:`instances.DAG` -- every node computed once;
* ``tree``: :class:`models.TreeFold` on the circuit unrolled into its expression tree -- every shared
  subexpression recomputed once per path;
* ``gnn``: the message-passing peer, a gated relational graph network (PyTorch Geometric: the ``bench`` extra).

``--out DIR`` writes ``DIR/report.json`` and a resumable ``DIR/MODEL/checkpoint.pt`` per model; ``--json PATH``
writes the report there too.

Examples::

    python -m examples.circuits                                  # dag, tree, gnn: 3000 steps each
    python -m examples.circuits --models dag,tree --out runs/circuits
    python -m examples.circuits --preset tiny --models dag       # seconds
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from training import options, run_cli
from training.cli import output_file
from training.tasks.circuits import MODELS, PRESETS, Config
from training.tasks.circuits.program import execute
from training.tasks.circuits.train import Result

PROG = "python -m examples.circuits"


def experiment(argv: Sequence[str] | None = None) -> list[Result]:
    """Parse, train each model and report; a bad option is a :class:`~training.UserError`."""
    p = options.program(
        PROG, __doc__.splitlines()[0], PRESETS, out_help="write report.json and MODEL/checkpoint.pt here"
    )
    p.add_argument("--models", default="dag,tree,gnn", help="dag, tree, gnn (needs torch_geometric: the bench extra)")
    p.add_argument("--json", type=output_file, default=None, help="also write the report here")
    config, a = options.config_of(p, None if argv is None else list(argv), Config)
    return execute(config, options.names(a.models, MODELS), options.Shared.of(a, PROG), a.json)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


if __name__ == "__main__":
    sys.exit(main())
