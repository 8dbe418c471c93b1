"""``benchmarks/streaming.py --quick``: a file eight times the data budget trains through the stream, and the
benchmark reports its ``result:`` lines (the figures themselves are the benchmark's, not a test's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_streaming_benchmark_runs(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(ROOT / "benchmarks" / "streaming.py"), "--quick", "--dir", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"stream: 4,096 pairs on \(32, 32\).* data budget 4 MiB", done.stdout)
    peak = re.search(r"^result: streaming_peak_resident_mib (\d+) \(target <= 2048\)$", done.stdout, re.M)
    ratio = re.search(r"^result: streaming_over_in_memory_steps_per_s ([\d.]+) \(target >= 0.8\)$", done.stdout, re.M)
    assert peak and ratio, done.stdout
    assert 0 < int(peak.group(1)) and float(ratio.group(1)) > 0
    assert not list(tmp_path.iterdir())  # the file is deleted
