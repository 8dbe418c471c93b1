"""A time budget as a deadline (:mod:`training.deadline`), driven by a simulated clock: no test here is timed.

The loop below is what :func:`training.fit` does with a :class:`~training.deadline.Clock` (a step, a tick; an
evaluation, a tick marked ``ending``; stop when the clock says the next step would not fit), on a simulated time
whose steps cost what a changing load makes them cost.
"""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
import torch
from torch import nn

from training import SINGLE, UserError
from training.checkpoint import check_like
from training.deadline import Clock, ClockSchedule, agreed


class Time:
    """Simulated seconds: ``now()`` reads them, ``advance`` spends them."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def cost(step: int) -> float:
    """A step's simulated seconds: 1, with a slow step every 17th, and twice as slow from step 300 (the load rises)."""
    base = 1.0 if step < 300 else 2.0
    return base * (4.0 if step % 17 == 16 else 1.0)


EVAL_EVERY, EVAL_SECONDS = 50, 6.0


def run(
    clock: Clock, time: Time, steps: int = 0, stop_at: int | None = None, state: dict[str, Any] | None = None
) -> tuple[int, list[float], dict[str, Any]]:
    """Train (simulated) until the clock stops it, or to step ``stop_at`` (from a checkpoint's ``state``); the step
    reached, the rates seen and the state a checkpoint would hold."""
    model = nn.Linear(1, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    schedule = ClockSchedule(optimiser, clock, lambda x: 1.0 - x)
    if state is not None:
        optimiser.load_state_dict(state["optimiser"])
        schedule.load_state_dict(state["schedule"])
    rates = []
    while not clock.over() and steps != stop_at:
        rates.append(optimiser.param_groups[0]["lr"])
        time.advance(cost(steps))
        optimiser.step()
        schedule.step()
        steps += 1
        clock.tick()
        if steps % EVAL_EVERY == 0:
            time.advance(EVAL_SECONDS)
            clock.tick(ending=True)
    return steps, rates, {"optimiser": optimiser.state_dict(), "schedule": schedule.state_dict()}


def test_a_run_ends_by_its_deadline_whatever_the_load() -> None:
    for budget in (600.0, 1000.0):
        time = Time()
        clock = Clock(budget, time)
        clock.start()
        steps, _, _ = run(clock, time)
        time.advance(EVAL_SECONDS)  # the final evaluation, room for which was kept
        spent = clock.tick(ending=True)
        assert 0.95 * budget <= spent <= budget, (budget, spent, steps)
    assert steps > 300  # the slow half was reached: a step count fixed at the start would have overrun


def test_the_schedule_follows_the_time_spent() -> None:
    time = Time()
    clock = Clock(500.0, time)
    clock.start()
    _, rates, _ = run(clock, time)
    # step s's rate is 0.5 (1 - t/T), t the time at the end of step s - 2: the schedule steps with the optimiser,
    # before the clock's reading of the step just taken
    ends = [0.0, 0.0]
    for step in range(len(rates)):
        ends.append(ends[-1] + cost(step) + (EVAL_SECONDS if (step + 1) % EVAL_EVERY == 0 else 0.0))
    expect = [0.5 * (1.0 - min(ends[s] / 500.0, 1.0)) for s in range(len(rates))]
    torch.testing.assert_close(torch.tensor(rates), torch.tensor(expect), rtol=1e-12, atol=1e-12)


def test_a_resumed_run_continues_the_same_clock() -> None:
    time = Time()
    whole = Clock(400.0, time)
    whole.start()
    steps, rates, _ = run(whole, time)

    time = Time()
    first = Clock(400.0, time)
    first.start()
    half, early, state = run(first, time, stop_at=120)
    saved = first.state_dict()  # what the checkpoint records
    check_like(saved, torch.load(_saved(saved), weights_only=True))
    time.advance(1e4)  # the machine was off for a while: not counted
    second = Clock(400.0, time)
    second.load_state_dict(saved)
    end, late, _ = run(second, time, steps=half, state=state)
    assert end == steps
    torch.testing.assert_close(torch.tensor(early + late), torch.tensor(rates), rtol=1e-12, atol=0)


def _saved(state: Any) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return buffer


def test_the_stopping_rule_keeps_room_for_a_step_and_the_end() -> None:
    time = Time()
    clock = Clock(10.0, time)
    clock.start()
    for d in (1.0, 1.0, 5.0, 1.0):  # the slow step does not move the median
        time.advance(d)
        clock.tick()
    assert clock.spent == 8.0 and clock.step_estimate == 1.0 and not clock.over()
    clock.reserve = 1.0
    assert clock.over() and clock.left == 2.0
    assert clock.fresh().spent == 0.0 and clock.fresh().seconds == 10.0
    assert agreed(SINGLE, torch.device("cpu"))(3.5) == 3.5


def test_the_schedule_state_is_plain_data() -> None:
    clock = Clock(10.0, Time())
    clock.start()
    optimiser = torch.optim.Adam(nn.Linear(2, 1).parameters(), lr=0.1)
    schedule = ClockSchedule(optimiser, clock, lambda x: math.cos(x))
    state = torch.load(_saved(schedule.state_dict()), weights_only=True)
    again = ClockSchedule(torch.optim.Adam(nn.Linear(2, 1).parameters(), lr=0.1), clock, math.cos)
    check_like(again.state_dict(), state)
    again.load_state_dict(state)
    assert again.state_dict() == schedule.state_dict()


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf])
def test_a_budget_that_is_no_time_is_one_line(seconds: float) -> None:
    with pytest.raises(UserError, match=r"^a time budget must be a positive number of seconds, got"):
        Clock(seconds)
