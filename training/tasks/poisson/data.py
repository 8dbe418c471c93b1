"""The Poisson task's data: the splits of :mod:`operators.poisson.sources`, cached on disk when asked.

The numerics (sources, exact solutions, norms) live in :mod:`operators.poisson`; this module adds the cache a
program's ``--cache`` names: the tensors saved with :func:`training.checkpoint.save_checkpoint` and read back
like a checkpoint (tensors only, a planted file runs nothing), checked against the arguments.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from operators.poisson.sources import DEGREE, SOURCES, PoissonData, Splits
from operators.poisson.sources import splits as draw_splits
from training import CheckpointError, UserError
from training.checkpoint import read, save_checkpoint


def splits(
    n_train: int, n_test: int, seed: int = 0, n: int = 16, cache: Path | None = None, sources: str = "decaying"
) -> Splits:
    """:func:`operators.poisson.sources.splits`; with ``cache``, saved there (``torch.save``) and reloaded when the
    arguments match."""
    if sources not in SOURCES:
        raise ValueError(f"splits: sources must be 'decaying' or 'mixed', got {sources!r}")
    tag = "" if sources == "decaying" else f"_{sources}"
    key = f"poisson_n{n}_tr{n_train}_te{n_test}_s{seed}{tag}.pt"
    path = None if cache is None else cache / key
    if path is not None and path.exists():
        return read_cache(path, {"train": n_train, "test": n_test, "ood": n_test}, n)
    out = draw_splits(n_train, n_test, seed, n, sources)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(
                f"--cache {path.parent}: cannot create it ({e.strerror}); pass a writable directory"
            ) from None
        blob = {k: (getattr(out, k).f, getattr(out, k).g) for k in ("train", "test", "ood")}
        # a temporary file per process, then an atomic rename: two runs filling one new cache never collide
        save_checkpoint(path, blob, f"the data were not cached in {path}", "free some space or pass another --cache")
    return out


def read_cache(path: Path, counts: dict[str, int], n: int) -> Splits:
    """The splits cached in ``path``, checked (split names, tensor shapes and dtypes, finite values).

    Read like a checkpoint (:func:`training.checkpoint.read`: tensors only, a planted file runs
    nothing); anything else is a :class:`~training.CheckpointError` naming the file.
    """
    fix = "delete it (it is regenerated), or pass another --cache"
    blob = read(path, "data cache", fix)
    if not isinstance(blob, dict) or set(blob) != set(counts):
        got = sorted(map(str, blob)) if isinstance(blob, dict) else type(blob).__name__
        raise CheckpointError(f"{path}: expected the splits {', '.join(counts)}, found {got}; {fix}")
    parts = []
    for name, count in counts.items():
        want = {"f": (count, n, n), "g": (count, DEGREE + 1, DEGREE + 1)}
        pair = blob[name]
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise CheckpointError(f"{path}: split {name} is not a pair of tensors (sources, solutions); {fix}")
        for (what, shape), t in zip(want.items(), pair, strict=True):
            if not isinstance(t, Tensor) or tuple(t.shape) != shape or t.dtype != torch.float64:
                found = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
                raise CheckpointError(
                    f"{path}: split {name}.{what} is {found}, expected {shape} torch.float64 "
                    f"(for these arguments); {fix}"
                )
        parts.append(PoissonData(*pair))
    return Splits(*parts)
