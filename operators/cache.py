"""A directory of generated tensors, keyed by every parameter that made them.

:func:`cached` returns the tensors saved under a name derived from the parameters, or makes them, saves them
atomically (a process-unique temporary file, then :func:`os.replace`: a reader never sees half a file, two
writers never share a temporary) with :func:`torch.save`, and returns them. Files are read back with
``torch.load(weights_only=True)`` (tensors and plain data only: a planted file runs nothing) and checked:
the parameters stored inside must equal the ones asked for, and every tensor must have the expected shape,
dtype float64 and finite values. Anything else is one :class:`CacheError` naming the file and the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import torch
from torch import Tensor

Params = Mapping[str, int | float | str | bool | None]


class CacheError(ValueError):
    """A cache file or directory that cannot be used; the message names it and says what to do."""


def cache_path(directory: Path, stem: str, params: Params) -> Path:
    """The file for ``params`` in ``directory``: ``{stem}-{hash of the sorted parameters}.pt``."""
    digest = hashlib.sha256(json.dumps(dict(params), sort_keys=True).encode()).hexdigest()[:16]
    return directory / f"{stem}-{digest}.pt"


def cached(
    directory: Path | None,
    stem: str,
    params: Params,
    shapes: Mapping[str, tuple[int, ...]],
    make: Callable[[], dict[str, Tensor]],
) -> dict[str, Tensor]:
    """The tensors named in ``shapes`` for ``params``: read from ``directory`` if saved there, else made (and saved).

    ``make()`` returns CPU float64 tensors of the given ``shapes``. With ``directory`` ``None``, nothing is saved.
    """
    if directory is None:
        return make()
    path = cache_path(directory, stem, params)
    if path.exists():
        return _read(path, params, shapes)
    out = make()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheError(f"cache directory {directory}: cannot create it ({e.strerror}); pass a writable one") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save({"params": dict(params), "tensors": out}, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        raise CacheError(f"{path}: cannot write it ({e}); free some space or pass another cache directory") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _read(path: Path, params: Params, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Tensor]:
    fix = "delete it (it is regenerated), or pass another cache directory"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blob = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError, zipfile.BadZipFile, OSError, ValueError) as e:
        reason = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        raise CacheError(f"{path}: damaged data cache, cannot read it ({reason}); {fix}") from None
    if not isinstance(blob, dict) or set(blob) != {"params", "tensors"} or not isinstance(blob["tensors"], dict):
        raise CacheError(f"{path}: not a data cache of this library; {fix}")
    if blob["params"] != dict(params):
        raise CacheError(f"{path}: holds data for other parameters than its name says; {fix}")
    tensors: dict[str, Tensor] = blob["tensors"]
    for name, shape in shapes.items():
        t = tensors.get(name)
        if not isinstance(t, Tensor) or tuple(t.shape) != shape or t.dtype != torch.float64:
            found = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
            raise CacheError(f"{path}: {name} is {found}, expected {shape} torch.float64; {fix}")
        if not bool(torch.isfinite(t).all()):
            raise CacheError(f"{path}: {name} holds NaN or infinite values; {fix}")
    return {name: tensors[name] for name in shapes}
