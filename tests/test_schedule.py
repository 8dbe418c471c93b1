"""The one-cycle schedule (:mod:`training.schedule`): a pure function of progress, defined for every run length.

Its properties are checked by hypothesis over progress and warm-up (finite, positive, at most the peak, the peak
at the warm-up's end, rising then falling), and its rates and momenta by step against torch's own
:class:`~torch.optim.lr_scheduler.OneCycleLR` wherever that one is defined; at the lengths where it divides by
zero (``warmup × steps = 1``) or refuses (``warmup = 0``) the schedule still runs, from the first step to past the
last.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from training.schedule import FINAL_DIVISOR, START_DIVISOR, OneCycle, one_cycle, one_cycle_momentum, step_progress

FLOOR = 1 / (START_DIVISOR * FINAL_DIVISOR)
fractions = st.floats(0.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(x=fractions, w=fractions)
def test_finite_positive_and_at_most_the_peak(x: float, w: float) -> None:
    rate = one_cycle(x, w)
    assert math.isfinite(rate) and FLOOR * (1 - 1e-12) <= rate <= 1.0
    assert 0.85 - 1e-12 <= one_cycle_momentum(x, w) <= 0.95 + 1e-12


@settings(max_examples=300, deadline=None)
@given(w=fractions)
def test_the_peak_is_at_the_end_of_the_warmup(w: float) -> None:
    assert one_cycle(w, w) == 1.0 and one_cycle_momentum(w, w) == pytest.approx(0.85)
    assert one_cycle(1.0, w) == (1.0 if w == 1.0 else pytest.approx(FLOOR))
    assert one_cycle(0.0, w) == (pytest.approx(1 / START_DIVISOR) if w > 0 else 1.0)


@settings(max_examples=300, deadline=None)
@given(a=fractions, b=fractions, w=fractions)
def test_rising_before_the_peak_and_falling_after(a: float, b: float, w: float) -> None:
    lo, hi = min(a, b), max(a, b)
    if hi <= w:
        assert one_cycle(lo, w) <= one_cycle(hi, w)
        assert one_cycle_momentum(lo, w) >= one_cycle_momentum(hi, w)
    if lo >= w:
        assert one_cycle(lo, w) >= one_cycle(hi, w)
        assert one_cycle_momentum(lo, w) <= one_cycle_momentum(hi, w)


def _rates(schedule: str, steps: int, warmup: float, extra: int = 0) -> list[tuple[float, float]]:
    """The (rate, β₁) of each of ``steps + extra`` Adam steps under ``schedule`` (stepped as the loop steps it)."""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=1e-3)
    if schedule == "ours":
        sched: torch.optim.lr_scheduler.LRScheduler = OneCycle(opt, 1e-3, steps, warmup)
    else:
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, 1e-3, total_steps=steps, pct_start=warmup)
    out = []
    for i in range(steps + extra):
        out.append((opt.param_groups[0]["lr"], opt.param_groups[0]["betas"][0]))
        opt.step()
        if schedule == "ours" or i < steps - 1:  # torch's refuses to step past its end
            sched.step()
    return out


@settings(max_examples=150, deadline=None)
@given(steps=st.integers(2, 300), warmup=st.floats(0.0, 1.0, exclude_min=True))
def test_equal_to_torch_one_cycle_where_that_is_defined(steps: int, warmup: float) -> None:
    try:
        reference = _rates("torch", steps, warmup)
    except ZeroDivisionError:  # warmup × steps = 1 (or a zero-length annealing): the case this schedule fixes
        assume(False)
    ours = _rates("ours", steps, warmup)
    for i, ((a, b), (c, d)) in enumerate(zip(reference, ours, strict=True)):
        assert c == pytest.approx(a, rel=1e-9, abs=0), (i, a, c)
        assert d == pytest.approx(b, rel=1e-12), (i, b, d)


@pytest.mark.parametrize("steps", [1, 2, 3, 10])
@pytest.mark.parametrize("warmup", [0.0, 0.1, 1 / 3, 0.5, 1.0])
def test_every_length_and_warmup_runs(steps: int, warmup: float) -> None:
    """Including where ``OneCycleLR`` divides by zero (``warmup × steps = 1``: 1 × 1, 0.5 × 2, 1/3 × 3, 0.1 × 10) or
    refuses (``warmup = 0``): finite positive rates, one peak at most, then the final rate kept past the end."""
    rates = [r for r, _ in _rates("ours", steps, warmup, extra=3)]
    assert all(math.isfinite(r) and r > 0 for r in rates)
    run, after = rates[:steps], rates[steps:]
    top = max(range(steps), key=run.__getitem__)
    assert all(run[i] <= run[i + 1] for i in range(top)) and all(run[i] >= run[i + 1] for i in range(top, steps - 1))
    assert after == [run[-1]] * 3
    if steps == 1:
        assert run == [1e-3]  # a one-step run takes the peak rate
    peak_step = warmup * steps - 1  # OneCycleLR's peak, where the warm-up ends
    if steps > 1 and float(peak_step).is_integer() and peak_step >= 0:
        assert run[int(peak_step)] == pytest.approx(1e-3)


def test_step_progress_spans_the_run() -> None:
    assert step_progress(0, 1, 0.3) == (0.0, 0.0)
    assert step_progress(0, 11, 1 / 11) == (0.0, 0.0)  # the warm-up ends at step 0: the first step is the peak
    assert step_progress(10, 11, 0.5) == (1.0, pytest.approx(4.5 / 10))
    assert step_progress(99, 11, 0.5) == step_progress(10, 11, 0.5)  # past the end: the end


def test_a_resumed_schedule_keeps_its_own_length() -> None:
    """The state restores ``steps``: a finished run extended keeps its final rate rather than rising again."""
    p = torch.nn.Parameter(torch.zeros(1))
    first = torch.optim.Adam([p], lr=1e-3)
    done = OneCycle(first, 1e-3, 10, 0.3)
    for _ in range(10):
        first.step()
        done.step()
    second = torch.optim.Adam([p], lr=1e-3)
    longer = OneCycle(second, 1e-3, 30, 0.3)
    longer.load_state_dict(done.state_dict())
    second.step()
    longer.step()
    assert longer.get_last_lr() == done.get_last_lr()


def test_bad_lengths_are_refused() -> None:
    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        OneCycle(opt, 1e-3, 0, 0.1)
    with pytest.raises(ValueError, match=r"warmup must be a fraction in \[0, 1\]"):
        OneCycle(opt, 1e-3, 10, 1.5)
