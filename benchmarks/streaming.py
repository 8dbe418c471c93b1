"""Training on a file larger than memory: peak resident memory, and step throughput against an in-memory file.

The file holds the exact heat map ``u0 -> u(0.1)`` on the periodic square (:mod:`operators.heat`), float32, under
the keys ``u0`` and ``u``, written a block at a time to at least 1.5 times the machine's memory (``.npz`` of
stored members, or ``--format h5``). A separate process (so that writing it is not counted) then

1. opens it as a stream (:func:`operators.streams.open_pairs`: headers only) and makes one statistics pass over
   all of it (:func:`operators.streams.summarise`, by loader workers), which sets the model's normalisation;
2. trains a small operator model (:class:`training.tasks.operator.OperatorModel`, the ``tiny`` preset) for
   ``--steps`` steps on batches read by loader workers (:class:`training.streamed.StreamTask`);
3. reads its peak resident memory (``VmHWM``) and its workers' -- the statistics workers' (finished: their
   ``ru_maxrss``) and the training loader's (live: their ``VmHWM``), which never run at once -- and adds them up
   (pages the workers share with their parent counted in each: an upper bound);
4. writes an in-memory file of the same grid (``--memory-samples`` pairs) and trains the same model on it by the
   operator task as it is today (:class:`training.tasks.operator.OperatorTask`: the samples held as tensors),
   alternating bursts of steps of the two so that a changing load hits both.

``result:`` lines: the peak resident memory in MiB (target <= 2048) and the streamed steps per second over the
in-memory ones (target >= 0.8). The file is deleted at the end unless ``--keep``.

    python benchmarks/streaming.py --quick        # seconds: a 32 MB file under a 4 MiB budget
    python benchmarks/streaming.py                # 1.5x the machine's memory (tens of GB: minutes to write)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from operators import heat
from operators.dataset import from_file
from operators.layout import Axis
from operators.streams import summarise
from training import UserError
from training.cli import Parser, bounded, run_cli
from training.distributed import SINGLE
from training.loop import Task
from training.resident import children, finished_children_peak, peak
from training.streamed import StreamTask
from training.tasks import streamed_operator
from training.tasks.operator import PRESETS, Config, OperatorTask

MiB, GiB = 2**20, 2**30
PAIR = 2 * 4  # bytes per grid point of a pair (two float32)


def machine_memory() -> int:
    """The machine's memory in bytes (``MemTotal``)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise UserError("cannot read /proc/meminfo; give the file's size with --gib")


def write(path: Path, samples: int, points: int) -> None:
    """The heat-map file, with a line every tenth of it."""
    total, done, said = 2 * samples * points**2 * 4, [0], [0]
    t0 = time.perf_counter()

    def progress(n: int) -> None:
        done[0] += n
        if done[0] * 10 // total > said[0]:
            said[0] = done[0] * 10 // total
            rate = done[0] / (time.perf_counter() - t0) / MiB
            print(f"  written {done[0] / MiB:,.0f} of {total / MiB:,.0f} MiB ({rate:.0f} MiB/s)", flush=True)

    heat.write(path, samples, points, 2, progress=progress)


def measure(a: argparse.Namespace) -> None:
    """Steps 1-4 of the module's description, in this process (``--measure``)."""
    torch.set_num_threads(a.threads)
    memory = a.memory * MiB
    config = PRESETS["tiny"].replace(batch=a.batch, steps=10**6, seed=0)
    stream = heat.stream(a.data, memory)
    size = a.data.stat().st_size
    print(f"stream: {len(stream):,} pairs on {stream.grid}, {size / GiB:.2f} GiB; data budget {a.memory} MiB")
    t0, said = time.perf_counter(), [0]

    def progress(done: int) -> None:
        if done * 10 // len(stream) > said[0]:
            said[0] = done * 10 // len(stream)
            print(f"  statistics: {done:,} of {len(stream):,} pairs, {time.perf_counter() - t0:.0f} s", flush=True)

    summary = summarise(stream, memory=memory, workers=a.workers, progress=progress)
    seconds = time.perf_counter() - t0
    summary.check(stream)
    print(f"statistics pass: {seconds:.1f} s ({size / seconds / MiB:.0f} MiB/s), output rms {summary.outputs.rms()}")
    task = streamed_operator.task(
        stream, config, memory=memory, device=torch.device("cpu"), ranks=SINGLE, workers=a.workers, summary=summary
    )
    t0 = time.perf_counter()
    for _ in range(a.steps):
        task.train_step()
    print(f"trained {a.steps} steps in {time.perf_counter() - t0:.1f} s, batch {a.batch}")
    main, loaders, passes = peak(), [peak(p) for p in children()], finished_children_peak()
    total = main + max(sum(loaders), a.workers * passes)
    print(
        f"peak resident: this process {main / MiB:.0f} MiB, loader workers {[round(w / MiB) for w in loaders]} MiB, "
        f"statistics workers at most {passes / MiB:.0f} MiB each; at once at most {total / MiB:.0f} MiB"
    )
    ratio = against_memory(a, task, stream.grid[0], config)
    task.close()
    print(f"torch {torch.__version__}, {a.threads} thread(s), load after: {os.getloadavg()}")
    print(f"result: streaming_peak_resident_mib {total / MiB:.0f} (target <= 2048)")
    print(f"result: streaming_over_in_memory_steps_per_s {ratio:.3f} (target >= 0.8)")


def against_memory(a: argparse.Namespace, streamed: StreamTask, points: int, config: Config) -> float:
    """Alternating bursts of the streamed task and the in-memory operator task on a file of the same grid."""
    small = Path(tempfile.mkdtemp(prefix="streaming-memory-")) / "heat.npz"
    heat.write(small, a.memory_samples, points, 2)
    train = from_file(small, (Axis("periodic"), Axis("periodic")), input_key="u0", output_key="u")
    tasks: dict[str, Task] = {"streamed": streamed, "in-memory": OperatorTask(config, train, {}, torch.device("cpu"))}
    spent = dict.fromkeys(tasks, 0.0)
    for task in tasks.values():
        for _ in range(3):  # warm
            task.train_step()
    for _ in range(a.bursts):
        for name, task in tasks.items():
            t0 = time.perf_counter()
            for _ in range(a.burst):
                task.train_step()
            spent[name] += time.perf_counter() - t0
    steps = a.bursts * a.burst
    for name in tasks:
        print(f"  {name}: {steps / spent[name]:.2f} steps/s over {steps} steps")
    shutil.rmtree(small.parent)
    return spent["in-memory"] / spent["streamed"]


def main() -> int:
    p = Parser(prog="streaming", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a 32 MB file on a 32² grid under a 4 MiB data budget")
    p.add_argument("--gib", type=float, default=None, help="the file's size (default: 1.5x the machine's memory)")
    p.add_argument("--points", type=bounded(8, 1024), default=64)
    p.add_argument("--batch", type=bounded(1, 4096), default=8)
    p.add_argument("--steps", type=bounded(1, 10**6), default=200)
    p.add_argument("--bursts", type=bounded(1, 100), default=4)
    p.add_argument("--burst", type=bounded(1, 10**4), default=25)
    p.add_argument("--memory", type=bounded(1, 10**6), default=256, help="MiB the data may hold resident")
    p.add_argument("--memory-samples", type=bounded(16, 10**6), default=4096)
    p.add_argument("--workers", type=bounded(0, 16), default=2)
    p.add_argument("--threads", type=bounded(1, 64), default=1)
    p.add_argument("--format", choices=("npz", "h5"), default="npz")
    p.add_argument("--dir", type=Path, default=None, help="where to write the file (default: a temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the file")
    p.add_argument("--measure", action="store_true", help="(internal) steps 1-4 on --data")
    p.add_argument("--data", type=Path)
    a = p.parse_args()
    if a.measure:
        measure(a)
        return 0
    if a.quick:
        a.gib, a.points, a.memory, a.steps, a.bursts, a.burst, a.memory_samples = 1 / 32, 32, 4, 20, 2, 5, 512
    size = int((a.gib * GiB) if a.gib is not None else 1.5 * machine_memory())
    samples = max(16, -(-size // (a.points**2 * PAIR)))
    where = a.dir if a.dir is not None else Path(tempfile.mkdtemp(prefix="streaming-"))
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if free < 1.1 * size:
        raise UserError(
            f"--dir {where}: {free / GiB:.1f} GiB free, the file needs {size / GiB:.1f}; free some or --gib"
        )
    path = where / f"heat.{a.format}"
    print(f"writing {samples:,} pairs on {a.points}² ({size / GiB:.2f} GiB) to {path}; load {os.getloadavg()}")
    try:
        t0 = time.perf_counter()
        write(path, samples, a.points)
        print(f"written in {time.perf_counter() - t0:.0f} s")
        argv = [sys.executable, __file__, "--measure", "--data", str(path)]
        for name in ("points", "batch", "steps", "bursts", "burst", "memory", "memory_samples", "workers", "threads"):
            argv += [f"--{name.replace('_', '-')}", str(getattr(a, name))]
        env = {**os.environ, "OMP_NUM_THREADS": str(a.threads), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        done = subprocess.run(argv, env=env)
        if done.returncode != 0:
            raise UserError(f"the measuring process failed (exit {done.returncode}); its error is printed above")
    finally:
        if not a.keep:
            path.unlink(missing_ok=True)
            if a.dir is None:
                shutil.rmtree(where, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("streaming", main))
