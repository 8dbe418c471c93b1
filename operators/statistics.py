"""What generated Burgers and Navier--Stokes data look like, beside what the problem's definition predicts.

Nothing here is read from FNO's files: each figure is set against an exact one.

* Burgers: the pointwise standard deviation of ``u0`` against the Gaussian random field's exact one; the mean
  L² norm (root mean square over ``x``, averaged over samples) of ``u0`` and ``u(·, 1)``; their largest values.
* Navier--Stokes: the standard deviation of ``ω0`` against the field's; the root mean square and the largest
  ``|ω|`` at a few times, against the steady laminar flow ``ω = f / (8π²ν)`` (an exact solution: one shell),
  whose root mean square is ``0.1 / (8π²ν)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from . import burgers, navier_stokes
from .burgers import BurgersData
from .random_fields import grf_2d_variance


def rms(t: Tensor) -> float:
    """The mean over samples of the root mean square over the grid (the axes after the first)."""
    return float(t.pow(2).flatten(1).mean(1).sqrt().mean())


def burgers_report(train: BurgersData, test: BurgersData) -> list[str]:
    """Lines describing Burgers pairs: sizes, ``u0``'s spread against the field's exact one, the decay to ``t = 1``."""
    k = torch.arange(1, 100_000, dtype=torch.float64)
    exact_std = math.sqrt(float((2 * burgers.SIGMA**2 * (4 * math.pi**2 * k**2 + burgers.TAU**2) ** -2).sum()))
    u0, u1 = torch.cat([train.u0, test.u0]), torch.cat([train.u1, test.u1])
    return [
        f"burgers: {len(train.u0)} + {len(test.u0)} pairs at {u0.shape[-1]} points",
        f"  u0: std {float(u0.std()):.3f} (GRF exact {exact_std:.3f}), mean L2 norm {rms(u0):.4g}, "
        f"max |u0| {float(u0.abs().max()):.4g}",
        f"  u(1): mean L2 norm {rms(u1):.4g}, max |u(1)| {float(u1.abs().max()):.4g}, "
        f"mean L2 ratio u(1)/u0 {float((u1.norm(dim=1) / u0.norm(dim=1)).mean()):.4g}",
    ]


def navier_stokes_report(train: Tensor, test: Tensor) -> list[str]:
    """Lines describing vorticity trajectories ``(N, T, n, n)``: ``ω0``'s spread, and the size of ``ω`` over time
    beside the steady laminar flow's."""
    w = torch.cat([train, test])
    ns = navier_stokes
    exact = math.sqrt(grf_2d_variance(ns.MODES, ns.SIGMA, ns.TAU, ns.ALPHA))
    laminar = 0.1 / (8 * math.pi**2 * ns.NU)
    times = sorted({1, 10, w.shape[1] // 2, w.shape[1] - 1} & set(range(w.shape[1])))
    return [
        f"navier-stokes: {len(train)} + {len(test)} trajectories {tuple(w.shape[1:])}",
        f"  w0: std {float(w[:, 0].std()):.4f} (GRF exact {exact:.4f})",
        *(
            f"  t = {t:2d}: rms {rms(w[:, t]):.4f}, max |w| {float(w[:, t].abs().max()):.4f} "
            f"(steady laminar flow: rms {laminar:.4f}, max {laminar * math.sqrt(2):.4f})"
            for t in times
        ),
    ]
