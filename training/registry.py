"""What a run directory holds, and the one route from it to a ready model: :func:`load`.

Every checkpoint a task's training writes records, beside its tensors, a small plain ``meta`` dict::

    {"task": "poisson", "model": "training.tasks.poisson.model.PoissonModel", "version": 1}

``task`` names a :class:`TaskSpec` in the registry the library owns (``poisson``, ``darcy``, ``lm``,
``tree_listops``; :func:`register` adds a user's), ``model`` the class it builds, and ``version`` the
task's model layout: bumped when a change to the model or its config would misread older weights.
:func:`load` reads the checkpoint (``weights_only=True``: tensors and plain data only), looks the task
up, refuses a checkpoint of another task or of another version in one line naming both, and returns the
model built from the recorded config with the weights loaded, in eval mode.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from torch import nn

from .checkpoint import CheckpointError, load_checkpoint, load_device, load_model, run_path

CHECKPOINT = "checkpoint.pt"
M = TypeVar("M", bound=nn.Module)

#: the tasks the library ships, by name: the module holding each one's ``SPEC`` (imported when first needed)
BUILT_IN = {
    "poisson": "training.tasks.poisson.model",
    "darcy": "training.tasks.darcy.model",
    "lm": "training.tasks.lm.model",
    "tree_listops": "training.tasks.tree_listops.model",
    "operator": "training.tasks.operator.model",
}
_registered: dict[str, TaskSpec[Any]] = {}


@dataclass(frozen=True)
class TaskSpec(Generic[M]):
    """A trainable task as a checkpoint names it: how to build its model from a checkpoint.

    Attributes:
        name: the task's name, as recorded in checkpoints (``"poisson"``).
        version: the layout of its model and config; a checkpoint of another version is refused.
        model: the class :attr:`build` returns.
        build: the model (untrained) from a checkpoint's contents: ``blob["config"]`` and, where the
            model needs more (a vocabulary), ``blob["task"]``.
        program: the program that trains it (``"examples.poisson"``), named in errors.
        what: the model in words, for errors (``"a Poisson model"``).
    """

    name: str
    version: int
    model: type[M]
    build: Callable[[dict[str, Any]], M]
    program: str
    what: str

    def meta(self) -> dict[str, Any]:
        """The plain metadata a checkpoint of this task records."""
        return {
            "task": self.name,
            "model": f"{self.model.__module__}.{self.model.__qualname__}",
            "version": self.version,
        }


def register(spec: TaskSpec[Any]) -> None:
    """Make ``spec`` loadable by :func:`load` (a user's task; a built-in name cannot be taken)."""
    if spec.name in BUILT_IN:
        raise ValueError(f"register: task name {spec.name!r} is a built-in task; choose another name")
    _registered[spec.name] = spec


def task_names() -> list[str]:
    """The names :func:`load` knows."""
    return [*BUILT_IN, *_registered]


def spec_of(name: str) -> TaskSpec[Any]:
    """The registered :class:`TaskSpec` called ``name`` (a :class:`CheckpointError` listing the known ones)."""
    if name in _registered:
        return _registered[name]
    if name not in BUILT_IN:
        raise CheckpointError(f"load: no task called {name!r}; known tasks: {', '.join(task_names())}")
    spec = importlib.import_module(BUILT_IN[name]).SPEC
    assert isinstance(spec, TaskSpec) and spec.name == name
    return spec


def checkpoint_in(run_dir: Path) -> Path:
    """``run_dir/checkpoint.pt``, or the one ``run_dir/*/checkpoint.pt`` when a job trained one model there."""
    path = run_dir / CHECKPOINT
    if path.exists() or not run_dir.is_dir():
        return path
    found = sorted(p.parent.name for p in run_dir.glob(f"*/{CHECKPOINT}"))
    if len(found) == 1:
        return run_dir / found[0] / CHECKPOINT
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise CheckpointError(
            f"{run_dir}: holds several trained models ({shown}); load one of them, "
            f"e.g. load({str(run_dir / found[0])!r})"
        )
    return path


def describe_meta(meta: dict[str, Any]) -> str:
    """A checkpoint's metadata in words: ``task 'poisson' (PoissonModel, version 1)``."""
    model = str(meta.get("model", "?")).rsplit(".", 1)[-1]
    return f"task {meta.get('task')!r} ({model}, version {meta.get('version')})"


def load(run_dir: str | os.PathLike[str], device: torch.device | str = "cpu", *, task: str | None = None) -> nn.Module:
    """The trained model in ``run_dir`` (the ``--out`` of a training program), ready and in eval mode.

    Args:
        run_dir: a run directory (``runs/poisson``), or a job's directory holding one model's directory.
        device: where to put the model (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        task: the task the caller expects (``"poisson"``); a checkpoint of another task is refused.
            Needed only for checkpoints written before they recorded their task.

    Raises:
        CheckpointError: no checkpoint, a damaged one, one of another task or version (one line each).
    """
    root = run_path(run_dir, "<program> (e.g. examples.poisson)")
    load_device(device)  # before the files: a wrong argument is named first
    expected = None if task is None else spec_of(task)
    path = checkpoint_in(root)
    program = expected.program if expected is not None else "examples.poisson (or another program)"
    if not path.exists():
        raise CheckpointError(
            f"{path}: no checkpoint there; check the path, or train one: python -m {program} --out {root}"
        )
    blob = load_checkpoint(path, required=("config", "task"))
    meta = blob.get("meta")
    if meta is None:  # written before checkpoints said what they hold: the caller's word is all there is
        if expected is None:
            raise CheckpointError(
                f"{path}: does not record its task (an older checkpoint); name it: "
                f"load({str(root)!r}, task=...) with one of {', '.join(task_names())}"
            )
        spec = expected
    else:
        spec = spec_of(meta["task"]) if expected is None or meta["task"] != expected.name else expected
        if expected is not None and spec is not expected:
            raise CheckpointError(
                f"{path}: holds {describe_meta(meta)}, not {describe_meta(expected.meta())}; "
                f"load it with {spec.program}'s load, or training.load({str(root)!r})"
            )
        if meta["version"] != spec.version:
            raise CheckpointError(
                f"{path}: holds {describe_meta(meta)}, but this library reads {describe_meta(spec.meta())}; "
                f"retrain with python -m {spec.program} --out {root}, or install the version that wrote it"
            )
    model: nn.Module = load_model(path, spec.build, device, spec.program, spec.what, blob=blob)
    return model
