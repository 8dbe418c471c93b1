"""The training loop every task shares: :func:`fit` (its display is :mod:`.progress`, its signals :mod:`.signals`).

An example supplies a :class:`Task` (one optimisation step, an evaluation, and its state as tensors
and plain data); :func:`fit` runs it to ``steps``:

* a progress bar with ETA; evaluation every ``eval_every`` steps into labelled history records;
* an atomic checkpoint every ``checkpoint_every`` steps (:mod:`.checkpoint`), and at the end;
* a time budget as a deadline (``deadline``, a :class:`~.deadline.Clock`): the run stops before a step that would
  not end in time, a one-cycle schedule follows the time spent, and a checkpoint keeps the clock;
* resume from ``out/checkpoint.pt``: bit-identical to an uninterrupted run; a changed config is refused
  naming each differing field, and so are other training data (the checkpoint records their
  :func:`~.fingerprint.fingerprint`) and another budget of steps for an unfinished run (its schedule would
  change): the steps asked are the run's, on a fresh run and a resume alike; ``steps`` larger than a finished
  run's extend it; so is another time budget; ``restart`` starts afresh whatever the directory holds;
* SIGINT and SIGTERM finish the current step, write a checkpoint and raise :class:`Interrupted`;
* a loss or metric that stops being finite raises :class:`Diverged`, which says truthfully which
  checkpoint (if any) is kept, and so does a state that does under a finite loss (Adam's squared gradients can
  overflow first), as it is saved or at an evaluation -- nothing non-finite is ever written;
* a task that can tell when its model stopped depending on its input (a :class:`Watched` task: every prediction the
  same, the weights finite) is asked at each evaluation, and a run that got there raises :class:`Collapsed`.
"""

from __future__ import annotations

import math
import random
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypedDict, Unpack, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LRScheduler, OneCycleLR
from typing_extensions import TypeVar

from .budget import Budget
from .checkpoint import (
    FORMAT,
    CheckpointError,
    StateError,
    load_checkpoint,
    non_finite,
    require,
    restore_training_state,
    save_checkpoint,
    training_state,
)
from .config import ConfigError, describe, differences
from .deadline import Clock, agreed
from .denormals import flush_denormals
from .distributed import SINGLE, Ranks
from .errors import UserError
from .fingerprint import data_problem
from .progress import progress_bar
from .registry import check_meta
from .schedule import OneCycle
from .signals import Interrupted, caught
from .threads import use_threads

CHECKPOINT = "checkpoint.pt"
M = TypeVar("M")
#: a history row: ``{"step": 250, "loss": 1e-3, "held_out_rel_l2": 5e-3, ...}`` (``step`` an int)
Record = dict[str, float]


class Task(Protocol):
    """What an example gives the loop."""

    #: where the task computes (the loop's cross-process flags live there)
    device: torch.device

    def train_step(self) -> Tensor:
        """One optimisation step; returns the loss (a tensor: reading it would wait for the device)."""
        ...

    def evaluate(self) -> dict[str, float]:
        """Held-out metrics, by name."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What continues the run bit-identically (model, optimiser, schedule, sampler): tensors, plain data."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        ...


#: the kind of a task's sampler (:data:`~.checkpoint.Sampler`): torch's generator unless the task says otherwise
S = TypeVar("S", torch.Generator, random.Random, np.random.Generator, default=torch.Generator)


class Optimised(Generic[S]):
    """A :class:`Task`'s state when it is the usual four parts: ``model``, ``optimiser``, ``schedule``, ``sampler``
    (torch's generator; ``Optimised[random.Random]`` or ``Optimised[numpy.random.Generator]`` for Python's or
    numpy's: :data:`~.checkpoint.Sampler`).

    A task class that sets these attributes inherits :meth:`state_dict` / :meth:`load_state_dict` (each part
    checked against the task's own before it is loaded: :func:`~.checkpoint.restore_training_state`).
    """

    model: nn.Module
    optimiser: torch.optim.Optimizer
    schedule: LRScheduler
    sampler: S

    def state_dict(self) -> dict[str, Any]:
        """Model, optimiser, schedule and sampler state: tensors and plain data."""
        return training_state(self.model, self.optimiser, self.schedule, self.sampler)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (a :class:`~.checkpoint.StateError` when a part does not fit)."""
        restore_training_state(state, self.model, self.optimiser, self.schedule, self.sampler)

    def optimise(self, loss: Tensor, clip: float = 0.0) -> None:
        """One optimiser step on ``loss``: gradients, their norm clipped to ``clip`` (``0``: not clipped), the
        step, and the schedule advanced -- except a one-cycle schedule at its end, whose final rate an extended
        run (a larger ``--steps``) keeps."""
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        if clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        self.optimiser.step()
        schedule = self.schedule
        ended = isinstance(schedule, OneCycleLR) and schedule.last_epoch >= schedule.total_steps
        if not ended:
            schedule.step()


@dataclass
class Progress:
    """Where a run stands: the step reached, the history, training seconds, and the step it resumed from."""

    step: int = 0
    history: list[Record] = field(default_factory=list)
    elapsed: float = 0.0
    resumed_from: int | None = None
    saved: int | None = None  # the step of the last checkpoint on disk


@dataclass
class Trained(Generic[M]):
    """A finished (or stopped) run: its model and where the loop stood."""

    model: M
    step: int
    history: list[Record] = field(default_factory=list)
    elapsed: float = 0.0
    resumed_from: int | None = None

    @classmethod
    def of(cls, model: M, run: Progress) -> Trained[M]:
        return cls(model, run.step, run.history, run.elapsed, run.resumed_from)


class Diverged(UserError, FloatingPointError):
    """The loss or a metric stopped being finite."""


class Collapsed(UserError):
    """The model stopped depending on its input: every prediction the same, the weights finite. Its gradients vanish
    with the spread, so it has stopped learning (a held-out error stuck at exactly 1 for the rest of the run, traced
    in ``docs/notes/2026-11-30-six-layers.md``), and the loop stops it."""


@runtime_checkable
class Watched(Protocol):
    """A task that can say whether its model has collapsed, asked at each evaluation."""

    def collapsed(self) -> str | None:
        """Why the model's output no longer depends on its input (a clause), or ``None`` while it does."""
        ...


def fit(
    task: Task,
    *,
    config: Mapping[str, Any],
    steps: int,
    out: Path | None,
    eval_every: int,
    checkpoint_every: int,
    progress: bool = True,
    stop_after: int | None = None,
    on_step: Callable[[Progress], None] | None = None,
    fix: str = "lower the learning rate",
    ranks: Ranks = SINGLE,
    meta: Mapping[str, Any] | None = None,
    threads: int | None = None,
    budget: Budget | None = None,
    data: Mapping[str, Any] | None = None,
    restart: bool = False,
    deadline: Clock | None = None,
    reads: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> Progress:
    """Train ``task`` to ``steps`` (or ``stop_after``), resuming from ``out/checkpoint.pt`` if there is one.

    ``config`` (plain data) is stored in each checkpoint and compared on resume (``steps`` aside; the stored one
    as ``reads`` reads it, :func:`check_resume`);
    ``fix`` is the advice a divergence error gives. Under ``torchrun`` (``ranks``), only rank 0 writes
    checkpoints and shows progress; every rank stops at the same step. ``meta`` (a task's
    :meth:`~.registry.TaskSpec.meta`) is recorded in each checkpoint so that :func:`~.registry.load` can
    rebuild the model, and a checkpoint resumed from must hold the same (:func:`check_resume`); ``budget``
    bounds the size of a checkpoint file read back. ``threads`` sets torch's CPU threads for the run (default: by
    the model's size, :func:`~.threads.default_threads`); the first progress line says how many, and the count is
    restored after. Subnormal floats are flushed to zero on the CPU for the run (:mod:`~.denormals`: a steep
    attention window makes them in bulk, at many times the cost of normal arithmetic), and the previous mode
    restored after.

    ``data`` (a :func:`~.fingerprint.fingerprint` of the training data) is recorded, and a resume on other data
    refused; ``restart`` ignores a checkpoint in ``out`` (the run's first checkpoint replaces it).

    ``deadline`` makes the run's budget a time (:mod:`~.deadline`): ``steps`` is then a cap, the run stops before
    a step that would not end (with the final evaluation and checkpoint) by the clock's deadline -- which ends it,
    as reaching ``steps`` does -- the task's ``schedule``, when it is a :class:`~.schedule.OneCycle`, follows the
    clock's progress (:meth:`~.schedule.OneCycle.follow`), and the progress bar counts seconds. A clock not yet
    started starts at the first step; one already started (a program's setup counted) goes on. Each checkpoint
    records the clock, a resume continues it, and a resume under another budget (or none) is refused.
    """

    path = None if out is None else out / CHECKPOINT
    if out is not None and ranks.main:
        out.mkdir(parents=True, exist_ok=True)
    run = Progress()
    clock_state = None
    seconds = None if deadline is None else deadline.seconds
    if path is not None and path.exists() and not restart:
        clock_state = _resume(task, run, path, dict(config), meta, budget, data, seconds, reads)
    blob_config = dict(config)

    def save() -> None:
        if path is not None and ranks.main:
            blob = {"format": FORMAT, "job": job_of(task), "config": blob_config, "step": run.step}
            if meta is not None:
                blob["meta"] = dict(meta)
            if data is not None:
                blob["data"] = dict(data)
            if deadline is not None:
                blob["clock"] = deadline.state_dict()
            blob |= {"task": _finite(task, run, path, fix), "history": run.history, "elapsed": run.elapsed}
            save_checkpoint(path, blob, _kept(run, path))
            run.saved = run.step

    target = min(steps, stop_after) if stop_after is not None else steps
    before = torch.get_num_threads()
    chosen = use_threads(threads, _parameters(task))
    restore_denormals = flush_denormals()
    device = task.device
    agree = agreed(ranks, device)
    if deadline is not None:
        _begin(deadline, clock_state, agree)
        schedule = getattr(task, "schedule", None)
        if isinstance(schedule, OneCycle):
            schedule.follow(deadline)
    shown = progress and ranks.main
    bar = (
        progress_bar(steps, run.step, shown, chosen)
        if deadline is None
        else progress_bar(math.ceil(deadline.seconds), int(deadline.spent), shown, chosen, unit="s")
    )
    start = time.perf_counter() - run.elapsed
    metrics: dict[str, float] = run.history[-1] if run.history else {}
    ended = deadline is not None and deadline.over()
    with caught() as signals:
        try:
            while run.step < target and not ended and not ranks.any(bool(signals), device):
                loss = _guarded(task.train_step, task, run, path, fix)
                run.step += 1
                run.elapsed = time.perf_counter() - start
                if deadline is not None:
                    seen = int(deadline.spent)
                    deadline.tick(agree)
                    ended = deadline.over()
                last = run.step == steps or ended
                at_eval = run.step % eval_every == 0 or last
                at_save = path is not None and (run.step % checkpoint_every == 0 or last)
                if at_eval:
                    metrics = _guarded(task.evaluate, task, run, path, fix)
                if at_eval or at_save:  # read the loss (a host sync) only where it is recorded or saved
                    value = ranks.all_mean(loss).item()
                    bad = [k for k, v in metrics.items() if at_eval and not math.isfinite(v)]
                    if not math.isfinite(value) or bad:
                        what = f"loss {value}" + "".join(f", {k} non-finite" for k in bad)
                        raise Diverged(_diverged(run, path, what, fix))
                    if at_eval and path is None:  # a saved run's state is checked as it is saved
                        _finite(task, run, path, fix)
                    if at_eval and isinstance(task, Watched):  # the same class on every rank: all ask, or none
                        why = task.collapsed()
                        if ranks.any(why is not None, device):
                            raise Collapsed(_collapsed(run, path, why, fix))
                    if at_eval:
                        run.history.append({"step": run.step, "loss": value, **metrics})
                    if deadline is not None:  # each one's time: the room kept for the final ones
                        if at_eval:
                            deadline.tick(agree, end="evaluation")
                            run.elapsed = time.perf_counter() - start
                        if at_save:
                            save()
                            deadline.tick(agree, end="checkpoint")
                        ended = ended or deadline.over()
                    elif at_save:
                        save()
                if deadline is None:
                    bar.update(1)
                else:
                    bar.update(min(int(deadline.spent), math.ceil(deadline.seconds)) - seen)
                if run.step % 25 == 0 and (metrics or deadline is not None):
                    shown_metrics = {k: f"{v:.2e}" for k, v in metrics.items() if k != "step"}
                    step = {} if deadline is None else {"step": str(run.step)}
                    bar.set_postfix(step | shown_metrics, refresh=False)
                if on_step is not None:
                    on_step(run)
        finally:
            bar.close()
            torch.set_num_threads(before)
            restore_denormals()
    if run.saved != run.step:
        save()
    if signals or (run.step < target and not ended):
        raise Interrupted(signals[0] if signals else signal.SIGTERM, run.step, path)
    return run


def _begin(clock: Clock, state: dict[str, Any] | None, agree: Callable[[float], float]) -> None:
    """Start ``clock`` for a run (or continue a checkpoint's ``state``), its reading agreed over the ranks."""
    if state is not None:
        clock.load_state_dict(state)
    elif not clock.started:
        clock.start()
    clock.sync(agree)


class Schedule(Protocol):
    """What :func:`fit_config` reads of a run's config: the budget and the cadence (a frozen dataclass)."""

    @property
    def steps(self) -> int: ...
    @property
    def eval_every(self) -> int: ...
    @property
    def checkpoint_every(self) -> int: ...


class FitOptions(TypedDict, total=False):
    """How a run is driven, as every task's ``train`` passes it through to :func:`fit_config` unchanged."""

    progress: bool
    stop_after: int | None
    on_step: Callable[[Progress], None] | None
    ranks: Ranks
    threads: int | None
    budget: Budget | None
    data: Mapping[str, Any] | None
    restart: bool
    deadline: Clock | None


def fit_config(
    task: Task,
    config: Schedule,
    out: Path | None,
    *,
    extra: Mapping[str, Any] | None = None,
    fix: str = "lower the learning rate",
    meta: Mapping[str, Any] | None = None,
    **options: Unpack[FitOptions],
) -> Progress:
    """:func:`fit` with ``steps``, ``eval_every`` and ``checkpoint_every`` read from ``config``, which the
    checkpoints record (with ``extra``, e.g. which model of several the run trains)."""
    return fit(
        task,
        config={**describe(config), **(extra or {})},
        steps=config.steps,
        out=out,
        eval_every=config.eval_every,
        checkpoint_every=config.checkpoint_every,
        fix=fix,
        meta=meta,
        **options,
    )


def check_resume(
    out: Path,
    config: Mapping[str, Any],
    meta: Mapping[str, Any] | None = None,
    budget: Budget | None = None,
    *,
    data: Mapping[str, Any] | None = None,
    restart: bool = False,
    deadline: float | None = None,
    reads: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The checkpoint in ``out`` if there is one to resume, after checking it holds what ``meta`` says (a task's
    :meth:`~.registry.TaskSpec.meta`: the same rule, and the same words, as :func:`~.registry.load`,
    :func:`~.registry.check_meta`), was written with ``config`` and, given ``data`` (a
    :func:`~.fingerprint.fingerprint`), on the same data. ``reads`` is how today's code reads the config a
    checkpoint recorded (a task whose fields grew since, or that resolves a default from the data: an older
    checkpoint lacks the newer fields); it raises ``ValueError``, ``TypeError`` or a ``ConfigError`` for a record it
    cannot read. Without it the record is compared as stored.

    ``config["steps"]`` is the run's budget: a run unfinished under another budget is refused (resuming it would
    change its schedule), and so is a run already past it; a finished run may be extended. ``deadline`` is the
    run's time budget in seconds (``None``: none): a run under another budget, or without one, is refused. With
    ``restart``,
    nothing is read or checked (``None``: the run starts afresh). A file past ``budget`` (default
    :class:`~.budget.Budget`) is refused before it is read. Call it before expensive setup (data generation), so
    that a refused resume fails at once.
    """
    path = out / CHECKPOINT
    if restart or not path.exists():
        return None
    budget = budget if budget is not None else Budget()
    blob = load_checkpoint(path, max_bytes=budget.max_bytes)
    if meta is not None:
        check_meta(path, blob, meta, out)
    require(path, blob, ("config", "step", "task", "history", "elapsed"))
    try:
        written = dict(blob["config"] if reads is None else reads(blob["config"]))
    except (ValueError, TypeError, ConfigError) as e:
        raise ConfigError(f"{path}: its config is not one this code reads ({e}); {_AGAIN}") from None
    diff = differences(written, dict(config), ignore=("steps",))
    if diff:
        raise ConfigError(
            f"{path} was written with another config ({'; '.join(diff)}); "
            "pass the same values to resume, or another --out to start afresh"
        )
    again = _AGAIN
    problem = _deadline_problem(blob.get("clock"), deadline) or _budget_problem(
        blob["step"], blob["config"].get("steps"), config.get("steps")
    )
    if problem is not None:
        raise ConfigError(f"{path}: {problem}, or {again}")
    recorded = blob.get("data")
    if data is not None and isinstance(recorded, dict):
        problem = data_problem(recorded, data)
        if problem is not None:
            raise ConfigError(f"{path}: {problem}; pass the same data to resume it, {again}")
    return blob


_AGAIN = "--restart to start afresh, or another --out"


def _budget_problem(reached: int, planned: object, asked: object) -> str | None:
    """Why a run at step ``reached`` of ``planned`` steps cannot go on to ``asked`` steps (``None``: it can)."""
    if type(planned) is not int or type(asked) is not int or asked == planned:
        return None
    if reached > asked:
        return f"the run there has trained {reached} steps, past the {asked} asked; ask for {planned} to use it"
    if reached < planned:
        return (
            f"the run there stopped at step {reached} of its {planned}; going on to {asked} would change its "
            f"schedule: ask for its {planned} steps to finish it"
        )
    return None  # a finished run extended: its schedule keeps its final rate


def _deadline_problem(clock: object, asked: float | None) -> str | None:
    """Why a run whose checkpoint holds ``clock`` (a :meth:`~.deadline.Clock.state_dict`, or ``None``) cannot go on
    under a time budget of ``asked`` seconds (``None``: none), or ``None`` when it can."""
    was = clock["seconds"] if isinstance(clock, dict) else None
    if was == asked:
        return None
    if was is None:
        return f"the run there trains by steps, not to a time budget; resume it without one ({asked:g}s asked)"
    if asked is None:
        return f"the run there trains to a time budget of {was:g}s; ask for it to resume the run"
    return f"the run there trains to a time budget of {was:g}s, not {asked:g}s; ask for {was:g}s to resume it"


def _parameters(task: Task) -> int:
    """The size of the task's model (``state_dict()["model"]``, as :func:`~.checkpoint.training_state` keeps it)."""
    model = task.state_dict().get("model")
    if not isinstance(model, dict):
        return 0
    return sum(t.numel() for t in model.values() if isinstance(t, Tensor) and t.is_floating_point())


def job_of(task: Task) -> str:
    """The name a checkpoint records for the job that wrote it: the task's class (``module.Class``)."""
    return f"{type(task).__module__}.{type(task).__qualname__}"


def _resume(
    task: Task,
    run: Progress,
    path: Path,
    config: dict[str, Any],
    meta: Mapping[str, Any] | None,
    budget: Budget | None,
    data: Mapping[str, Any] | None,
    deadline: float | None,
    reads: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Load the checkpoint at ``path`` into ``task`` and ``run``; the clock it records (``None``: none)."""
    blob = check_resume(path.parent, config, meta, budget, data=data, deadline=deadline, reads=reads)
    assert blob is not None
    fix = "delete it, or pass another --out to start afresh"
    if blob.get("job", job_of(task)) != job_of(task):
        raise CheckpointError(f"{path}: was written by {blob['job']}, not by {job_of(task)}; {fix}")
    try:
        task.load_state_dict(blob["task"])
    except StateError as e:
        raise CheckpointError(f"{path}: {e}; {fix}") from None
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: its task state does not fit this job ({first[:160]}); {fix}") from None
    run.step, run.history, run.elapsed = blob["step"], list(blob["history"]), float(blob["elapsed"])
    run.resumed_from = run.saved = run.step
    clock: dict[str, Any] | None = blob.get("clock")
    return clock


R = TypeVar("R")


def _guarded(call: Callable[[], R], task: Task, run: Progress, path: Path | None, fix: str) -> R:
    """``call()``; an error it raises because the weights stopped being finite (a distribution refusing NaN
    parameters, say) is :class:`Diverged`, saying what was kept, like a non-finite loss."""
    try:
        return call()
    except (ValueError, RuntimeError, FloatingPointError) as e:
        where = non_finite(task.state_dict(), "")
        if where is None:
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:80]
        raise Diverged(
            f"training diverged at step {run.step + 1} ({where} not finite: {first}); {_kept(run, path)}; {fix}"
        ) from None


def _finite(task: Task, run: Progress, path: Path | None, fix: str) -> dict[str, Any]:
    """``task``'s state, or :class:`Diverged` where it holds a non-finite float under a finite loss: weights, or
    moments that overflowed (Adam's squared gradients)."""
    state = task.state_dict()
    where = non_finite(state, "task")
    if where is not None:
        raise Diverged(_diverged(run, path, f"{where} not finite, the loss finite", fix))
    return state


def _kept(run: Progress, path: Path | None) -> str:
    if path is None:
        return "nothing was saved (no --out)"
    if run.saved is None:
        return f"no checkpoint had been written to {path.parent} yet"
    return f"the last good checkpoint (step {run.saved}) is kept in {path}"


def _collapsed(run: Progress, path: Path | None, why: str | None, fix: str) -> str:
    if path is None or run.saved is None:
        kept = _kept(run, path)
    else:
        kept = f"the last checkpoint (step {run.saved}, perhaps collapsed) is in {path}: start again with --restart"
    why = why or "on another process"
    return f"training collapsed at step {run.step}: {why}, so it has stopped learning; {kept}; {fix}"


def _diverged(run: Progress, path: Path | None, what: str, fix: str) -> str:
    return f"training diverged at step {run.step} ({what}); {_kept(run, path)}; {fix}"
