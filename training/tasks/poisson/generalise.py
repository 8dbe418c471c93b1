"""A trained Poisson model on source families it was not trained on (:mod:`operators.poisson.families`).

For each family :func:`table` gives the relative L² error of the model against the exact spectral solution
(mean / median / max) and the *floor*: the error of the exact solution of the source cut to the model's input
modes, itself cut to its output modes -- what reading ``modes`` terms and writing ``out_modes`` terms loses
before any learning (for ``modes24`` / ``modes32``, mostly the dropped input modes).
"""

from __future__ import annotations

import torch

from operators.poisson import families
from operators.poisson.norms import pad, relative_l2
from operators.poisson.solver import PoissonSolver

from .model import PoissonModel

#: data seeds of the family sets (disjoint from the training seeds ``3 s``, ``3 s + 1``, ``3 s + 2``)
SEED = 10_000


def table(model: PoissonModel, count: int, device: torch.device | str = "cpu") -> dict[str, dict[str, float]]:
    """Per family: ``mean``, ``median``, ``max`` relative L² of ``model``, and its truncation ``floor`` (mean)."""
    n, p = model.config.modes, model.out_modes
    solver = PoissonSolver(48)
    out: dict[str, dict[str, float]] = {}
    for i, name in enumerate(families.FAMILIES):
        f = families.draw(name, count, SEED + i, n)
        g = solver.solve(f)
        with torch.no_grad():
            pred = torch.cat([model(f[j : j + 256].to(device)).double().cpu() for j in range(0, count, 256)])
        e = relative_l2(pred, g)
        floor = relative_l2(pad(solver.solve(pad(f, n)), p), g)
        out[name] = {
            "modes": float(f.shape[-1]),
            "mean": float(e.mean()),
            "median": float(e.median()),
            "max": float(e.max()),
            "floor": float(floor.mean()),
        }
    return out


def render(rows: dict[str, dict[str, float]]) -> str:
    """The table as text, one family a line."""
    lines = [f"{'family':12s} {'modes':>5s} {'mean':>9s} {'median':>9s} {'max':>9s} {'floor':>9s}"]
    for name, r in rows.items():
        lines.append(
            f"{name:12s} {int(r['modes']):5d} {r['mean']:9.2e} {r['median']:9.2e} {r['max']:9.2e} {r['floor']:9.2e}"
        )
    return "\n".join(lines)
