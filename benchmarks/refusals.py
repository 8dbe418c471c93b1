"""How long a program takes to refuse bad input, beside the same program's ``--help`` in the same run.

Each case runs ``python -m PROGRAM ARGS`` in a fresh interpreter (a fresh temporary working directory) and must
exit 2 with one line on stderr; its time is from the start of the process to its exit. The peer is the same
program's ``--help`` in the same run: what starting Python, importing torch and the project, and parsing the
arguments cost on this machine. A refusal's own cost is its time less that peer's. Every case runs ``--repeat``
times and keeps its fastest (on a shared machine the others carry other processes' time); the load average is
printed beside the figures.

The cases: a value past its bound (refused by the parser), a model past the memory budget (its parameters counted
on the meta device), and a damaged checkpoint to resume from (a NaN weight: the file read and checked).

    python benchmarks/refusals.py            # every case, three times
    python benchmarks/refusals.py --quick    # the bound and the budget cases of one program, once

The last line is the slowest refusal's own cost, against the target of one second.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from training.cli import Parser, bounded, run_cli, threads

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0


@dataclass(frozen=True)
class Case:
    """A program and the arguments it must refuse in one line (``nan_checkpoint``: resume from a damaged run)."""

    name: str
    module: str
    argv: tuple[str, ...]
    nan_checkpoint: bool = False


CASES = (
    Case("poisson: lr past its bound", "examples.poisson", ("--preset", "tiny", "--config", "lr=1e300")),
    Case(
        "poisson: a model past the budget",
        "examples.poisson",
        ("--preset", "tiny", "--config", "width=8192", "--config", "hidden=65536", "--config", "depth=256"),
    ),
    Case("poisson: a NaN weight in the checkpoint", "examples.poisson", ("--preset", "tiny"), nan_checkpoint=True),
    Case("operator: an extent that does not parse", "examples.operator", ("--extent", "1:-1")),
)


def _run(module: str, argv: tuple[str, ...], cwd: Path, cpu_threads: int = 1) -> tuple[float, int, str]:
    env = {**os.environ, "OMP_NUM_THREADS": str(cpu_threads), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", module, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    return time.perf_counter() - start, done.returncode, done.stderr


def _damaged_run(cwd: Path) -> None:
    """A tiny Poisson run in ``cwd/run`` whose checkpoint then holds a NaN weight."""
    import torch

    _, code, err = _run("examples.poisson", ("--preset", "tiny", "--steps", "2", "--out", "run"), cwd)
    if code != 0:
        raise SystemExit(f"refusals: the tiny Poisson run failed ({err.strip().splitlines()[-1:]})")
    path = cwd / "run" / "checkpoint.pt"
    blob = torch.load(path, weights_only=True)
    weights = blob["task"]["model"]
    name = next(k for k, v in weights.items() if v.is_floating_point())
    weights[name].view(-1)[0] = float("nan")
    torch.save(blob, path)


def _fastest(case: Case, repeat: int, cpu_threads: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            argv = case.argv
            if case.nan_checkpoint:
                _damaged_run(cwd)
                argv = (*argv, "--out", "run")
            seconds, code, err = _run(case.module, argv, cwd, cpu_threads)
            lines = err.strip().splitlines()
            if code != 2 or len(lines) != 1:
                raise SystemExit(f"refusals: {case.name}: expected exit 2 and one line, got {code}: {err[-300:]}")
            best = min(best, seconds)
    return best


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=bounded(1, 100), default=3, help="runs per case (the fastest kept)")
    parser.add_argument("--quick", action="store_true", help="the first two cases, once each")
    parser.add_argument("--threads", type=threads, default=1, help="the programs' CPU threads (default 1)")
    args = parser.parse_args()
    cases, repeat = (CASES[:2], 1) if args.quick else (CASES, args.repeat)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {repeat} run(s) per case, the fastest kept")
    peers: dict[str, float] = {}
    worst = 0.0
    for case in cases:
        if case.module not in peers:
            with tempfile.TemporaryDirectory() as tmp:
                peers[case.module] = min(
                    _run(case.module, ("--help",), Path(tmp), args.threads)[0] for _ in range(repeat)
                )
            print(f"  {case.module} --help (the peer): {peers[case.module]:.2f} s")
        seconds = _fastest(case, repeat, args.threads)
        own = max(0.0, seconds - peers[case.module])
        worst = max(worst, own)
        print(f"  {case.name}: {seconds:.2f} s, {own:.2f} s beyond --help")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    print(f"result: slowest_refusal_beyond_help {worst:.2f} s (target <= {TARGET_S:.1f} s)")


if __name__ == "__main__":
    sys.exit(run_cli("refusals", main))
