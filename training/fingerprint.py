"""What a run trained on, in a few plain values: :func:`fingerprint`, recorded in checkpoints and compared on resume.

A fingerprint names where the data came from (a file, a generator and its seed), and for each array its shape,
dtype, mean and standard deviation, and one BLAKE2b digest of every array's bytes. Two fingerprints are the same
data when their shapes, dtypes and digest agree (:func:`data_problem`); where the data came from is said, not
compared, so a data set moved to another path still resumes. Everything is read in chunks: the memory it takes
is a chunk's, whatever the data's size.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

#: bytes hashed (and summed) at a time
CHUNK_BYTES = 1 << 24
#: the keys a fingerprint compares (besides each array's own ``NAME_shape`` and ``NAME_dtype``)
DIGEST = "digest"


def fingerprint(source: str, **arrays: Tensor) -> dict[str, Any]:
    """The fingerprint of ``arrays`` (by name: ``inputs=x, outputs=y``) read from ``source`` (``"train.npz"``,
    ``"generated: seed 0"``): plain values a checkpoint holds."""
    digest = hashlib.blake2b(digest_size=16)
    out: dict[str, Any] = {"source": str(source)[:300]}
    for name, t in arrays.items():
        t = t.detach()
        flat = t.reshape(-1)
        total = squares = 0.0
        per = CHUNK_BYTES // 8  # values a chunk holds as float64
        for i in range(0, flat.numel(), per):
            chunk = flat[i : i + per].cpu().contiguous()
            digest.update(chunk.view(torch.uint8).numpy().data)
            if not chunk.is_complex():
                values = chunk.double()
                total += float(values.sum())
                squares += float(values.pow(2).sum())
        n = max(1, flat.numel())
        mean = total / n
        out[f"{name}_shape"] = "x".join(map(str, t.shape))
        out[f"{name}_dtype"] = str(t.dtype).removeprefix("torch.")
        out[f"{name}_mean"] = _finite(mean)
        out[f"{name}_sd"] = _finite(math.sqrt(max(0.0, squares / n - mean * mean)))
        digest.update(f"|{name}:{out[f'{name}_shape']}:{out[f'{name}_dtype']}|".encode())
    out[DIGEST] = digest.hexdigest()
    return out


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


def data_problem(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why the data fingerprinted ``current`` are not those ``recorded`` (``None``: the same), in words naming both."""
    keys = [k for k in {**recorded, **current} if k == DIGEST or k.endswith(("_shape", "_dtype"))]
    if all(recorded.get(k) == current.get(k) for k in keys):
        return None
    return f"it was trained on {describe(recorded)}, not on {describe(current)}"


def describe(print_: Mapping[str, Any]) -> str:
    """A fingerprint in words: ``train.npz (inputs 100x64 float32, mean 0.1, sd 1; outputs ...)``."""
    names = [k.removesuffix("_shape") for k in print_ if k.endswith("_shape")]
    parts = []
    for name in names:
        mean, sd = print_.get(f"{name}_mean"), print_.get(f"{name}_sd")
        stats = f", mean {mean:.4g}, sd {sd:.4g}" if isinstance(mean, float) and isinstance(sd, float) else ""
        parts.append(f"{name} {print_.get(f'{name}_shape')} {print_.get(f'{name}_dtype')}{stats}")
    return f"{print_.get('source', 'data')} ({'; '.join(parts)})"
