r"""A time budget as a deadline: a run's progress is its training time over the budget, and it stops in time.

A budget of ``T`` seconds fixes no step count. A :class:`Clock` reads the training time ``t`` spent so far, and

* the run's **progress** is ``x = min(t / T, 1)``, which a schedule follows (:class:`ClockSchedule`: the
  learning rate a function of ``x``, e.g. the one-cycle policy's), so warm-up and annealing fit the time
  whatever the machine's load -- where a step count measured at the start fits it only if the load stays put;
* the run **stops** before the step that would not end in time: when ``t + s + r ≥ T``, ``s`` the median of the
  last steps' durations and ``r`` the last measured evaluation and checkpoint (the final ones are kept room for).

**What the clock counts.** Training time runs from the first step: steps (with the batches they wait for and a
loader's worker start-up), evaluations and checkpoints along the way, and the final evaluation and checkpoint it
keeps room for. One-time setup before the first step is not counted: reading the files' headers, the statistics
pass, building the model; nor is what follows the run (its report, a peer trained after it, which gets a clock of
its own for the same budget: :meth:`Clock.fresh`).

**Resuming.** A checkpoint records the clock (:meth:`Clock.state_dict`: the training time spent, which is the
loop's ``elapsed``, and the last steps' durations); a resumed run continues it (:meth:`Clock.load_state_dict`), so
its progress, its schedule and its deadline continue. Because the steps depend on
time, a resumed run is not bit-identical to an uninterrupted one, as no timed run is twice the same.

**Several processes.** Every rank must take the same learning rate and stop at the same step, so a reading is
agreed before it is used: the largest over the ranks (:func:`agreed`). Progress and the stopping rule read only
agreed readings, and each rank computes the same.

The time source is a parameter (``now``): tests drive a clock by a simulated one.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.optim.lr_scheduler import LRScheduler

from .distributed import Ranks
from .errors import UserError

#: steps whose durations predict the next one's (their median: an evaluation's pause or a slow step is ignored)
RECENT_STEPS = 16


class Clock:
    """Training seconds against a deadline of ``seconds``: progress, and whether another step fits.

    Args:
        seconds: the budget ``T`` (``> 0``).
        now: the time source, in seconds (default :func:`time.perf_counter`).
    """

    def __init__(self, seconds: float, now: Callable[[], float] = time.perf_counter) -> None:
        if not seconds > 0 or seconds == float("inf"):
            raise UserError(f"a time budget must be a positive number of seconds, got {seconds!r}")
        self.seconds, self.now = float(seconds), now
        self.spent = 0.0  # the last agreed reading
        self.reserve = 0.0  # the last evaluation and checkpoint, kept room for at the end
        self.steps: deque[float] = deque(maxlen=RECENT_STEPS)
        self._origin: float | None = None

    def fresh(self) -> Clock:
        """A clock for another run on the same budget (a peer's), not yet started."""
        return Clock(self.seconds, self.now)

    def start(self, spent: float = 0.0) -> None:
        """Start counting, ``spent`` seconds already spent (a resumed run's ``elapsed``)."""
        self._origin = self.now() - spent
        self.spent = spent

    def read(self) -> float:
        """The training seconds spent by now on this process (not agreed: see :meth:`tick`)."""
        if self._origin is None:
            raise RuntimeError("Clock.read before Clock.start")
        return self.now() - self._origin

    def tick(self, agree: Callable[[float], float] = float, *, ending: bool = False) -> float:
        """Read the clock, agreed over the ranks, after a step (or, ``ending``, after an evaluation or a
        checkpoint, whose duration becomes the room kept at the end); returns the agreed reading."""
        reading = agree(self.read())
        if self._origin is not None:  # every rank counts from the agreed reading
            self._origin = self.now() - reading
        duration, self.spent = reading - self.spent, reading
        if ending:
            self.reserve = duration
        else:
            self.steps.append(duration)
        return reading

    @property
    def progress(self) -> float:
        """The fraction of the budget spent, ``min(t / T, 1)`` (at the last agreed reading)."""
        return min(self.spent / self.seconds, 1.0)

    @property
    def step_estimate(self) -> float:
        """The next step's expected duration: the median of the last :data:`RECENT_STEPS` (``0`` before any)."""
        return statistics.median(self.steps) if self.steps else 0.0

    def over(self) -> bool:
        """Whether the next step, and the final evaluation and checkpoint after it, would end past the deadline."""
        return self.spent + self.step_estimate + self.reserve >= self.seconds

    @property
    def left(self) -> float:
        """Seconds left to the deadline (``0`` past it)."""
        return max(self.seconds - self.spent, 0.0)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the clock (plain data): the budget, the seconds spent, the last steps'
        durations and the room kept for the end."""
        return {"seconds": self.seconds, "spent": self.spent, "steps": list(self.steps), "reserve": self.reserve}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue a checkpoint's clock: its time spent, step durations and room for the end (the budget is the
        run's config, compared on resume: not restored here), counting from now."""
        self.steps.clear()
        self.steps.extend(float(d) for d in state["steps"])
        self.reserve = float(state["reserve"])
        self.start(float(state["spent"]))


def agreed(ranks: Ranks, device: torch.device) -> Callable[[float], float]:
    """A reading made the same on every rank: the largest of theirs (the reading itself on one process)."""
    if ranks.world == 1:
        return float

    def largest(reading: float) -> float:
        t = torch.tensor([reading], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    return largest


class ClockSchedule(LRScheduler):
    """Learning rates that follow a :class:`Clock`: each group's peak rate times ``rate(progress)``.

    ``rate`` maps progress in ``[0, 1]`` to a multiplier (the one-cycle policy's, say). The schedule steps with the
    optimiser, before the loop reads the clock, so a step's rate follows the progress at the last reading, one step
    behind. The schedule's state is plain data (its step count and last rates); the progress is the clock's, which
    a checkpoint restores (:meth:`Clock.load_state_dict`).
    """

    def __init__(self, optimiser: torch.optim.Optimizer, clock: Clock, rate: Callable[[float], float]) -> None:
        self.clock, self.rate = clock, rate
        super().__init__(optimiser)

    def get_lr(self) -> list[float | torch.Tensor]:
        """The peak rates times ``rate(progress)``."""
        factor = self.rate(self.clock.progress)
        return [base * factor for base in self.base_lrs]

    def state_dict(self) -> dict[str, Any]:
        """Tensors and plain data only: the step count, the peak and last rates (not the clock or ``rate``)."""
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs), "_last_lr": list(self._last_lr)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.last_epoch = int(state_dict["last_epoch"])
        self.base_lrs = [float(b) for b in state_dict["base_lrs"]]
        self._last_lr = list(state_dict["_last_lr"])
