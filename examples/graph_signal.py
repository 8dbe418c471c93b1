"""A structure the project does not ship, written by a user: signals on the nodes of a mesh.

``Nodes`` below is the whole structure -- its size, its data and its measure
(a weight per node: the node's share of the mesh, so that the counit is an
integral). Everything else is derived by the library: ``pure``, ``fmap``,
``zip_with``, the counit, the contractions, softmax and layer norm against
the measure, and fused attention (one ``scaled_dot_product_attention`` call
with the bias ``log area``). The laws are checked in one call, and the generic
encoder is trained on it with no model code.

The task: nodes at random angles on a circle (so the areas differ), a random
smooth signal ``u(θ)`` on them, and the target ``e^{tΔ} u``, the signal after
heat diffusion for time ``t`` -- computed exactly from its Fourier modes
(``e^{-k² t}`` per mode; :mod:`training.tasks.graph_signal`). The features at a node are ``(u, cos θ, sin θ)``.

Run: ``python -m examples.graph_signal [--steps N]``; under a minute on a CPU.
"""

from __future__ import annotations

import sys

import torch
from torch import Tensor

from applicative import DataStructure, per_example
from applicative.laws import run_laws
from training import Parser, run_cli
from training.cli import bounded
from training.tasks.graph_signal import circle, train


class Nodes(DataStructure):
    """Signals on the nodes of a fixed mesh or graph, integrated with a weight per node (its area)."""

    area: Tensor = per_example(event_dims=1)  # (*batch, n): its data, moved by .to(device), batched with the values

    def __init__(self, area: Tensor) -> None:
        self.size, self.area = area.shape[-1], area.detach().clone()

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return self.area.to(dtype=dtype, device=device).log()


PROG = "python -m examples.graph_signal"


def run(argv: list[str] | None) -> None:
    parser = Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=bounded(1, 10**6), default=1000, help="training steps (default 1000)")
    parser.add_argument("--nodes", type=bounded(3, 4096), default=32, help="nodes on the circle, 3..4096 (default 32)")
    args = parser.parse_args(argv)
    g = torch.Generator().manual_seed(0)
    theta, area = circle(args.nodes, g)
    nodes = Nodes(area)
    report = run_laws(nodes, max_examples=20, database=False)
    print(report.table())
    if report.failures:
        raise SystemExit(report.failure_text())
    r = train(theta, nodes, args.steps, g)
    print(f"held-out rel. L2 {r['held_out']:.3e} (no-diffusion baseline u itself: {r['baseline']:.3e}); ", end="")
    print(f"{r['seconds']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
