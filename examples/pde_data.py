"""Generate the FNO paper's Burgers and Navier--Stokes data, time it, and print their statistics.

    python -m examples.pde_data                      # the CPU sizes: about 4 + 4 minutes on one core
    python -m examples.pde_data --cache data/pde     # ... and keep them (read back next time)
    python -m examples.pde_data --full --device cuda # the paper's sizes (GPU-sized)

Statistics, against what the problem's definition predicts (nothing here is read from FNO's files):

* Burgers: the pointwise standard deviation of ``u0`` against the GRF's exact one; the mean L² norm
  (root mean square over ``x``, averaged over samples) of ``u0`` and ``u(·, 1)``; their largest values.
* Navier--Stokes: the standard deviation of ``ω0`` against the GRF's; the root mean square and the largest
  ``|ω|`` at a few times, against the steady laminar flow ``ω = f / (8π²ν)`` (an exact solution: one shell),
  whose root mean square is ``0.1 / (8π²ν)``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from operators import CacheError, burgers, navier_stokes
from operators.random_fields import grf_2d_variance
from training import Parser, UserError, run_cli
from training.cli import bounded, threads, writable_dir


def rms(t: torch.Tensor) -> float:
    """The mean over samples of the root mean square over the grid (the last axes after the first)."""
    return float(t.pow(2).flatten(1).mean(1).sqrt().mean())


def burgers_report(full: bool, counts: tuple[int, int], cache: Path | None, device: str) -> list[str]:
    start, cpu = time.perf_counter(), time.process_time()
    train, test = burgers.splits(full=full, counts=counts, cache=cache, device=device)
    seconds = f"{time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s of CPU)"
    k = torch.arange(1, 100_000, dtype=torch.float64)
    exact_std = math.sqrt(float((2 * burgers.SIGMA**2 * (4 * math.pi**2 * k**2 + burgers.TAU**2) ** -2).sum()))
    u0, u1 = torch.cat([train.u0, test.u0]), torch.cat([train.u1, test.u1])
    return [
        f"burgers: {len(train.u0)} + {len(test.u0)} pairs at {u0.shape[-1]} points in {seconds}",
        f"  u0: std {float(u0.std()):.3f} (GRF exact {exact_std:.3f}), mean L2 norm {rms(u0):.4g}, "
        f"max |u0| {float(u0.abs().max()):.4g}",
        f"  u(1): mean L2 norm {rms(u1):.4g}, max |u(1)| {float(u1.abs().max()):.4g}, "
        f"mean L2 ratio u(1)/u0 {float((u1.norm(dim=1) / u0.norm(dim=1)).mean()):.4g}",
    ]


def navier_stokes_report(full: bool, counts: tuple[int, int], cache: Path | None, device: str) -> list[str]:
    start, cpu = time.perf_counter(), time.process_time()
    train, test = navier_stokes.splits(full=full, counts=counts, cache=cache, device=device)
    seconds = f"{time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s of CPU)"
    w = torch.cat([train, test])
    exact = math.sqrt(grf_2d_variance(navier_stokes.MODES, navier_stokes.SIGMA, navier_stokes.TAU, navier_stokes.ALPHA))
    laminar = 0.1 / (8 * math.pi**2 * navier_stokes.NU)
    times = sorted({1, 10, w.shape[1] // 2, w.shape[1] - 1})
    return [
        f"navier-stokes: {len(train)} + {len(test)} trajectories {tuple(w.shape[1:])} in {seconds}",
        f"  w0: std {float(w[:, 0].std()):.4f} (GRF exact {exact:.4f})",
        *(
            f"  t = {t:2d}: rms {rms(w[:, t]):.4f}, max |w| {float(w[:, t].abs().max()):.4f} "
            f"(steady laminar flow: rms {laminar:.4f}, max {laminar * math.sqrt(2):.4f})"
            for t in times
        ),
    ]


PROG = "python -m examples.pde_data"


def device(text: str) -> str:
    """``--device``: a torch device this machine has."""
    try:
        dev = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a torch device (cpu, cuda, cuda:1, ...)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text}: this machine has no CUDA device; use --device cpu")
    return text


def run(argv: Sequence[str] | None = None) -> list[str]:
    """Generate (or read back) the data the options ask for; print and return the report's lines."""
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the paper's sizes (GPU-sized)")
    p.add_argument("--device", type=device, default="cpu")
    p.add_argument("--cache", type=writable_dir, default=None, help="a directory to keep the data in")
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--only", choices=("burgers", "navier-stokes"), default=None)
    count = bounded(1, 100_000, " (the data must fit in memory)")
    p.add_argument("--burgers-counts", type=count, nargs=2, default=(1000, 200), metavar=("TRAIN", "TEST"))
    p.add_argument("--ns-counts", type=bounded(1, 10_000, " (the data must fit in memory)"), nargs=2, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    lines = []
    try:
        if args.only in (None, "burgers"):
            lines += burgers_report(args.full, tuple(args.burgers_counts), args.cache, args.device)
        if args.only in (None, "navier-stokes"):
            ns_counts = (1000, 200) if args.full else (200, 50)
            counts = tuple(args.ns_counts) if args.ns_counts else ns_counts
            lines += navier_stokes_report(args.full, counts, args.cache, args.device)
    except (CacheError, FloatingPointError) as e:
        raise UserError(str(e)) from None
    for line in lines:
        print(line, flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
