"""The Poisson figure beside its baselines: least squares, the linear path alone, the Funcformer alone, both.

Every row learns ``f ↦ g`` (``Δg = f`` on ``[-1, 1]²``, ``g = 0`` on the boundary) from the main job's
own training pairs (:mod:`training.tasks.poisson.data`, the ``default`` preset's mixed sources) and is scored
on its held-out and out-of-distribution sets by the mean relative L² error of the whole function:

* ``truncation floor`` -- the exact solution cut to the model's output modes (what no model can beat);
* ``least squares`` -- the closed-form linear map from the 256 source coefficients to the output
  coefficients fitted on the training pairs (``torch.linalg.lstsq``; the weighted L² norm of the output
  does not change the minimiser of an unconstrained linear map);
* ``linear path alone`` -- :class:`models.SeparableLinear` (``rank=12, correction=false``), trained;
* ``Funcformer alone`` -- the main job's default model (no linear path), trained;
* ``linear path + Funcformer`` -- the previous default (``rank=12``), trained;
* ``2D-domain Funcformer alone`` -- the generic encoder whose sequence is the square itself
  (``Pairs(X, Y)``, ``sequence=xy``, Galerkin attention, width 32 to fit a CPU: ``--steps-2d`` steps), beside
  ``best linear map of rank 32`` -- the reduced-rank regression floor that a Galerkin layer of width 32 meets
  (its kernel ``q(x)·k(t)`` has rank at most the width).

All trained rows take the same steps, batch and schedule (each config's own), one after another in one
process, with the given thread count; times are wall clock of the training loop alone. The last line is
the Funcformer alone's held-out error against the issue's target.

    python benchmarks/poisson_ablation.py                # the default run's steps for each row
    python benchmarks/poisson_ablation.py --quick        # seconds: 60 steps, small data
    python benchmarks/poisson_ablation.py --steps 2000 --threads 1
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import torch

from instances.chebyshev import metric
from operators.poisson import norms, sources
from training.cli import Parser, run_cli, threads
from training.tasks.poisson import data
from training.tasks.poisson.config import PRESETS, Config
from training.tasks.poisson.train import build, errors

TARGET = 1e-3


def least_squares(splits: sources.Splits, out: int) -> dict[str, float]:
    """The closed-form linear map ``A = F⁺ G`` on the training pairs, scored on held-out and OOD."""
    start = time.perf_counter()
    f = splits.train.f.flatten(-2)
    g = splits.train.target(out).flatten(-2)
    a = torch.linalg.lstsq(f, g).solution
    seconds = time.perf_counter() - start

    def score(d: sources.PoissonData) -> float:
        return float(norms.relative_l2((d.f.flatten(-2) @ a).unflatten(-1, (out, out)), d.g).mean())

    return {"held": score(splits.test), "ood": score(splits.ood), "params": a.numel(), "time": seconds}


def reduced_rank(splits: sources.Splits, out: int, rank: int) -> dict[str, float]:
    """The best linear map of rank ``rank`` on the training pairs (reduced-rank regression in the output's L²).

    A Galerkin (linear-attention) layer whose model width is ``rank`` cannot represent a linear operator of
    higher rank over the domain's positions: this row is the floor such a layer meets on the same data.
    """
    f = splits.train.f.flatten(-2)
    g = splits.train.target(out).flatten(-2)
    a = torch.linalg.lstsq(f, g).solution
    w = metric(out)
    chol = torch.linalg.cholesky(torch.kron(w, w))  # ‖c‖² = cᵀ (W ⊗ W) c
    fitted = f @ a @ chol
    _, _, vh = torch.linalg.svd(fitted, full_matrices=False)
    project = vh[:rank].mT @ vh[:rank]
    a_r = a @ chol @ project @ torch.linalg.inv(chol)

    def score(d: sources.PoissonData) -> float:
        return float(norms.relative_l2((d.f.flatten(-2) @ a_r).unflatten(-1, (out, out)), d.g).mean())

    return {"held": score(splits.test), "ood": score(splits.ood), "params": a_r.numel(), "time": 0.0}


def trained(config: Config, splits: sources.Splits, steps: int) -> dict[str, float]:
    """Train ``config`` for ``steps`` (its schedule spans them) and score it."""
    cfg = config.replace(steps=steps)
    task = build(cfg, splits, torch.device("cpu"))
    start = time.perf_counter()
    for _ in range(steps):
        task.train_step()
    seconds = time.perf_counter() - start
    cpu = torch.device("cpu")
    return {
        "held": float(errors(task.model, splits.test, cpu).mean()),
        "ood": float(errors(task.model, splits.ood, cpu).mean()),
        # the parameters that train (a linear path alone leaves the Funcformer it does not run untouched)
        "params": sum(p.numel() for p in task.model.parameters() if p.grad is not None),
        "time": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="60 steps on 256 training pairs")
    p.add_argument("--steps", type=int, default=None, help="steps of every trained row (default: the preset's)")
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--skip-2d", action="store_true", help="leave out the (slow on a CPU) 2D-domain row")
    p.add_argument("--skip", action="append", default=[], metavar="ROW", help="leave out a trained row by name")
    p.add_argument("--steps-2d", type=int, default=2000, help="steps of the 2D-domain row (about 0.25 s each)")
    a = p.parse_args(argv)
    if a.threads < 1 or (a.steps is not None and a.steps < 1):
        p.error("--threads and --steps must be at least 1")
    torch.set_num_threads(a.threads)
    base = PRESETS["default"]
    if a.quick:
        base = base.replace(n_train=256, n_test=32)
    steps = a.steps or (60 if a.quick else base.steps)
    splits = data.splits(base.n_train, base.n_test, base.seed, base.modes, sources=base.sources)
    out = base.out_modes or base.modes
    rows: list[tuple[str, dict[str, Any]]] = []
    floor = {
        "held": float(norms.relative_l2(splits.test.target(out), splits.test.g).mean()),
        "ood": float(norms.relative_l2(splits.ood.target(out), splits.ood.g).mean()),
        "params": 0,
        "time": 0.0,
    }
    rows.append((f"truncation floor ({out} modes)", floor))
    rows.append(("least squares (closed form)", least_squares(splits, out)))
    variants = [
        ("linear path alone", base.replace(rank=12, correction=False)),
        ("Funcformer alone (default)", base),
        ("linear path + Funcformer", base.replace(rank=12)),
    ]
    for name, cfg in variants:
        if name in a.skip:
            continue
        print(f"training {name} for {steps} steps ...", flush=True)
        rows.append((name, trained(cfg, splits, steps)))
    if not a.skip_2d:
        # the square itself as the sequence: 24 x 24 positions, a narrower model to fit a CPU budget
        flat = base.replace(sequence="xy", key_size=0, value_size=0, width=32, hidden=64, heads=4, batch=32, lr=3e-3)
        steps_2d = 30 if a.quick else a.steps_2d
        print(f"training the 2D-domain Funcformer for {steps_2d} steps ...", flush=True)
        rows.append((f"2D-domain Funcformer alone ({steps_2d} steps)", trained(flat, splits, steps_2d)))
        rows.append((f"best linear map of rank {flat.width}", reduced_rank(splits, out, flat.width)))
    print(f"\n{base.n_train} training pairs, {steps} steps per trained row, {a.threads} thread(s)")
    print(f"{'model':40s} {'held-out':>10s} {'OOD':>10s} {'params':>9s} {'time':>8s}")
    for name, r in rows:
        print(f"{name:40s} {r['held']:10.2e} {r['ood']:10.2e} {r['params']:9d} {r['time']:7.1f}s")
    alone = dict(rows).get("Funcformer alone (default)", {"held": math.nan})["held"]
    print(f"result: funcformer_alone_held_out {alone:.3g} (target <= {TARGET:g})")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("poisson_ablation", main))
