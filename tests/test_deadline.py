"""A time budget as a deadline (:mod:`training.deadline`, ``training.fit(deadline=...)``), driven by a simulated
clock: no test here is timed.

A task's steps spend simulated seconds, as a changing load makes them cost; :func:`training.fit` runs it to a
:class:`~training.deadline.Clock` that reads the simulated time. The rates its one-cycle schedule takes are
compared with a hand-written simulation of the same rule (the progress the time spent over the time for steps,
the rate :func:`~training.schedule.one_cycle` of it).
"""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

import training.loop
from training import SINGLE, ConfigError, OneCycle, Optimised, UserError, fit, load_checkpoint
from training.checkpoint import check_like
from training.deadline import Clock, agreed
from training.progress import Lines
from training.schedule import one_cycle

PEAK, WARMUP, CAP = 0.5, 0.1, 10**6
EVAL_EVERY, EVAL_SECONDS = 50, 6.0


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


class Simulated(Optimised):
    """A linear model whose steps and evaluations spend simulated time; it records the rate of each step."""

    def __init__(self, time: Time, steps: int = CAP) -> None:
        self.device = torch.device("cpu")
        self.time = time
        self.model = nn.Linear(1, 1)
        self.optimiser = torch.optim.SGD(self.model.parameters(), lr=PEAK)
        self.schedule = OneCycle(self.optimiser, PEAK, steps, WARMUP)
        self.sampler = torch.Generator().manual_seed(0)
        self.rates: list[float] = []
        self.done = 0

    def train_step(self) -> Tensor:
        self.rates.append(self.optimiser.param_groups[0]["lr"])
        self.time.advance(cost(self.done))
        self.done += 1
        loss = self.model(torch.ones(1, 1)).pow(2).mean()
        self.optimise(loss)
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        self.time.advance(EVAL_SECONDS)
        return {"held_out": 1.0}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.done = int(state["schedule"]["last_epoch"])


def train(task: Simulated, clock: Clock, out: Path | None, **options: Any) -> int:
    run = fit(
        task,
        config={"lr": PEAK},
        steps=task.schedule.steps,
        out=out,
        eval_every=EVAL_EVERY,
        checkpoint_every=100,
        progress=False,
        deadline=clock,
        **options,
    )
    return run.step


def simulated_rates(budget: float, steps: int = CAP) -> list[float]:
    """The rates the rule gives, simulated by hand: after step ``s`` (from 1) the schedule reads the progress at the
    end of step ``s - 1``, ``t / (T - r)`` (``r`` the last evaluation's seconds); the run stops once the time spent,
    the median of the last 16 steps and ``r`` reach ``T``; the step before the stop is evaluated too."""
    t, reserve, durations, rates, s = 0.0, 0.0, [], [PEAK / 25], 0
    progress = 0.0
    while True:
        durations.append(cost(s))
        t += cost(s)
        s += 1
        rate_progress = progress  # the schedule steps with the optimiser, before this step's reading
        steps_part = s / (steps - 1)
        rates.append(PEAK * one_cycle(max(rate_progress, steps_part), WARMUP))
        progress = min(t / (budget - reserve), 1.0)
        recent = sorted(durations[-16:])
        median = (recent[(len(recent) - 1) // 2] + recent[len(recent) // 2]) / 2
        over = t + median + reserve >= budget
        if s % EVAL_EVERY == 0 or over or s == steps:
            t += EVAL_SECONDS
            reserve = EVAL_SECONDS
            progress = min(t / (budget - reserve), 1.0)
            over = over or t + median + reserve >= budget
        if over or s == steps:
            return rates[:s]


@pytest.mark.parametrize("budget", [600.0, 1000.0])
def test_fit_ends_by_its_deadline_whatever_the_load(budget: float, tmp_path: Path) -> None:
    time = Time()
    task = Simulated(time)
    clock = Clock(budget, time)
    steps = train(task, clock, tmp_path)
    assert 0.95 * budget <= clock.spent <= budget, (clock.spent, steps)  # the final evaluation included
    assert steps > 300  # the slow half was reached: a step count fixed at the start would have overrun
    saved = load_checkpoint(tmp_path / "checkpoint.pt")
    assert saved["step"] == steps and saved["history"][-1]["step"] == steps  # the last step evaluated and saved
    assert saved["clock"]["spent"] == clock.spent  # saved after the final evaluation
    torch.testing.assert_close(torch.tensor(task.rates), torch.tensor(simulated_rates(budget)), rtol=1e-12, atol=0)
    assert task.rates[-1] < 0.01 * PEAK and clock.progress > 0.97  # the schedule reached its end


def test_room_is_kept_for_the_evaluation_and_the_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    time = Time()
    save = training.loop.save_checkpoint

    def slow_save(*args: Any) -> None:
        time.advance(20.0)  # a large model's checkpoint on a slow disk
        save(*args)

    monkeypatch.setattr(training.loop, "save_checkpoint", slow_save)
    clock = Clock(600.0, time)
    train(Simulated(time), clock, tmp_path)
    assert clock.reserve == EVAL_SECONDS + 20.0 and 0.95 * 600 <= clock.spent <= 600
    assert load_checkpoint(tmp_path / "checkpoint.pt")["clock"]["spent"] == clock.spent - 20.0  # before its write


def test_the_steps_are_a_cap() -> None:
    time = Time()
    task = Simulated(time, steps=40)
    clock = Clock(10_000.0, time)
    assert train(task, clock, None) == 40 and clock.spent < 100
    torch.testing.assert_close(torch.tensor(task.rates), torch.tensor(simulated_rates(10_000.0, 40)))
    assert task.schedule.get_lr()[0] == pytest.approx(PEAK * one_cycle(1.0, WARMUP))  # at the cap, the end


def test_a_resumed_run_continues_its_clock(tmp_path: Path) -> None:
    time = Time()
    whole = Simulated(time)
    end = train(whole, Clock(400.0, time), None)

    time = Time()
    first = Simulated(time)
    assert train(first, Clock(400.0, time), tmp_path, stop_after=120) == 120
    spent = load_checkpoint(tmp_path / "checkpoint.pt")["clock"]["spent"]
    assert spent == pytest.approx(sum(cost(s) for s in range(120)) + 2 * EVAL_SECONDS)
    time.advance(1e4)  # the machine was off for a while: not counted
    second = Simulated(time)
    clock = Clock(400.0, time)
    assert train(second, clock, tmp_path) == end
    torch.testing.assert_close(torch.tensor(first.rates + second.rates), torch.tensor(whole.rates), rtol=0, atol=0)
    # a finished run asked again ends at once; under another budget, or by steps, it is refused in one line
    assert train(Simulated(time), Clock(400.0, time), tmp_path) == end
    with pytest.raises(ConfigError, match=r"a time budget of 400s, not 500s; ask for 400s to resume it"):
        train(Simulated(time), Clock(500.0, time), tmp_path)
    with pytest.raises(ConfigError, match=r"a time budget of 400s; ask for it"):
        fit(Simulated(time), config={"lr": PEAK}, steps=CAP, out=tmp_path, eval_every=9, checkpoint_every=9)


def test_a_program_that_started_the_clock_counts_its_setup() -> None:
    time = Time()
    clock = Clock(300.0, time)
    clock.start()
    time.advance(30.0)  # reading the data, building the model
    task = Simulated(time)
    train(task, clock, None)
    assert 0.95 * 300 <= clock.spent <= 300 and max(clock.steps) <= 4.0  # the setup is no step's duration
    assert sum(cost(s) for s in range(len(task.rates))) < 270


def test_the_stopping_rule_keeps_room_for_a_step_and_the_end() -> None:
    time = Time()
    clock = Clock(10.0, time)
    clock.start()
    for d in (1.0, 1.0, 5.0, 1.0):  # the slow step does not move the median
        time.advance(d)
        clock.tick()
    assert clock.spent == 8.0 and clock.step_estimate == 1.0 and not clock.over()
    clock.ends["evaluation"] = 1.0
    assert clock.over() and clock.left == 2.0 and clock.progress == pytest.approx(8.0 / 9.0)
    assert clock.fresh().spent == 0.0 and clock.fresh().seconds == 10.0 and not clock.fresh().started
    assert agreed(SINGLE, torch.device("cpu"))(3.5) == 3.5


def test_the_state_is_plain_data() -> None:
    time = Time()
    clock = Clock(10.0, time)
    clock.start()
    time.advance(2.0)
    clock.tick()
    schedule = OneCycle(torch.optim.Adam(nn.Linear(2, 1).parameters(), lr=0.1), 0.1, 10, 0.1)
    schedule.follow(clock)
    for state in (clock.state_dict(), schedule.state_dict()):
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        check_like(state, torch.load(buffer, weights_only=True))
    assert "clock" not in schedule.state_dict()


def test_progress_lines_count_seconds() -> None:
    stream = io.StringIO()
    lines = Lines(120, 0, "1 thread", stream, unit="s")
    for n in (3, 4, 0, 5):  # seconds pass by more than one at a step, or none
        lines.update(n)
    lines.update(108)
    said = stream.getvalue().splitlines()
    assert said[0] == "train: 0/120 s on 1 thread" and said[1].startswith("train: 7/120 s (5%)")
    assert said[2].startswith("train: 12/120 s (10%)") and said[3].startswith("train: 120/120 s (100%)")
    assert len(said) == 4


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf])
def test_a_budget_that_is_no_time_is_one_line(seconds: float) -> None:
    with pytest.raises(UserError, match=r"^a time budget must be a positive number of seconds, got"):
        Clock(seconds)


def test_a_process_knows_its_age() -> None:
    code = "import time; time.sleep(1.0); from training.deadline import process_age; print(process_age())"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    age = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout)
    assert age >= 1.0 - 0.02  # the kernel's tick


def test_a_fresh_run_with_no_time_left_is_one_line() -> None:
    from training.tasks.operator.program import check_room

    time = Time()
    clock = Clock(60.0, time)
    clock.start(50.0)  # a slow start
    clock.ends["evaluation"], clock.tail = 4.0, 8.0
    with pytest.raises(UserError, match=r"^--time 60s: 50.0s went before training .* 12.0s are needed .*--time$"):
        check_room(clock)
    clock.tail = 1.0
    check_room(clock)


def test_only_a_single_timed_process_leaves_without_teardown(monkeypatch: pytest.MonkeyPatch) -> None:
    from training.deadline import timed_command

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert timed_command(["--train", "a.npz", "--time", "2m"]) and timed_command(["--time=90s"])
    assert not timed_command(["--train", "a.npz", "--steps", "10"]) and not timed_command(["--timeout", "3"])
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not timed_command(["--time", "2m"])  # a rank of torchrun ends with its process group


def test_leave_flushes_and_ends_with_the_status() -> None:
    code = "from training.deadline import leave\nprint('written', end='')\nleave(3)\nprint('never')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent.parent
    )
    assert (done.returncode, done.stdout) == (3, "written")


@pytest.mark.parametrize(("ranked", "job", "status"), [(True, None, 0), (True, UserError("bad"), 2), (False, None, 0)])
def test_a_rank_leaves_after_its_group_and_a_single_process_returns(
    monkeypatch: pytest.MonkeyPatch, ranked: bool, job: Exception | None, status: int
) -> None:
    """A rank of torchrun ends through ``leave`` with the job's status, after ``teardown``; one process returns it."""
    import training.cli as cli

    calls: list[str] = []

    class Left(Exception):
        pass

    def teardown() -> bool:
        calls.append("teardown")
        return ranked

    def leave(code: int) -> None:
        calls.append(f"leave {code}")
        raise Left

    def work() -> None:
        if job is not None:
            raise job

    monkeypatch.setattr(cli, "teardown", teardown)
    monkeypatch.setattr(cli, "leave", leave)
    if ranked:
        with pytest.raises(Left):
            cli.run_cli("prog", work)
        assert calls == ["teardown", f"leave {status}"]
    else:
        assert cli.run_cli("prog", work) == status and calls == ["teardown"]
