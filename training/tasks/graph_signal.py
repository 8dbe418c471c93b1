"""Heat diffusion of signals on the nodes of a circle: a task for any structure with a weight per node.

Nodes sit at random angles ``θ`` on a circle, each weighted by its share of the circle (half the arcs to its two
neighbours, so the weights differ); a random smooth signal ``u(θ) = Σ_{k≤6} a_k cos kθ + b_k sin kθ``
(``a_k, b_k ~ N(0, k⁻²)``) is to be mapped to ``e^{tΔ} u``, the signal after heat diffusion for ``t = 0.05``,
exact from its Fourier modes (``e^{-k² t}`` per mode). A node's input features are ``(u, cos θ, sin θ)``. Errors
are relative ``L²`` norms integrated by the structure's own counit, so the structure's measure is the quadrature.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import Tensor

from applicative import Field, Structure, Vector, counit, pointwise2
from models import encoder

#: the signals' Fourier modes, and the diffusion time
MODES, TIME = 6, 0.05


def circle(n: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
    """``n`` sorted random angles ``(n,)`` and each node's weight: half the arcs to its two neighbours."""
    theta = torch.sort(torch.rand(n, generator=g, dtype=torch.float64) * 2 * math.pi).values
    gaps = torch.diff(theta, append=theta[:1] + 2 * math.pi)  # gap to the next node
    return theta, 0.5 * (gaps + gaps.roll(1))


def problems(theta: Tensor, count: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random smooth signals at the nodes ``(count, n)`` and their heat-diffused targets."""
    k = torch.arange(1, MODES + 1, dtype=torch.float64)
    a, b = (torch.randn(count, MODES, generator=g, dtype=torch.float64) / k for _ in range(2))
    phase = k[:, None] * theta  # (modes, n)
    u = a @ torch.cos(phase) + b @ torch.sin(phase)
    damp = torch.exp(-(k**2) * TIME)
    return u, (a * damp) @ torch.cos(phase) + (b * damp) @ torch.sin(phase)


def features(theta: Tensor, nodes: Structure, u: Tensor) -> Field[Structure, Vector]:
    """``(u, cos θ, sin θ)`` at each node: ``(count, n, 3)``."""
    where = torch.stack([torch.cos(theta), torch.sin(theta)], -1).expand(*u.shape, 2)
    return Field(torch.cat([u.unsqueeze(-1), where], -1), (nodes, Vector(3)))


def rel_l2(pred: Tensor, target: Tensor, nodes: Structure) -> Tensor:
    """``‖pred - target‖ / ‖target‖`` in L²(nodes): integrals by the structure's counit, per example."""
    sq = pointwise2(lambda p, t: (p - t) ** 2, Field(pred, (nodes,)), Field(target, (nodes,)))
    return (counit(sq).tensor / counit(Field(target**2, (nodes,))).tensor).sqrt()


def train(
    theta: Tensor, nodes: Structure, steps: int, g: torch.Generator, say: Callable[[str], None] = print
) -> dict[str, float]:
    """The generic encoder (2 layers, width 32, float64) trained by Adam on fresh batches of 32 signals, the
    held-out error said every 100 steps; the final held-out error, the no-diffusion baseline's, and the seconds."""
    torch.manual_seed(0)
    model = encoder(Vector(3), Vector(32), Vector(64), heads=2, depth=2, dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    u_test, y_test = problems(theta, 256, g)
    start = time.perf_counter()
    err = torch.tensor(math.nan)
    for step in range(1, steps + 1):
        u, y = problems(theta, 32, g)
        pred = model(features(theta, nodes, u)).tensor[..., 0]
        loss = rel_l2(pred, y, nodes).pow(2).mean()
        opt.zero_grad()
        torch.autograd.backward(loss)
        opt.step()
        if step % 100 == 0 or step == steps:
            with torch.no_grad():
                err = rel_l2(model(features(theta, nodes, u_test)).tensor[..., 0], y_test, nodes).mean()
            say(f"step {step:4d}  train loss {loss.item():.3e}  held-out rel. L2 {err.item():.3e}")
    baseline = rel_l2(u_test, y_test, nodes).mean()
    return {"held_out": err.item(), "baseline": baseline.item(), "seconds": time.perf_counter() - start}
