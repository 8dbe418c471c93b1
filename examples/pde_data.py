"""Generate the FNO paper's Burgers and Navier--Stokes data, time it, and print their statistics.

    python -m examples.pde_data                      # the CPU sizes: about 0.5 + 4 minutes on one core
    python -m examples.pde_data --cache data/pde     # ... and keep them (read back next time)
    python -m examples.pde_data --full --device cuda # the paper's sizes (GPU-sized)

The statistics, and the exact figures they stand beside, are :mod:`operators.statistics`'s.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import torch

from operators import CacheError, burgers, navier_stokes
from operators.statistics import burgers_report, navier_stokes_report
from training import Parser, UserError, run_cli
from training.cli import bounded, threads, writable_dir
from training.distributed import device_of

PROG = "python -m examples.pde_data"


def _timed(lines: list[str], start: float, cpu: float) -> list[str]:
    took = f"{time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s of CPU)"
    return [f"{lines[0]} in {took}", *lines[1:]]


def run(argv: Sequence[str] | None = None) -> list[str]:
    """Generate (or read back) the data the options ask for; print and return the report's lines."""
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the paper's sizes (GPU-sized)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--cache", type=writable_dir, default=None, help="a directory to keep the data in")
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--only", choices=("burgers", "navier-stokes"), default=None)
    count = bounded(1, 100_000, " (the data must fit in memory)")
    p.add_argument("--burgers-counts", type=count, nargs=2, default=(1000, 200), metavar=("TRAIN", "TEST"))
    p.add_argument("--ns-counts", type=bounded(1, 10_000, " (the data must fit in memory)"), nargs=2, default=None)
    args = p.parse_args(argv)
    device = str(device_of(args.device))
    torch.set_num_threads(args.threads)
    lines: list[str] = []
    try:
        if args.only in (None, "burgers"):
            clock = time.perf_counter(), time.process_time()
            b = burgers.splits(full=args.full, counts=tuple(args.burgers_counts), cache=args.cache, device=device)
            lines += _timed(burgers_report(*b), *clock)
        if args.only in (None, "navier-stokes"):
            counts = tuple(args.ns_counts) if args.ns_counts else ((1000, 200) if args.full else (200, 50))
            clock = time.perf_counter(), time.process_time()
            w = navier_stokes.splits(full=args.full, counts=counts, cache=args.cache, device=device)
            lines += _timed(navier_stokes_report(*w), *clock)
    except (CacheError, FloatingPointError) as e:
        raise UserError(str(e)) from None
    for line in lines:
        print(line, flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
