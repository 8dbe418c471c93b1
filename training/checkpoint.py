"""Checkpoints that cannot run code: tensors and plain data, written atomically, read and checked in one place.

``torch.load(weights_only=True)`` unpickles only tensors, containers and plain scalars; anything
else -- a pickled object whose ``__reduce__`` would run a command -- is refused before it is built.
Writes go to a temporary file unique to the writing process, then :func:`os.replace` moves it into
place, so a reader never sees half a file and two writers never share a temporary; a write that fails
(a full disk) leaves the previous file whole and says so.

Everything the project reads back -- checkpoints, the Poisson data cache -- goes through :func:`read`,
and a run's checkpoint through :func:`load_checkpoint`, which also checks its structure (the config a
dict of plain values, ``step`` an integer within the run's ``steps``, the format version written),
that every floating-point tensor is finite, and (:func:`check_like`, :func:`restore_training_state`,
:func:`load_model`) that the tensors have the shapes and dtypes of the model they are loaded into.
Every failure is one :class:`CheckpointError` that names the file, what is wrong and what to do.
"""

from __future__ import annotations

import math
import os
import pickle
import random
import re
import stat
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
from torch import Tensor, nn

from .distributed import device_of
from .errors import UserError

#: the version of the checkpoint layout :func:`training.fit` writes (``blob["format"]``)
FORMAT = 1
FIX = "delete it, or pass another --out"
M = TypeVar("M", bound=nn.Module)


class CheckpointError(UserError):
    """A checkpoint file that cannot be used (hostile, truncated, empty, foreign, damaged); the message names it."""


class StateError(ValueError):
    """A state (dict) that does not fit what it is loaded into; the reader adds the file's name."""


def save_checkpoint(
    path: Path, blob: Mapping[str, Any], kept: str | None = None, fix: str = "free some space or pass another --out"
) -> None:
    """Write ``blob`` to ``path`` atomically (a process-unique temporary file, then ``os.replace``).

    A failed write (a full disk, a directory gone read-only) is a :class:`CheckpointError` saying what
    is kept instead (``kept``, e.g. "the checkpoint of step 200 in ..."; by default: the file as it was).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(dict(blob), tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        if kept is None:
            kept = f"{path} is kept as it was" if path.exists() else f"nothing was written to {path}"
        raise CheckpointError(f"cannot write {path} ({_reason(e)}); {kept}; {fix}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    text = _first_line(e)
    if "file write failed" in text or "basic_ios" in text or "No space" in text:
        return "the write failed: is the disk full?"
    return text[:160]


def read(path: Path, what: str = "checkpoint", fix: str = FIX) -> Any:
    """The tensors and plain data in ``path`` (``weights_only``), or a :class:`CheckpointError` naming it.

    Refuses a file holding anything else (a planted object), an unreadable, empty or truncated file, and
    any floating-point tensor in it that is not finite.
    """
    check_regular(path, what, fix)
    try:
        with warnings.catch_warnings():  # torch's advice on pickle protocols is not the user's business
            warnings.simplefilter("ignore")
            blob = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL (\S+)", str(e))
        if found is None:  # not a refused object: bytes that are no checkpoint at all
            raise CheckpointError(f"{path}: cannot read it (not a {what}); {fix}") from None
        raise CheckpointError(
            f"{path}: refused to load: it holds an object of {found.group(1)[:80]}, not only tensors and plain "
            f"data; a {what} of this project never does, so it was not written by it: {fix}"
        ) from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a directory, not a {what}; {fix}") from None
    except (EOFError, RuntimeError, zipfile.BadZipFile, OSError, ValueError, IndexError, KeyError, TypeError) as e:
        what_is = "empty" if path.exists() and path.stat().st_size == 0 else f"truncated or not a {what}"
        raise CheckpointError(f"{path}: cannot read it ({what_is}: {_first_line(e)[:120]}); {fix}") from None
    bad = non_finite(blob, "")
    if bad is not None:
        raise CheckpointError(f"{path}: {bad} holds NaN or infinite values: the {what} is damaged; {fix}")
    return blob


def check_regular(path: Path, what: str = "checkpoint", fix: str = FIX) -> None:
    """Refuse, before opening it, a ``path`` that is not a regular file (a FIFO would block the reader for ever, a
    device such as ``/dev/zero`` never ends, a directory is no file); a missing one is left to the reader."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read it ({e.strerror}); {fix}") from None
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"{path}: is {_kind_of(mode)}, not a {what} file; {fix}")


def _kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def non_finite(obj: Any, where: str = "") -> str | None:
    """The first place in ``obj`` (a nest of dicts, lists and tensors) with a non-finite float, if any."""
    if isinstance(obj, Tensor):
        if (obj.is_floating_point() or obj.is_complex()) and not bool(torch.isfinite(obj).all()):
            return where or "the tensor"
        return None
    if isinstance(obj, float):
        return None if math.isfinite(obj) else where or "the value"
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list | tuple) else ()
    for k, v in items:
        found = non_finite(v, f"{where}.{k}" if where else str(k))
        if found is not None:
            return found
    return None


def load_checkpoint(
    path: Path, required: tuple[str, ...] = (), fix: str = FIX, max_bytes: int | None = None
) -> dict[str, Any]:
    """Read a run's checkpoint and check its structure; raise :class:`CheckpointError` naming ``path`` if unusable.

    A file larger than ``max_bytes`` (a budget: :class:`~training.budget.Budget`'s ``max_bytes``) is refused before
    it is read. Checked, where present: ``format`` (the version written), ``config`` (a dict of plain values and
    small records of them, :func:`record_problem`), ``step`` (an integer in ``0..config["steps"]``), ``task`` (a
    dict), ``history`` (a list of records), ``elapsed`` (finite seconds); that every floating-point tensor is
    finite (:func:`read`); then the ``required`` keys (:func:`require`). The ``meta`` is the readers' one rule,
    :func:`~.registry.check_meta`.
    """
    if max_bytes is not None:
        check_file_size(path, max_bytes, fix)
    blob = read(path, "checkpoint", fix)
    if not isinstance(blob, dict):
        raise CheckpointError(f"{path}: holds a {type(blob).__name__}, not a checkpoint (a dict); {fix}")
    problem = _structure_problem(blob)
    if problem is not None:
        raise CheckpointError(f"{path}: {problem}; {fix}")
    require(path, blob, required, fix)
    return blob


def require(path: Path, blob: dict[str, Any], keys: tuple[str, ...], fix: str = FIX) -> None:
    """A :class:`CheckpointError` naming the ``keys`` the checkpoint ``blob`` lacks (never a ``KeyError`` later)."""
    missing = [k for k in keys if k not in blob]
    if missing:
        raise CheckpointError(f"{path}: not a checkpoint of this job (no {', '.join(missing)}); {fix}")


def check_file_size(path: Path, max_bytes: int, fix: str = FIX) -> None:
    """Refuse a file past ``max_bytes`` before reading it (it would all be read into memory)."""
    try:
        length = path.stat().st_size
    except OSError:
        return  # the reader says what is wrong with a file it cannot open
    if length > max_bytes:
        raise CheckpointError(
            f"{path}: holds {length / 2**30:.3g} GiB, past the memory budget of {max_bytes / 2**30:.3g} GiB; "
            f"{fix}, or raise the budget (budget=Budget.memory(GIB), --memory GIB)"
        )


_PLAIN = (int, float, str, bool, type(None))
#: the most a record in a checkpoint's config may hold: nesting, entries in all, characters in a string
RECORD_DEPTH, RECORD_ITEMS, RECORD_CHARS = 4, 4096, 4096


def record_problem(value: object) -> str | None:
    """What keeps ``value`` from being a record a checkpoint's config may hold, or ``None``: a plain value (number,
    string, bool, ``None``), or lists and dicts (keys strings) of them nested at most ``RECORD_DEPTH`` deep,
    ``RECORD_ITEMS`` entries in all, strings at most ``RECORD_CHARS`` long."""
    count = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > RECORD_ITEMS:
            return f"holds more than {RECORD_ITEMS} entries, expected a small record"
        if isinstance(v, str) and len(v) > RECORD_CHARS:
            return f"holds a string of {len(v)} characters, expected at most {RECORD_CHARS}"
        if isinstance(v, _PLAIN):
            continue
        if not isinstance(v, list | dict):
            return f"holds a {type(v).__name__}, expected plain values (numbers, strings, bools) or records of them"
        if depth >= RECORD_DEPTH:
            return f"nests deeper than {RECORD_DEPTH} levels, expected a small record"
        if isinstance(v, dict) and not all(isinstance(k, str) for k in v):
            return "holds a record whose keys are not all strings"
        stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return None


def _structure_problem(blob: dict[str, Any]) -> str | None:
    if "format" in blob and (type(blob["format"]) is not int or blob["format"] != FORMAT):
        return f"written in checkpoint format {blob['format']!r}, this version reads format {FORMAT}"
    if "job" in blob and not isinstance(blob["job"], str):
        return f"its job is a {type(blob['job']).__name__}, expected the name of the job (a str)"
    config = blob.get("config", {})
    if not isinstance(config, dict):
        return f"its config is a {type(config).__name__}, expected a dict of field values"
    for k, v in config.items():
        if not isinstance(k, str):
            return f"config field {k!r} is a {type(k).__name__}, expected a field's name (a str)"
        problem = record_problem(v)
        if problem is not None:
            return f"config field {k!r} {problem}"
    if "task" in blob and not isinstance(blob["task"], dict):
        return f"its task state is a {type(blob['task']).__name__}, expected a dict (model, optimiser, ...)"
    if "step" in blob:
        step, steps = blob["step"], config.get("steps")
        if type(step) is not int or step < 0:
            return f"its step is {step!r} ({type(step).__name__}), expected a non-negative integer"
        if type(steps) is int and step > steps:
            return f"its step {step} is beyond the {steps} steps of the run it records"
    if "elapsed" in blob:
        t = blob["elapsed"]
        if type(t) not in (int, float) or not 0 <= t < math.inf:
            return f"its elapsed time is {t!r}, expected seconds >= 0"
    data = blob.get("data", {})
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, _PLAIN) for k, v in data.items()):
        return "its data record is not a dict of plain values (the training data's fingerprint)"
    if "clock" in blob:
        problem = _clock_problem(blob["clock"])
        if problem is not None:
            return f"its clock {problem}"
    history = blob.get("history", [])
    if not isinstance(history, list) or not all(
        isinstance(r, dict) and all(isinstance(k, str) and type(v) in (int, float) for k, v in r.items())
        for r in history
    ):
        return "its history is not a list of records (dicts of numbers)"
    return None


def _clock_problem(clock: object) -> str | None:
    """What keeps ``clock`` from being a :meth:`~.deadline.Clock.state_dict`, or ``None``."""
    if not isinstance(clock, dict) or set(clock) != {"seconds", "spent", "steps", "ends"}:
        return f"is {clock!r:.80}, expected the budget, the seconds spent, the last steps' and the end's durations"

    def seconds(x: object) -> bool:
        return type(x) in (int, float) and 0 <= x < math.inf  # type: ignore[operator]

    durations = clock["steps"]
    if not (isinstance(durations, list) and all(seconds(d) for d in durations)):
        return f"has steps {durations!r:.80}, expected a list of durations (seconds >= 0)"
    ends = clock["ends"]
    if not (isinstance(ends, dict) and all(isinstance(k, str) and seconds(v) for k, v in ends.items())):
        return f"has ends {ends!r:.80}, expected the durations (seconds >= 0) of the work done at the end, by name"
    numbers = (clock["seconds"], clock["spent"])
    if not all(seconds(x) for x in numbers) or not clock["seconds"] > 0:
        return f"has budget and spent {numbers!r:.80}, expected seconds >= 0 (a budget > 0)"
    return None


#: what a checkpoint's ``meta`` holds: each key, its type, and what it says
META = {"task": (str, "the task's name"), "model": (str, "its model class"), "version": (int, "its version")}


def meta_problem(meta: object) -> str | None:
    """What is wrong with a checkpoint's ``meta`` (a dict of :data:`META`: all three keys, their types), or ``None``."""
    if not isinstance(meta, dict):
        return f"its meta is {meta!r:.80}, expected a dict of the task's name, its model class and version"
    missing = [k for k in META if k not in meta]
    if missing:
        said = ", ".join(f"{k} ({META[k][1]})" for k in missing)
        return f"its meta {meta!r:.80} has no {said}: it does not say what it holds"
    for k, (kind, what) in META.items():
        if type(meta[k]) is not kind:
            return f"its meta's {k} is {meta[k]!r:.40}, expected {what} (a {kind.__name__})"
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ---- the state loaded must fit what it is loaded into ------------------------------------------


def check_like(template: Any, state: Any, where: str = "state") -> None:
    """Raise :class:`StateError` unless ``state`` has ``template``'s structure (keys, types, tensor shapes, dtypes).

    ``template`` is the state of a freshly built object (``model.state_dict()``); an empty dict in it
    (an optimiser before its first step) accepts any dict, ``None`` any value; a string (a name) only itself.
    """
    if template is None:
        return
    if isinstance(template, Tensor):
        if not isinstance(state, Tensor):
            raise StateError(f"{where} is a {type(state).__name__}, expected a tensor of shape {tuple(template.shape)}")
        if state.shape != template.shape or state.dtype != template.dtype:
            raise StateError(
                f"{where} has shape {tuple(state.shape)} ({state.dtype}), expected {tuple(template.shape)} "
                f"({template.dtype})"
            )
        return
    if isinstance(template, dict):
        if not isinstance(state, dict):
            raise StateError(f"{where} is a {type(state).__name__}, expected a dict")
        if not template:
            return
        missing = [k for k in template if k not in state]
        extra = [k for k in state if k not in template]
        if missing or extra:
            says = [f"no {_keys(missing)}"] if missing else []
            says += [f"unexpected {_keys(extra)}"] if extra else []
            raise StateError(f"{where} does not match the model: {'; '.join(says)}")
        for k, v in template.items():
            check_like(v, state[k], f"{where}.{k}")
        return
    if isinstance(template, list | tuple):
        if not isinstance(state, list | tuple) or len(state) != len(template):
            n = len(state) if isinstance(state, list | tuple) else type(state).__name__
            raise StateError(f"{where} is {n!r} entries, expected a list of {len(template)}")
        for i, (t, s) in enumerate(zip(template, state, strict=True)):
            check_like(t, s, f"{where}.{i}")
        return
    if isinstance(template, str):  # names (a schedule's phases, its annealing): the same names or nothing
        if state != template:
            raise StateError(f"{where} is {state!r:.40}, expected {template!r}")
        return
    kinds: tuple[type, ...] = (int, float) if type(template) is float else (type(template),)
    if type(state) not in kinds:
        raise StateError(f"{where} is {state!r:.40} ({type(state).__name__}), expected {_a(type(template).__name__)}")


def _keys(keys: list[Any]) -> str:
    shown = ", ".join(map(str, keys[:4])) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
    return f"key{'s' if len(keys) > 1 else ''} {shown}"


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> Any: ...


#: what draws a run's batches: torch's generator, Python's (``random.Random``) or numpy's -- each one's state
#: is tensors and plain data, restored bit-identically on resume
Sampler = torch.Generator | random.Random | np.random.Generator


def sampler_state(sampler: Sampler) -> Any:
    """The state of a run's :data:`Sampler`, as tensors and plain data."""
    if isinstance(sampler, torch.Generator):
        return sampler.get_state()
    if isinstance(sampler, random.Random):
        return sampler.getstate()
    return sampler.bit_generator.state


def set_sampler_state(sampler: Sampler, state: Any) -> None:
    """Restore :func:`sampler_state` (checked against the sampler's own first: :func:`check_like`)."""
    if isinstance(sampler, torch.Generator):
        sampler.set_state(state)
    elif isinstance(sampler, random.Random):
        sampler.setstate((state[0], tuple(state[1]), state[2]))
    else:
        sampler.bit_generator.state = state


def training_state(model: Stateful, optimiser: Stateful, schedule: Stateful, sampler: Sampler) -> dict[str, Any]:
    """The usual parts of a run's state (model, optimiser, schedule, sampler) as tensors and plain data."""
    return {
        "model": model.state_dict(),
        "optimiser": optimiser.state_dict(),
        "schedule": schedule.state_dict(),
        "sampler": sampler_state(sampler),
    }


def restore_training_state(
    state: dict[str, Any],
    model: nn.Module,
    optimiser: torch.optim.Optimizer,
    schedule: Stateful,
    sampler: Sampler,
) -> None:
    """Load :func:`training_state` back into the parts, after checking that each part fits (:class:`StateError`)."""
    missing = [k for k in ("model", "optimiser", "schedule", "sampler") if k not in state]
    if missing:
        raise StateError(f"task state has no {_keys(missing)}")
    check_like(model.state_dict(), state["model"], "task.model")
    _check_optimiser(optimiser, state["optimiser"])
    check_like(schedule.state_dict(), state["schedule"], "task.schedule")
    check_like(sampler_state(sampler), state["sampler"], "task.sampler")
    model.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimiser"])
    schedule.load_state_dict(state["schedule"])
    set_sampler_state(sampler, state["sampler"])


def _check_optimiser(optimiser: torch.optim.Optimizer, state: Any) -> None:
    """The optimiser's groups (options and parameter lists) and per-parameter state (moments shaped like them)."""
    where, template = "task.optimiser", optimiser.state_dict()
    if not (
        isinstance(state, dict) and isinstance(state.get("state"), dict) and isinstance(state.get("param_groups"), list)
    ):
        raise StateError(f"{where} is not an optimiser's state (a dict with state and param_groups)")
    check_like(template["param_groups"], state["param_groups"], f"{where}.param_groups")
    params = {
        i: p
        for g, pg in zip(template["param_groups"], optimiser.param_groups, strict=True)
        for i, p in zip(g["params"], pg["params"], strict=True)
    }
    for key, entry in state["state"].items():
        at = f"{where}.state.{key}"
        if key not in params or not isinstance(entry, dict):
            raise StateError(f"{at}: not the state of one of the model's {len(params)} parameters")
        for name, value in entry.items():
            if isinstance(value, Tensor) and value.ndim > 0 and value.shape != params[key].shape:
                raise StateError(
                    f"{at}.{name} has shape {tuple(value.shape)}, expected its parameter's {tuple(params[key].shape)}"
                )
            if not isinstance(value, Tensor):  # torch's optimisers keep tensors (the step count too)
                raise StateError(f"{at}.{name} is {value!r:.40} ({type(value).__name__}), expected a tensor")


# ---- load(run_dir): one route from a run directory to a model -------------------------------------


def run_path(run_dir: object, program: str) -> Path:
    """``run_dir`` (a ``str`` or path) checked: a :class:`CheckpointError` says what a run directory is."""
    if not isinstance(run_dir, str | os.PathLike) or not str(run_dir):
        raise CheckpointError(
            f"load: expected a run directory (a str or Path, as passed to python -m {program} --out), "
            f"got {run_dir!r:.60}"
        )
    return Path(run_dir)


def load_device(device: object) -> torch.device:
    """``load``'s device argument checked (a :class:`UserError` naming it): a str or ``torch.device`` that exists."""
    target = device_of(str(device), "load: device") if isinstance(device, str | torch.device) else None
    if target is None:
        raise UserError(f"load: device must be a str or torch.device (cpu, cuda, cuda:N), got {device!r:.60}")
    return target


def load_model(
    path: Path,
    build: Callable[[dict[str, Any]], M],
    device: torch.device | str,
    program: str,
    what: str = "a model",
    blob: dict[str, Any] | None = None,
) -> M:
    """The model in the checkpoint ``path``: ``build(blob)`` from its config, its weights checked and loaded.

    ``what`` names the model in errors ("a ListOps model"); ``blob`` is the checkpoint when already read.
    Every problem -- the device, the file, its config, its tensors -- is one :class:`UserError` naming it.
    """
    target = load_device(device)
    fix = f"retrain with python -m {program} --out {path.parent}"
    if blob is None:
        if not path.exists():
            raise CheckpointError(f"{path}: no checkpoint there; train with python -m {program} --out {path.parent}")
        blob = load_checkpoint(path, required=("config", "task"), fix=fix)
    stored = blob["task"].get("model")
    try:
        model = build(blob)
    except (UserError, TypeError, ValueError, KeyError) as e:
        raise CheckpointError(f"{path}: not a checkpoint of {what} ({_first_line(e)[:200]}); {fix}") from None
    try:
        check_like(model.state_dict(), stored, "task.model")
    except StateError as e:
        raise CheckpointError(f"{path}: {e}; {fix}") from None
    model.load_state_dict(blob["task"]["model"])
    return model.to(target).eval()


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"
