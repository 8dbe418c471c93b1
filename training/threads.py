"""How many intra-op CPU threads a run uses by default: the free cores, at most two for a small model.

Measured on the project's 2-core machine (the Poisson Funcformer, 144k parameters, 1000 steps): idle,
torch's default 2 threads take 30 s and 1 thread 37 s; with other work on the machine (load 2–3), 2
threads take 74–177 s and 1 thread 21–23 s. A small model's kernels are short: a thread that waits for
a busy core stalls every step, and beyond two threads they rarely get faster. So a run takes the cores
the one-minute load average leaves free (at least one), at most two below :data:`SMALL` parameters and
at most :data:`MOST` above it. ``--threads N`` always wins.
"""

from __future__ import annotations

import os

import torch

#: parameters below which a model takes at most two threads (every model the examples train is below it)
SMALL = 1_000_000
#: the most threads chosen by default (beyond this, a CPU step rarely gets faster)
MOST = 8


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def default_threads(parameters: int, cores: int | None = None, load: float | None = None) -> int:
    """The default intra-op thread count for a model of ``parameters`` on ``cores`` CPU cores whose one-minute
    load average is ``load`` (defaults: this machine, now)."""
    if parameters < 0:
        raise ValueError(f"default_threads: parameters must be >= 0, got {parameters}")
    available = _cores() if cores is None else cores
    busy = _load() if load is None else load
    free = max(1, min(available, int(available - busy + 0.5)))
    return min(free, 2 if parameters < SMALL else MOST)


def use_threads(requested: int | None, parameters: int) -> str:
    """Set torch's intra-op threads (``requested``, else :func:`default_threads`); say what was chosen, and why."""
    if requested is not None:
        torch.set_num_threads(requested)
        return f"{requested} thread{'s' if requested > 1 else ''} (--threads)"
    cores, load = _cores(), _load()
    n = default_threads(parameters, cores, load)
    torch.set_num_threads(n)
    size = "small" if parameters < SMALL else "large"
    plural = "s" if n > 1 else ""
    why = f"{size} model, {parameters:,} parameters; {cores} cores, load {load:.1f}"
    return f"{n} thread{plural} ({why}; --threads N to change)"
