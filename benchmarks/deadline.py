"""A time budget is a deadline: ``python -m examples.operator --time T`` ends within ``T``, with other work running.

The benchmark writes a data set (the exact heat map ``u0 -> u(0.1)`` on the periodic square, :mod:`operators.heat`),
starts ``--busy`` processes that each keep a core busy (a Python loop), and runs the operator program on it as a
user would, in its own process, with ``--time T``:

    python -m examples.operator --train heat.npz --layout periodic --time T --threads N

Its wall time is measured from starting the process to its exit -- the interpreter's start and imports, reading the
data, training to the deadline, the report and the plots -- and compared with ``T``; its output is shown with the
seconds since its start, and the clock its last checkpoint holds. The busy processes are stopped
at the end. ``result:`` line: ``|wall - T| / T`` (target <= 0.05), beside the steps it took and the load.

    python benchmarks/deadline.py --quick        # a 30 s budget, the tiny preset, two busy processes
    python benchmarks/deadline.py                # a 2 min budget, two busy processes
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from operators import heat
from training import UserError, load_checkpoint
from training.cli import Parser, bounded, run_cli
from training.tasks.operator.program import parse_time

ROOT = Path(__file__).resolve().parents[1]
#: each busy process: a core kept busy until it is stopped
SPIN = "while True: pass"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def measure(data: Path, out: Path, seconds: float, threads: int, preset: str) -> tuple[float, dict[str, object]]:
    """The wall seconds of the operator program on ``data`` with ``--time seconds``, and its report."""
    argv = [sys.executable, "-m", "examples.operator", "--train", str(data), "--layout", "periodic"]
    argv += ["--input-key", "u0", "--output-key", "u"]
    argv += ["--time", f"{seconds:g}s", "--threads", str(threads), "--preset", preset]
    argv += ["--out", str(out), "--device", "cpu"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:  # each line with the seconds since the start: where the time went
        print(f"  {time.perf_counter() - t0:6.1f} s | {line.rstrip()[:150]}", flush=True)
    code = process.wait()
    wall = time.perf_counter() - t0
    if code != 0:
        raise UserError(f"the operator program failed (exit {code}); its output is above")
    report: dict[str, object] = json.loads((out / "report.json").read_text())
    clock = load_checkpoint(out / "checkpoint.pt")["clock"]
    print(f"  the clock at the last checkpoint: {clock['spent']:.2f} s spent, room for the end {clock['ends']}")
    return wall, report


def main() -> int:
    p = Parser(prog="deadline", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a 30 s budget, 200 pairs, the tiny preset")
    p.add_argument("--time", default="2m", help="the budget (default 2m)")
    p.add_argument("--busy", type=bounded(0, 64), default=2, help="processes keeping a core busy (default 2)")
    p.add_argument("--threads", type=bounded(1, 64), default=1, help="the program's torch threads (default 1)")
    p.add_argument("--samples", type=bounded(16, 10**6), default=2000, help="pairs in the data set")
    p.add_argument("--points", type=bounded(8, 256), default=32, help="grid points per axis")
    p.add_argument("--preset", default="default", help="the program's --preset (default: default)")
    a = p.parse_args()
    seconds = 30.0 if a.quick else parse_time(a.time)
    if a.quick:
        a.samples, a.points, a.preset = 200, 16, "tiny"
    where = Path(tempfile.mkdtemp(prefix="deadline-"))
    busy: list[subprocess.Popen[bytes]] = []
    try:
        data = where / "heat.npz"
        heat.write(data, a.samples, a.points, 2)
        print(f"data: {a.samples} heat-map pairs on {a.points}x{a.points}; load before {load()}", flush=True)
        busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(a.busy)]
        time.sleep(1.0 if a.quick else 5.0)  # the busy processes under way before the clock starts
        print(f"{a.busy} busy processes; load {load()}; the program on {a.threads} thread(s)", flush=True)
        wall, report = measure(data, where / "run", seconds, a.threads, a.preset)
        print(
            f"--time {seconds:g}s: wall {wall:.2f} s (training {report['train_seconds']:.2f} s, "
            f"{report['steps']} steps); load after {load()}"
        )
    finally:
        for process in busy:
            process.kill()
            process.wait()
        shutil.rmtree(where, ignore_errors=True)
    print(f"result: deadline_wall_error_fraction {abs(wall - seconds) / seconds:.4f} (target <= 0.05)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("deadline", main))
