"""``python -m examples.poisson.generalise``: a trained model on source families it was not trained on.

For each family of :mod:`operators.poisson.families` it prints the relative L² error of the model against
the exact spectral solution (mean / median / max) and the *floor*: the error of the exact solution of the
source cut to the model's input modes, itself cut to its output modes -- what reading ``modes`` terms and
writing ``out_modes`` terms loses before any learning (for ``modes24`` / ``modes32``, mostly the dropped
input modes)::

    python -m examples.poisson.generalise --out runs/poisson
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from operators.poisson import families, norms
from operators.poisson.solver import PoissonSolver
from training import Parser, run_cli
from training.tasks.poisson.model import PoissonModel, load

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
        e = norms.relative_l2(pred, g)
        floor = norms.relative_l2(norms.pad(solver.solve(norms.pad(f, n)), p), g)
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


def run(argv: list[str] | None) -> None:
    p = Parser(prog="python -m examples.poisson.generalise", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/poisson"), help="the run directory of a trained model")
    p.add_argument("--count", type=int, default=200, help="sources per family")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    if a.count < 1:
        p.error(f"--count must be at least 1, got {a.count}")
    print(render(table(load(a.out, a.device), a.count, a.device)))


def main(argv: list[str] | None = None) -> int:
    return run_cli("python -m examples.poisson.generalise", lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
