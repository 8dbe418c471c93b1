r"""A time budget as a deadline: a run's progress is its training time over the budget, and it stops in time.

A budget of ``T`` seconds fixes no step count. A :class:`Clock` reads the training time ``t`` spent so far, and

* the run's **progress** is ``x = min(t / (T - r - a), 1)`` -- the fraction of the time for steps spent, ``r`` the
  room kept for the final evaluation and checkpoint (below), ``a`` the :attr:`Clock.tail` kept for work after the
  run (a program's report) -- which the one-cycle schedule follows
  (:meth:`training.OneCycle.follow`), so warm-up and annealing fit the time whatever the machine's load, where a
  step count measured at the start fits it only if the load stays put;
* the run **stops** before the step that would not end in time: when ``t + s + r + a ≥ T``, ``s`` the median of
  the last steps' durations and ``r`` the last measured evaluation and checkpoint (the final ones are kept room
  for).

**What the clock counts.** From :meth:`Clock.start`: :func:`training.fit` starts a clock that has not started at
its first step -- steps (with the batches they wait for and a loader's worker start-up), evaluations and
checkpoints along the way, and the final evaluation and checkpoint it keeps room for. A program that starts the
clock itself counts its setup too (reading and checking the files, building the model), and sets the tail for
what follows the run: ``python -m examples.operator --time 10m`` starts its clock at the process's start
(:func:`process_age`: the interpreter's imports count) and rehearses its report once, so that the command ends in
its ten minutes. A peer trained after the run
gets a clock of its own for the same budget (:meth:`Clock.fresh`).

**Resuming.** A checkpoint records the clock (:meth:`Clock.state_dict`: the seconds spent and the last steps'
durations); a resumed run continues it (:meth:`Clock.load_state_dict`), so its progress, its schedule and its
deadline continue. Because the steps depend on time, a resumed run is not bit-identical to an uninterrupted one,
as no timed run is twice the same.

**Several processes.** Every rank must take the same learning rate and stop at the same step, so a reading is
agreed before it is used: the largest over the ranks (:func:`agreed`). Progress and the stopping rule read only
agreed readings, and each rank computes the same.

The time source is a parameter (``now``): tests drive a clock by a simulated one.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist

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
        #: the last duration of each kind of work the run does again at its end (``"evaluation"``,
        #: ``"checkpoint"``), kept room for: :attr:`reserve`
        self.ends: dict[str, float] = {}
        #: seconds kept at the end for work after the run (a program's report), set by whoever does it
        self.tail = 0.0
        self.steps: deque[float] = deque(maxlen=RECENT_STEPS)
        self._origin: float | None = None

    def fresh(self) -> Clock:
        """A clock for another run on the same budget (a peer's), not yet started."""
        return Clock(self.seconds, self.now)

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has been called."""
        return self._origin is not None

    def start(self, spent: float = 0.0) -> None:
        """Start counting, ``spent`` seconds already spent (a resumed run's ``elapsed``)."""
        self._origin = self.now() - spent
        self.spent = spent

    def read(self) -> float:
        """The training seconds spent by now on this process (not agreed: see :meth:`tick`)."""
        if self._origin is None:
            raise RuntimeError("Clock.read before Clock.start")
        return self.now() - self._origin

    def tick(self, agree: Callable[[float], float] = float, *, end: str | None = None) -> float:
        """Read the clock, agreed over the ranks, after a step -- or after work the run does again at its end
        (``end`` names it: ``"evaluation"``, ``"checkpoint"``), whose duration becomes the room kept for it
        (:attr:`ends`); returns the agreed reading."""
        before = self.spent
        reading = self.sync(agree)
        if end is None:
            self.steps.append(reading - before)
        else:
            self.ends[end] = reading - before
        return reading

    def sync(self, agree: Callable[[float], float] = float) -> float:
        """Read the clock, agreed over the ranks, counting what passed as neither a step nor the end (a
        program's setup before the first step); returns the agreed reading."""
        reading = agree(self.read())
        self._origin = self.now() - reading  # every rank counts from the agreed reading
        self.spent = reading
        return reading

    @property
    def reserve(self) -> float:
        """The room kept for the run's end: the last duration of each kind of work it does there (:attr:`ends`)."""
        return sum(self.ends.values())

    @property
    def progress(self) -> float:
        """The fraction of the time for steps spent, ``min(t / (T - r - a), 1)`` (at the last agreed reading; ``r``
        and ``a`` the room kept for the end and the :attr:`tail`)."""
        room = self.seconds - self.reserve - self.tail
        return min(self.spent / room, 1.0) if room > 0 else 1.0

    @property
    def step_estimate(self) -> float:
        """The next step's expected duration: the median of the last :data:`RECENT_STEPS` (``0`` before any)."""
        return statistics.median(self.steps) if self.steps else 0.0

    def over(self) -> bool:
        """Whether the next step, the final evaluation and checkpoint after it and the :attr:`tail` would end past
        the deadline."""
        return self.spent + self.step_estimate + self.reserve + self.tail >= self.seconds

    @property
    def left(self) -> float:
        """Seconds left to the deadline (``0`` past it)."""
        return max(self.seconds - self.spent, 0.0)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the clock (plain data): the budget, the seconds spent, the last steps'
        durations and the room kept for the end."""
        return {"seconds": self.seconds, "spent": self.spent, "steps": list(self.steps), "ends": dict(self.ends)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue a checkpoint's clock: its time spent, step durations and room for the end (the budget is
        compared on resume: not restored here), counting from now -- a clock already started adds what it has
        counted (a program's setup) to the checkpoint's."""
        counted = self.read() if self.started else 0.0
        self.steps.clear()
        self.steps.extend(float(d) for d in state["steps"])
        self.ends = {str(k): float(v) for k, v in state["ends"].items()}
        self.start(float(state["spent"]) + counted)


def process_age() -> float:
    """Seconds since this process started (Linux: from ``/proc``, to the kernel's tick; ``0`` where it cannot be
    read): a clock started with it counts the interpreter's start and imports."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: the start, in ticks
    except (OSError, ValueError, IndexError):
        return 0.0


def leave(code: int) -> NoReturn:
    """End this process with status ``code`` at once, its output flushed, skipping the interpreter's teardown.

    For a command with a deadline, alone in its process, once it has written and closed all it writes (the report,
    the checkpoint, the plots): freeing torch's state at exit takes seconds under load (4.7 s of a 30 s budget,
    measured at a load of 3), which a clock inside the process cannot see. For a rank of ``torchrun`` once it has
    left its process group (:func:`training.cli.run_cli`): the interpreter's teardown can abort it there
    (:func:`training.distributed.teardown`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def timed_command(args: Sequence[str]) -> bool:
    """Whether a command line ``args`` gives a deadline (``--time``) to a single process (not a rank of
    ``torchrun``'s): one that :func:`leave` may end."""
    timed = any(a == "--time" or a.startswith("--time=") for a in args)
    return timed and int(os.environ.get("WORLD_SIZE", "1")) == 1


def agreed(ranks: Ranks, device: torch.device) -> Callable[[float], float]:
    """A reading made the same on every rank: the largest of theirs (the reading itself on one process)."""
    if ranks.world == 1:
        return float

    def largest(reading: float) -> float:
        t = torch.tensor([reading], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    return largest
