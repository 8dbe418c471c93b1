"""Samples per second of the operator model trained on a streamed file by two processes (torchrun, gloo) against one.

The file is the exact heat map ``u0 -> u(0.1)`` on the periodic square (:mod:`operators.heat`), read through
:mod:`operators.streams`: each step's global batch is drawn once from the seed and the step, and each rank reads and
trains on its half (:class:`training.streamed.StreamTask`, DDP averaging the gradients). Both runs take the same
global batch, ``--threads`` torch threads per process (default one), and the same steps; the first ``--warm`` steps
(process-group start, loader start, first allocations) are not timed. The runs alternate (one, two, one, two, ...)
so that a changing load hits both; the best round of each is compared. The last line is two processes' samples per
second over one's (target >= 1.6 on two idle cores: the ideal is 2, less the gradients' all-reduce).

    python benchmarks/torchrun_speed.py --quick        # seconds: a small file, a few steps
    python benchmarks/torchrun_speed.py                # 64² grid, batch 16, 60 timed steps, 3 rounds

``--worker`` is one run's process (what ``torchrun`` starts): it trains ``--steps`` on ``--data`` into ``--out``
(resuming from a checkpoint there, under any number of processes), holding the file's last tenth out, and writes
``--out/speed.json`` (rank 0): the loss at every ``--every`` steps, the timed seconds, the samples per second and
the held-out relative L² error of each sample (an evaluation pass split over the ranks).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from operators import heat
from operators.streams import held_out
from training import UserError, describe, fit
from training.cli import Parser, bounded, run_cli
from training.distributed import check_batch, device_of, setup
from training.loop import Progress
from training.tasks import streamed_operator
from training.tasks.operator import PRESETS

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 256 * 2**20


def worker(a: argparse.Namespace) -> None:
    """One process of a run (under torchrun: one rank)."""
    ranks, device = setup(device_of("cpu"))
    config = PRESETS["tiny"].replace(steps=a.steps, batch=a.batch, dtype=a.dtype, seed=0)
    check_batch(config.batch, ranks)
    train, tenth = held_out(heat.stream(a.data, MEMORY))
    task = streamed_operator.task(train, config, memory=MEMORY, device=device, ranks=ranks, workers=a.workers)
    clock: dict[str, float] = {}

    def timed(run: Progress) -> None:
        if run.step == a.warm:
            clock["start"] = time.perf_counter()
        clock["end"] = time.perf_counter()

    out: Path = a.out
    run = fit(
        task,
        config=describe(config),
        steps=config.steps,
        out=out,
        eval_every=a.every,
        checkpoint_every=config.steps,
        progress=False,
        stop_after=a.stop_after,
        on_step=timed,
        ranks=ranks,
        threads=a.threads,
    )
    task.close()
    errors = streamed_operator.errors(task, tenth, ranks, MEMORY)
    if ranks.main:
        timed_steps = run.step - a.warm
        seconds = clock.get("end", 0.0) - clock.get("start", 0.0)
        report = {
            "world": ranks.world,
            "losses": [r["loss"] for r in run.history],
            "steps": run.step,
            "timed_steps": timed_steps,
            "seconds": seconds,
            "samples_per_second": timed_steps * config.batch / seconds if seconds > 0 else 0.0,
            "held_out_rel_l2": errors.tolist(),
        }
        (out / "speed.json").write_text(json.dumps(report))
    ranks.barrier()


def launch(processes: int, argv: list[str], threads: int = 1) -> dict[str, float]:
    """One run of the worker on ``processes`` processes; its report."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    head = [sys.executable]
    if processes > 1:
        head += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    done = subprocess.run([*head, __file__, "--worker", *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"the {processes}-process run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    out = Path(argv[argv.index("--out") + 1])
    report: dict[str, float] = json.loads((out / "speed.json").read_text())
    return report


def main() -> int:
    p = Parser(prog="torchrun_speed", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a 32² file of 512 pairs, batch 8, 12 timed steps, 1 round")
    p.add_argument("--points", type=bounded(8, 512), default=64, help="grid points per axis (2D)")
    p.add_argument("--samples", type=bounded(16, 10**7), default=8192)
    p.add_argument("--batch", type=bounded(2, 4096), default=16)
    p.add_argument("--steps", type=bounded(1, 10**6), default=70)
    p.add_argument("--warm", type=bounded(0, 10**6), default=10)
    p.add_argument("--rounds", type=bounded(1, 20), default=3)
    p.add_argument("--workers", type=bounded(0, 8), default=1, help="loader processes per rank")
    p.add_argument("--threads", type=bounded(1, 64), default=1, help="torch CPU threads of each process")
    p.add_argument("--worker", action="store_true", help="(internal) one run's process")
    p.add_argument("--data", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--every", type=bounded(1, 10**6), default=10**6, help="(worker) record the loss every N steps")
    p.add_argument("--stop-after", type=bounded(1, 10**6), default=None, help="(worker) stop at this step")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    a = p.parse_args()
    if a.worker:
        worker(a)
        return 0
    if a.quick:
        a.points, a.samples, a.batch, a.steps, a.warm, a.rounds = 32, 512, 8, 16, 4, 1
    work = Path(tempfile.mkdtemp(prefix="torchrun-speed-"))
    data = work / "heat.npz"
    heat.write(data, a.samples, a.points, 2)
    load = os.getloadavg()
    print(f"heat map {a.samples} pairs on {a.points}², batch {a.batch}, {a.steps - a.warm} timed steps; load {load}")
    best: dict[int, float] = {1: 0.0, 2: 0.0}
    for r in range(a.rounds):
        for processes in (1, 2):
            out = work / f"run-{processes}-{r}"
            argv = ["--data", str(data), "--out", str(out), "--steps", str(a.steps), "--batch", str(a.batch)]
            argv += ["--warm", str(a.warm), "--workers", str(a.workers), "--threads", str(a.threads)]
            report = launch(processes, argv, a.threads)
            print(f"  round {r}, {processes} process(es): {report['samples_per_second']:.1f} samples/s")
            best[processes] = max(best[processes], report["samples_per_second"])
    print(f"torch {torch.__version__}, {a.threads} thread(s) per process, load after: {os.getloadavg()}")
    shutil.rmtree(work)
    print(f"result: torchrun_two_over_one_samples_per_s {best[2] / best[1]:.3f} (target >= 1.6)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("torchrun_speed", main))
