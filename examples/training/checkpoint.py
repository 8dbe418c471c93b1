"""Checkpoints that cannot run code: tensors and plain data, written atomically, loaded with ``weights_only``.

``torch.load(weights_only=True)`` unpickles only tensors, containers and plain scalars; anything
else -- a pickled object whose ``__reduce__`` would run a command -- is refused before it is built.
Writes go to a temporary file unique to the writing process, then :func:`os.replace` moves it into
place, so a reader never sees half a file and two writers never share a temporary.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import torch

from .errors import UserError


class CheckpointError(UserError):
    """A checkpoint file that cannot be used (hostile, truncated, empty, foreign); the message names it."""


def save_checkpoint(path: Path, blob: Mapping[str, Any]) -> None:
    """Write ``blob`` to ``path`` atomically (a process-unique temporary file, then ``os.replace``)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(dict(blob), tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_checkpoint(path: Path, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """Read a checkpoint safely; raise :class:`CheckpointError` naming ``path`` if it is unusable."""
    fix = "delete it, or pass another --out"
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = _first_line(e)
        raise CheckpointError(
            f"{path}: refused to load: it holds objects other than tensors and plain data ({first[:160]}); "
            f"checkpoints of this project never do, so it was not written by it: {fix}"
        ) from None
    except (EOFError, RuntimeError, zipfile.BadZipFile, OSError, ValueError, IndexError, KeyError) as e:
        what = "empty" if path.exists() and path.stat().st_size == 0 else "truncated or not a checkpoint"
        raise CheckpointError(f"{path}: cannot read it ({what}: {_first_line(e)[:120]}); {fix}") from None
    if not isinstance(blob, dict):
        raise CheckpointError(f"{path}: holds a {type(blob).__name__}, not a checkpoint (a dict); {fix}")
    missing = [k for k in required if k not in blob]
    if missing:
        raise CheckpointError(f"{path}: not a checkpoint of this job (no {', '.join(missing)}); {fix}")
    return blob


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> Any: ...


def training_state(
    model: Stateful, optimiser: Stateful, schedule: Stateful, sampler: torch.Generator
) -> dict[str, Any]:
    """The usual parts of a run's state (model, optimiser, schedule, sampler) as tensors and plain data."""
    return {
        "model": model.state_dict(),
        "optimiser": optimiser.state_dict(),
        "schedule": schedule.state_dict(),
        "sampler": sampler.get_state(),
    }


def restore_training_state(
    state: dict[str, Any], model: Stateful, optimiser: Stateful, schedule: Stateful, sampler: torch.Generator
) -> None:
    """Load :func:`training_state` back into the parts."""
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    schedule.load_state_dict(state["schedule"])
    sampler.set_state(state["sampler"])
