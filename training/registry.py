"""What a run directory holds, and the one route from it to a ready model: :func:`load`.

Every checkpoint a task's training writes records, beside its tensors, a small plain ``meta`` dict::

    {"task": "poisson", "model": "training.tasks.poisson.model.PoissonModel", "version": 1}

``task`` names a :class:`TaskSpec` in the registry the library owns (``poisson``, ``darcy``, ``lm``,
``tree_listops``; :func:`register` adds a user's), ``model`` the class it builds, and ``version`` the
task's model layout: bumped when a change to the model or its config would misread older weights.

One rule for every reader (:func:`check_meta`): resuming a run (:func:`training.check_resume`, :func:`training.fit`) and
:func:`load` read the same ``meta`` the same way -- a checkpoint without it, with a key missing, of another task,
another model class or another version is refused by both, in one line with the same words. :func:`load` then checks,
from the checkpoint's config alone, each field's bounds (the task's ``config``) and the model's size against a memory
:class:`~training.budget.Budget` (its parameters counted on torch's meta device, with the task's estimate of a sample's
activations), and only then builds the model, loads the weights (checked against its shapes) and returns it in eval
mode. A hostile file can hold the loader neither for long nor for much memory: the order is bounds, budget, allocation.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, is_dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from torch import nn

from .budget import DTYPE_BYTES, Budget, BudgetError, Estimate, check
from .checkpoint import CheckpointError, load_checkpoint, load_device, load_model, meta_problem, require, run_path
from .config import ConfigError, describe
from .errors import UserError

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
        config: the config from a checkpoint's recorded fields, validated field by field (a
            :class:`~training.ConfigError` past a bound); called before anything is built. ``None``: the
            fields are checked only by :attr:`build`.
        activations: what the meta device cannot tell: the values one training sample keeps for the backward pass
            (an estimate, :func:`~training.budget.layer_activations`), from the fields and the checkpoint's task
            state (``blob["task"]``: a vocabulary, say); times the config's ``batch``. ``None``: none counted.
        data: the bytes of the data set a training run holds in memory, from the fields. ``None``: none counted.

    The parameters are always counted on torch's meta device (:func:`~training.budget.meta_parameters`: the model
    built from the fields, shapes only), after :attr:`config` has bounded every field.
    """

    name: str
    version: int
    model: type[M]
    build: Callable[[dict[str, Any]], M]
    program: str
    what: str
    config: Callable[[Mapping[str, Any]], object] | None = None
    activations: Callable[[Mapping[str, Any], Mapping[str, Any]], int] | None = None
    data: Callable[[Mapping[str, Any]], int] | None = None

    def meta(self) -> dict[str, Any]:
        """The plain metadata a checkpoint of this task records."""
        return {
            "task": self.name,
            "model": f"{self.model.__module__}.{self.model.__qualname__}",
            "version": self.version,
        }

    def reference(self) -> dict[str, Any]:
        """The config's default fields (what a budget refusal compares each field with), or ``{}``."""
        if self.config is None:
            return {}
        try:
            default = self.config({})
        except (UserError, TypeError, ValueError):
            return {}
        return describe(default) if is_dataclass(default) else {}

    def admit(
        self,
        fields: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        budget: Budget | None = None,
        *,
        where: str = "",
        training: bool = False,
        fix: str = "raise the budget (--memory GIB)",
        error: type[UserError] | None = None,
    ) -> Estimate | None:
        """Check ``fields`` (a config as plain data) before anything is built: each field's bounds, then the model's
        size against ``budget`` (:func:`training.budget.check`; ``training``: the memory to train it).

        ``state`` is what the model reads besides the config (a checkpoint's ``task`` state: a vocabulary). Returns
        the estimate (``None`` when the model cannot be built on the meta device).
        """
        if self.config is not None:
            try:
                config = self.config(fields)
            except (UserError, TypeError, ValueError) as e:
                raise (error or ConfigError)(f"{where + ': ' if where else ''}{_first(e)}") from None
            if is_dataclass(config):  # every field, defaults included, beside the extra ones recorded
                fields = {**fields, **describe(config)}
        extra = state if state is not None else {}
        known: dict[str, Estimate] = {}

        def cost(f: Mapping[str, Any]) -> Estimate:  # each distinct config built once on the meta device
            key = json.dumps(f, sort_keys=True, default=repr)
            if key not in known:
                known[key] = self.estimate(f, extra)
            return known[key]

        try:
            cost(fields)  # what the estimate reads of the state (a vocabulary) may be damaged: say so, in one line
        except _Uncountable:
            return None
        except (TypeError, ValueError, KeyError, ArithmeticError) as e:
            raise (error or UserError)(f"{where + ': ' if where else ''}not {self.what} ({_first(e)})") from None
        return check(
            cost,
            fields,
            budget,
            where=where,
            what=self.what,
            reference=self.reference(),
            training=training,
            fix=fix,
            error=error or BudgetError,
        )

    def estimate(self, fields: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> Estimate:
        """What the model of ``fields`` (a config as plain data, bounds checked) costs: its parameters counted on the
        meta device, ``batch`` times a sample's :attr:`activations`, and the :attr:`data`, in the config's
        ``dtype`` (float32 if it names none).

        Raises:
            ValueError: the model cannot be built on the meta device from these fields (and this state).
        """
        extra = dict(state) if state is not None else {}
        count = _layered_count(lambda f: self.count(f, extra), fields)
        dtype = fields.get("dtype", "float32")
        per_sample = 0 if self.activations is None else self.activations(fields, extra)
        batch = fields.get("batch", 1)
        data = 0 if self.data is None else self.data(fields)
        return Estimate.of(count, dtype if dtype in DTYPE_BYTES else "float32", batch * per_sample, data)

    def count(self, fields: Mapping[str, Any], state: Mapping[str, Any]) -> int:
        """The parameters of the model of ``fields`` (and ``state``), built on the meta device (shapes only).

        Raises:
            ValueError: the fields contradict each other, or (a private subclass) the model's constructor reads
                values, so it cannot be built there.
        """
        try:
            with torch.device("meta"):  # shapes only: no storage, however large
                model = self.build({"config": dict(fields), "task": dict(state)})
        except UserError as e:  # fields that contradict each other (a budget's trial reset of one): not a model
            raise ValueError(_first(e)) from None
        except RuntimeError as e:  # a constructor that reads values (NotImplementedError on meta tensors too)
            raise _Uncountable(f"{self.what} cannot be built on the meta device ({_first(e)})") from None
        return sum(p.numel() for p in model.parameters())


#: a config field whose name ends so counts identical layers (``depth``, ``memory_depth``, ...)
LAYERS = "depth"
#: layer counts past which :func:`_layered_count` counts from three shallow builds instead of one deep one
SHALLOW = 3


def _layered_count(count: Callable[[Mapping[str, Any]], int], fields: Mapping[str, Any]) -> int:
    """``count(fields)``, from shallow builds where the model is a stack of identical layers.

    Building a model of hundreds of layers on the meta device takes seconds (each layer's modules are still
    constructed), and a budget refusal builds several. Each integer field named ``*depth`` above :data:`SHALLOW` is
    set to 1, 2 and 3 (the others at 1): where the count grows by the same ``s`` per layer in each, and the fields'
    layers add up (all at 2 counts the sum of their steps), the count is ``c(1, ...) + Σ s_f (depth_f - 1)`` --
    exact for a stack of identical layers. Anything else is counted by building ``fields`` as they are.
    """
    deep = [k for k, v in fields.items() if k.endswith(LAYERS) and type(v) is int and v > SHALLOW]
    if not deep:
        return count(fields)
    base = {**fields, **dict.fromkeys(deep, 1)}
    try:
        c0 = count(base)
        steps = {}
        for k in deep:
            c1, c2 = count({**base, k: 2}), count({**base, k: 3})
            if c2 - c1 != c1 - c0:
                return count(fields)
            steps[k] = c1 - c0
        if count({**base, **dict.fromkeys(deep, 2)}) != c0 + sum(steps.values()):
            return count(fields)
    except _Uncountable:
        raise
    except ValueError:  # a shallow model the config's other fields refuse: count the model as asked
        return count(fields)
    total: int = c0 + sum(s * (fields[k] - 1) for k, s in steps.items())
    return total


class _Uncountable(ValueError):
    """A model that cannot be built on the meta device (its constructor reads values)."""


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


def describe_meta(meta: Mapping[str, Any]) -> str:
    """A checkpoint's metadata in words: ``task 'poisson' (PoissonModel, version 1)``."""
    model = str(meta.get("model", "?")).rsplit(".", 1)[-1]
    return f"task {meta.get('task')!r} ({model}, version {meta.get('version')})"


def _program(task: object) -> str | None:
    """The program that trains ``task`` (a registered or built-in task's name), or ``None``."""
    if not isinstance(task, str) or task not in task_names():
        return None
    return spec_of(task).program


def check_meta(path: Path, blob: Mapping[str, Any], expected: Mapping[str, Any] | None, root: Path) -> dict[str, Any]:
    """The one rule of every reader: the checkpoint ``blob`` at ``path`` holds what ``expected`` says (a
    :meth:`TaskSpec.meta`; ``None``: what the registry says of the task it names). Returns its ``meta``.

    Resuming and :func:`load` both call it, so a checkpoint one refuses the other refuses, in the same words:
    no ``meta`` (or one without its task, model class and version: :func:`~.checkpoint.meta_problem`), a task
    the library does not know, another task, another model class, another version.
    """
    meta = blob.get("meta")
    program = _program(expected["task"]) if expected is not None else None
    retrain = f"python -m {program} --out {root}" if program is not None else "the program that trained it"
    if meta is None:
        raise CheckpointError(
            f"{path}: does not record what it holds (no meta: the task, its model class and version); it was not "
            f"written by this version of the library: retrain with {retrain}, or pass another --out"
        )
    problem = meta_problem(meta)
    if problem is not None:
        raise CheckpointError(f"{path}: {problem}; retrain with {retrain}, or pass another --out")
    if expected is None:
        if meta["task"] not in task_names():
            raise CheckpointError(
                f"{path}: holds {describe_meta(meta)}, a task this library does not know (known: "
                f"{', '.join(task_names())}); register it (training.register) or install the version that wrote it"
            )
        expected = spec_of(meta["task"]).meta()
        program = _program(meta["task"])
    if meta["task"] != expected["task"]:
        theirs = _program(meta["task"])
        belongs = f"it belongs to python -m {theirs}" if theirs is not None else "a task this library does not know"
        raise CheckpointError(
            f"{path}: holds {describe_meta(meta)}, not {describe_meta(expected)}; {belongs}: pass another --out, "
            f"or load it with training.load({str(root)!r})"
        )
    if meta["model"] != expected["model"] or meta["version"] != expected["version"]:
        raise CheckpointError(
            f"{path}: holds {describe_meta(meta)}, but this library reads {describe_meta(expected)}; retrain with "
            f"python -m {program} --out {root} (move this one away first), or install the version that wrote it"
        )
    return dict(meta)


def load(
    run_dir: str | os.PathLike[str],
    device: torch.device | str = "cpu",
    *,
    task: str | None = None,
    budget: Budget | None = None,
) -> nn.Module:
    """The trained model in ``run_dir`` (the ``--out`` of a training program), ready and in eval mode.

    Args:
        run_dir: a run directory (``runs/poisson``), or a job's directory holding one model's directory.
        device: where to put the model (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        task: the task the caller expects (``"poisson"``); a checkpoint of another task is refused.
        budget: the most memory the model may take (default :class:`~training.budget.Budget`: a laptop's);
            a checkpoint whose config gives a larger model, or a file larger than ``max_bytes``, is refused
            before anything is allocated. ``Budget.memory(64)`` for a machine of 64 GiB.

    Raises:
        CheckpointError: no checkpoint, a damaged one, one of another task, model class or version, a config
            field out of its bounds, a model past the budget (one line each, naming the file).
    """
    root = run_path(run_dir, "<program> (e.g. examples.poisson)")
    load_device(device)  # before the files: a wrong argument is named first
    if task is not None and not isinstance(task, str):
        raise CheckpointError(f"load: task must be a task's name (a str: {', '.join(task_names())}), got {task!r:.60}")
    if budget is not None and not isinstance(budget, Budget):
        raise UserError(f"load: budget must be a training.Budget (e.g. Budget.memory(16)), got {budget!r:.60}")
    budget = budget if budget is not None else Budget()
    expected = None if task is None else spec_of(task)
    path = checkpoint_in(root)
    program = expected.program if expected is not None else "examples.poisson (or another program)"
    if not path.exists():
        raise CheckpointError(
            f"{path}: no checkpoint there; check the path, or train one: python -m {program} --out {root}"
        )
    fix = "retrain, or pass another run directory"
    blob = load_checkpoint(path, fix=fix, max_bytes=budget.max_bytes)
    meta = check_meta(path, blob, None if expected is None else expected.meta(), root)
    require(path, blob, ("config", "task"), fix)
    spec = spec_of(meta["task"])
    estimate = spec.admit(
        blob["config"],
        blob["task"],
        budget,
        where=str(path),
        fix="raise the budget: training.load(..., budget=Budget.memory(GIB))",
        error=CheckpointError,
    )
    _check_stored(path, blob["task"].get("model"), estimate, fix)
    model: nn.Module = load_model(path, spec.build, device, spec.program, spec.what, blob=blob)
    return model


def _check_stored(path: Path, stored: object, estimate: Estimate | None, fix: str) -> None:
    """Before the model is built: the stored weights hold at least the parameters its config (and task state: a
    vocabulary) describe. A checkpoint whose config asks for far more than it stores -- a stored vocabulary of
    900,000 characters beside weights for 90 -- is refused from its shapes, not after a build of that size."""
    if estimate is None or not isinstance(stored, dict):
        return
    values = sum(t.numel() for t in stored.values() if isinstance(t, torch.Tensor) and t.is_floating_point())
    if values < estimate.parameters:
        raise CheckpointError(
            f"{path}: its weights hold {values:,} values, fewer than the {estimate.parameters:,} parameters its "
            f"config and task state describe: they were not written together; {fix}"
        )


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:200]
