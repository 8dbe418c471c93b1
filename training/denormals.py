"""Subnormal floats on the CPU: flushed to zero for the length of a run.

A float32 below ``2^-126 ≈ 1.2e-38`` in magnitude is *subnormal* (denormal). Intel cores take much arithmetic on
subnormal inputs or results through a microcode assist (over 150 cycles, against a few for a normal
operation). Attention with a steep locality window makes them in bulk: a head that adds ``-β (t - s)²`` to its
scores gives probabilities ``e^-90`` and smaller a few tokens from its query, and every product with those
probabilities (``P V`` forward; ``Pᵀ dO`` and the score gradient ``P ⊙ (dP - Σ P dP)`` backward) runs on
subnormals. Measured on an Intel Xeon (this project's 2-core CPU, one thread, the Darcy ``grid`` preset
compiled, batch 16): the Funcformer's step took 109 ms, one score-gradient product of 25 MFLOP alone 18.7 ms
(1.3 GFLOP/s); flushed, the step takes 49 ms and that product 0.5 ms. The FNO beside it is unchanged
(83 and 85 ms), and so is the Poisson main job (no window). What a subnormal costs varies widely between
microarchitectures, the likely reason the same code's step time had differed twofold between hosts.

Flushing (``torch.set_flush_denormal``: FTZ and DAZ on x86, FZ on AArch64) rounds such values to zero,
changing only numbers below ``1.2e-38`` in magnitude (float64's subnormals, below ``2.2e-308``, likewise).
:func:`training.fit` flushes for its run and restores the previous mode after; a loop of one's own calls
:func:`flush_denormals`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def denormals_flushed() -> bool:
    """Whether the CPU now flushes float32 subnormals to zero (a probe: ``2e-38 · 0.25`` is subnormal)."""
    return float((torch.tensor([2e-38], dtype=torch.float32) * 0.25).item()) == 0.0


def flush_denormals(on: bool = True) -> Callable[[], None]:
    """Flush subnormal floats to zero on the CPU (``on``), or stop; returns a function restoring the previous mode.

    Where the CPU cannot (``torch.set_flush_denormal`` returns ``False``) nothing changes."""
    before = denormals_flushed()
    torch.set_flush_denormal(on)

    def restore() -> None:
        torch.set_flush_denormal(before)

    return restore
