"""A graph task that needs two hops: the generic encoder as a graph Transformer against PyTorch Geometric.

Seeded random graphs (:mod:`training.tasks.graph_hops`; 16-32 nodes, undirected, average degree 3), about 8%
of the nodes marked. A node's label: is there a marked node at distance 1 or 2 (itself excluded)? One round of
message passing sees only distance 1, so a model needs two layers. Models, at about equal parameters:

* ``ours``: :func:`models.encoder` (2 layers, width 32, 4 heads, MLP 64) on ``Field[Graph, Features]`` with
  :class:`instances.EdgeSoftmax` -- attention along the edges (self-loops added), the generic layers as
  they are, the edge-list kernel underneath;
* ``transformerconv``: PyG ``TransformerConv`` x 2 (4 heads, concatenated, root weight), ReLU, a linear head;
* ``gatconv``: PyG ``GATConv`` x 2 (4 heads, self-loops), ELU, a linear head (GAT's own recipe);
* ``ours-1``: the encoder with one layer, which cannot see two hops (the ablation).

Node accuracy on 500 held-out graphs (majority class printed beside it). ``--models`` picks; the PyG
models need the bench extra. Each model trains on the shared loop (:func:`training.fit`: Adam, batches of 32
graphs); ``--out DIR`` writes ``DIR/report.json`` and a resumable ``DIR/MODEL/checkpoint.pt`` per model.

Examples::

    python -m examples.graph_hops                                  # 1500 steps per model
    python -m examples.graph_hops --models ours,ours-1 --steps 500 --out runs/graph_hops
    python -m examples.graph_hops --preset tiny --models ours       # seconds
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from training import options, run_cli
from training.tasks.graph_hops import MODELS, PRESETS, Config
from training.tasks.graph_hops.program import execute

PROG = "python -m examples.graph_hops"


def experiment(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Parse, train each model and report; a bad option is a :class:`~training.UserError`."""
    out_help = "write report.json and MODEL/checkpoint.pt here"
    p = options.program(PROG, __doc__.splitlines()[0], PRESETS, out_help=out_help)
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of: {', '.join(MODELS)}")
    config, a = options.config_of(p, None if argv is None else list(argv), Config)
    return execute(
        config, options.names(a.models, MODELS), options.Shared.of(a, PROG), say=lambda s: print(s, flush=True)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0, or 2 with one line on stderr for a bad option."""
    return run_cli(PROG, lambda: experiment(argv))


if __name__ == "__main__":
    sys.exit(main())
