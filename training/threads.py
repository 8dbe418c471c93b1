"""How many intra-op CPU threads a run uses by default: one for a small model.

Measured on the project's 2-core machine (the Poisson Funcformer, 144k parameters, 1000 steps): idle,
torch's default 2 threads take 30 s and 1 thread 37 s; with other work on the machine (load 2–3), 2
threads take 74–177 s and 1 thread 21–23 s. A small model's kernels are too short to share between
threads: when a core is busy elsewhere, every step waits for the slowest thread. A large model's
kernels are long enough to split, so it gets the machine's cores (at most :data:`MOST`).
``--threads N`` always wins.
"""

from __future__ import annotations

import os

import torch

#: parameters below which a model defaults to one thread (every model the examples train is below it)
SMALL = 1_000_000
#: the most threads chosen by default (beyond this, a CPU step rarely gets faster)
MOST = 8


def default_threads(parameters: int, cores: int | None = None) -> int:
    """The default intra-op thread count for a model of ``parameters`` on ``cores`` CPU cores (default: all)."""
    if parameters < 0:
        raise ValueError(f"default_threads: parameters must be >= 0, got {parameters}")
    available = cores if cores is not None else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    if parameters < SMALL or available <= 1:
        return 1
    return min(available, MOST)


def use_threads(requested: int | None, parameters: int) -> str:
    """Set torch's intra-op threads (``requested``, else :func:`default_threads`); say what was chosen, and why."""
    n = requested if requested is not None else default_threads(parameters)
    torch.set_num_threads(n)
    plural = "s" if n > 1 else ""
    if requested is not None:
        return f"{n} thread{plural} (--threads)"
    size = "small" if parameters < SMALL else "large"
    return f"{n} thread{plural} ({size} model, {parameters:,} parameters; --threads N to change)"
