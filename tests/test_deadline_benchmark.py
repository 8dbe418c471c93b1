"""``benchmarks/deadline.py --quick``: the operator program runs to a short ``--time`` and the
benchmark reports its ``result:`` line (the figure itself is the benchmark's, not a test's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_deadline_benchmark_runs() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(ROOT / "benchmarks" / "deadline.py"), "--quick", "--busy", "0"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^--time 30s: wall [\d.]+ s \(training [\d.]+ s, \d+ steps\)", done.stdout, re.M), done.stdout
    line = re.search(r"^result: deadline_wall_error_fraction ([\d.]+) \(target <= 0.05\)$", done.stdout, re.M)
    assert line and float(line.group(1)) >= 0, done.stdout
