"""Darcy flow through the general operator route against the Darcy program, at equal steps.

The project's seeded Darcy data (:mod:`operators.darcy.data`: ``points x points`` nodes of ``[0, 1]²``, solved
on a grid twice as fine) are written to ``.npz`` files as a user would have them, and trained twice from the
command line: ``python -m examples.darcy --preset grid`` (the Darcy program) and ``python -m examples.operator
--preset darcy --layout nodes --boundary zero`` (the general route: the grid and its zero ends declared, the data
checked). Both runs get the same steps, seed and thread count, side by side; the figure is the held-out relative
L² error of each, and the last line the ratio general / Darcy (target <= 1.1: the general route costs nothing).

    python benchmarks/darcy_routes.py --quick                  # seconds: 40 steps on small data
    python benchmarks/darcy_routes.py --family piecewise       # the grid preset's 2000 steps, about 4 min per run
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from operators.darcy import data
from training import UserError
from training.cli import Parser, run_cli, threads


def main() -> int:
    p = Parser(prog="darcy_routes", description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=data.FAMILIES, default="piecewise")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--points", type=int, default=33)
    p.add_argument("--train", type=int, default=1000)
    p.add_argument("--test", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=threads, default=1, help="torch CPU threads of each run (both run at once)")
    p.add_argument("--quick", action="store_true", help="40 steps on 64 samples at 17² (12 modes): a smoke run")
    a = p.parse_args()
    if a.quick:
        a.steps, a.points, a.train, a.test = 40, 17, 64, 16
    print(f"Darcy {a.family}: {a.train} train / {a.test} held-out on {a.points}², {a.steps} steps, seed {a.seed}")
    work = Path(tempfile.mkdtemp(prefix="darcy-routes-"))
    t0 = time.perf_counter()
    splits = data.splits(a.family, a.train, a.test, a.points, a.seed, 2)
    np.savez(work / "train.npz", coeff=splits.train.a.numpy(), sol=splits.train.u.numpy())
    np.savez(work / "test.npz", coeff=splits.test.a.numpy(), sol=splits.test.u.numpy())
    print(f"data written to {work} ({time.perf_counter() - t0:.0f}s)")
    shared = ["--steps", str(a.steps), "--config", f"seed={a.seed}", "--threads", str(a.threads), "--no-progress"]
    shared += ["--config", "modes=12"] if a.quick else []
    darcy = ["-m", "examples.darcy", "--preset", "grid", "--family", a.family, "--out", str(work / "darcy")]
    darcy += ["--config", f"n_train={a.train}", "--config", f"n_test={a.test}", "--config", f"points={a.points}"]
    general = ["-m", "examples.operator", "--preset", "darcy", "--layout", "nodes", "--boundary", "zero"]
    general += ["--train", str(work / "train.npz"), "--test", str(work / "test.npz"), "--out", str(work / "general")]
    env = {**os.environ, "OMP_NUM_THREADS": str(a.threads), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    runs = {
        name: subprocess.Popen([sys.executable, *argv, *shared], env=env)
        for name, argv in (("darcy", darcy), ("general", general))
    }
    for name, proc in runs.items():
        if proc.wait() != 0:
            raise UserError(f"the {name} run failed (exit {proc.returncode}); its error is printed above")
    d = json.loads((work / "darcy" / "report.json").read_text())
    g = json.loads((work / "general" / "report.json").read_text())
    ed, eg = d["held_out_relative_l2"]["mean"], g["tests"]["test"]["mean"]
    print(f"Darcy program: {ed:.3e} ({d['parameters']} parameters, {d['train_seconds']:.0f}s)")
    print(f"general route: {eg:.3e} ({g['parameters']} parameters, {g['train_seconds']:.0f}s)")
    print(f"result: darcy_general_over_program {eg / ed:.3f} (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("darcy_routes", main))
