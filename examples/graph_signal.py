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
(``e^{-k² t}`` per mode). The input features at a node are ``(u, cos θ, sin θ)``.

Run: ``python -m examples.graph_signal [--steps N]``; under a minute on a CPU.
"""

from __future__ import annotations

import math
import sys
import time

import torch
from torch import Tensor

from applicative import DataStructure, Field, Vector, counit, pointwise2
from applicative.laws import run_laws
from models import encoder
from training import Parser, run_cli
from training.cli import bounded


class Nodes(DataStructure):
    """Signals on the nodes of a fixed mesh or graph, integrated with a weight per node (its area)."""

    tensors = ("area",)  # its data: moved by .to(device), compared by equality, batched with the values

    def __init__(self, area: Tensor) -> None:
        self.size, self.area = area.shape[-1], area.detach().clone()

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return self.area.to(dtype=dtype, device=device).log()


MODES, TIME = 6, 0.05


def circle(n: int, g: torch.Generator) -> tuple[Tensor, Nodes]:
    """``n`` nodes at sorted random angles; a node's area is half the arc to its two neighbours."""
    theta = torch.sort(torch.rand(n, generator=g, dtype=torch.float64) * 2 * math.pi).values
    gaps = torch.diff(theta, append=theta[:1] + 2 * math.pi)  # gap to the next node
    return theta, Nodes(0.5 * (gaps + gaps.roll(1)))


def problems(theta: Tensor, count: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random smooth signals at the nodes ``(count, n)`` and their heat-diffused targets."""
    k = torch.arange(1, MODES + 1, dtype=torch.float64)
    a, b = (torch.randn(count, MODES, generator=g, dtype=torch.float64) / k for _ in range(2))
    phase = k[:, None] * theta  # (modes, n)
    u = a @ torch.cos(phase) + b @ torch.sin(phase)
    damp = torch.exp(-(k**2) * TIME)
    return u, (a * damp) @ torch.cos(phase) + (b * damp) @ torch.sin(phase)


def features(theta: Tensor, nodes: Nodes, u: Tensor) -> Field[Nodes, Vector]:
    """``(u, cos θ, sin θ)`` at each node: ``(count, n, 3)``."""
    where = torch.stack([torch.cos(theta), torch.sin(theta)], -1).expand(*u.shape, 2)
    return Field(torch.cat([u.unsqueeze(-1), where], -1), (nodes, Vector(3)))


def rel_l2(pred: Tensor, target: Tensor, nodes: Nodes) -> Tensor:
    """``‖pred - target‖ / ‖target‖`` in L²(nodes): integrals by the structure's counit, per example."""
    sq = pointwise2(lambda p, t: (p - t) ** 2, Field(pred, (nodes,)), Field(target, (nodes,)))
    return (counit(sq).tensor / counit(Field(target**2, (nodes,))).tensor).sqrt()


PROG = "python -m examples.graph_signal"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


def run(argv: list[str] | None) -> None:
    parser = Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=bounded(1, 10**6), default=1000, help="training steps (default 1000)")
    parser.add_argument("--nodes", type=bounded(3, 4096), default=32, help="nodes on the circle, 3..4096 (default 32)")
    args = parser.parse_args(argv)
    g = torch.Generator().manual_seed(0)
    theta, nodes = circle(args.nodes, g)
    report = run_laws(nodes, max_examples=20, database=False)
    print(report.table())
    if report.failures:
        raise SystemExit(report.failure_text())

    torch.manual_seed(0)
    model = encoder(Vector(3), Vector(32), Vector(64), heads=2, depth=2, dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    u_test, y_test = problems(theta, 256, g)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        u, y = problems(theta, 32, g)
        pred = model(features(theta, nodes, u)).tensor[..., 0]
        loss = rel_l2(pred, y, nodes).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == args.steps:
            with torch.no_grad():
                err = rel_l2(model(features(theta, nodes, u_test)).tensor[..., 0], y_test, nodes).mean()
            print(f"step {step:4d}  train loss {loss.item():.3e}  held-out rel. L2 {err.item():.3e}")
    baseline = rel_l2(u_test, y_test, nodes).mean()
    print(
        f"held-out rel. L2 {err.item():.3e} (no-diffusion baseline u itself: {baseline.item():.3e}); "
        f"{time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
