r"""The one-cycle learning-rate schedule, as a pure function of a run's progress: :func:`one_cycle`.

The rate rises from ``lr / 25`` to its peak ``lr`` over the warm-up, then falls to ``lr / 250000``, each by half a
cosine (Smith & Topin's one-cycle policy, as :class:`torch.optim.lr_scheduler.OneCycleLR` draws it). With
``x ∈ [0, 1]`` the fraction of the run done, ``w ∈ [0, 1]`` the warm-up's fraction and
``c(a, b, p) = b + (a - b)(1 + cos πp) / 2`` (``a`` at ``p = 0``, ``b`` at ``p = 1``), the multiplier of ``lr`` is

.. code-block:: text

    c(1/25, 1, x / w)                  for x < w      (the warm-up)
    c(1, 1/250000, (x - w) / (1 - w))  for x >= w     (the annealing)

and Adam's first-moment decay (or SGD's momentum) moves the other way, ``0.95 -> 0.85 -> 0.95``
(:func:`one_cycle_momentum`); a parameter group that says ``"cycle_momentum": False`` (Muon's,
:class:`training.muon.Muon`) keeps its own. Because the schedule reads only the progress, a run may be driven by its
step count (:class:`OneCycle`, through :func:`step_progress`) or by the time spent against a deadline
(:meth:`OneCycle.follow`: ``x`` the :class:`~training.deadline.Clock`'s progress, the steps a cap).

:func:`step_progress` maps step ``s`` of ``n`` to the progress at which ``OneCycleLR`` evaluates it (its peak
at step ``w n - 1``), so the two agree wherever ``OneCycleLR`` is defined; it is defined for every ``n >= 1`` and
``w ∈ [0, 1]``, where ``OneCycleLR`` divides by zero when ``w n = 1``. A one-step run takes the peak rate; steps
past the end (a finished run extended) keep the final rate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.lr_scheduler import LRScheduler

if TYPE_CHECKING:
    from .deadline import Clock

#: the peak rate over the starting one (``OneCycleLR``'s ``div_factor``)
START_DIVISOR = 25.0
#: the starting rate over the final one (``OneCycleLR``'s ``final_div_factor``)
FINAL_DIVISOR = 1e4
#: the momentum at the peak rate, and at the start and end (``OneCycleLR``'s ``base_momentum``, ``max_momentum``)
MOMENTUM = (0.85, 0.95)


def _cosine(start: float, end: float, fraction: float) -> float:
    """``start`` at ``fraction = 0`` to ``end`` at ``1`` by half a cosine."""
    return end + (start - end) * (1.0 + math.cos(math.pi * fraction)) / 2.0


def _phase(progress: float, warmup: float) -> tuple[bool, float]:
    """``(rising, fraction of that phase done)`` at ``progress`` (both clamped to ``[0, 1]``)."""
    x, w = min(max(progress, 0.0), 1.0), min(max(warmup, 0.0), 1.0)
    if x < w:
        return True, x / w
    return False, 0.0 if w >= 1.0 else (x - w) / (1.0 - w)


def one_cycle(progress: float, warmup: float) -> float:
    """The multiplier of the peak learning rate at ``progress`` (the fraction of the run done, in ``[0, 1]``) for a
    warm-up of ``warmup`` (a fraction of the run, in ``[0, 1]``): in ``[1/250000, 1]``, ``1`` at the warm-up's end."""
    rising, fraction = _phase(progress, warmup)
    if rising:
        return _cosine(1.0 / START_DIVISOR, 1.0, fraction)
    return _cosine(1.0, 1.0 / (START_DIVISOR * FINAL_DIVISOR), fraction)


def one_cycle_momentum(progress: float, warmup: float) -> float:
    """The momentum (Adam's ``β₁``) at ``progress``: ``0.95`` falling to ``0.85`` at the peak rate, then back."""
    low, high = MOMENTUM
    rising, fraction = _phase(progress, warmup)
    return _cosine(high, low, fraction) if rising else _cosine(low, high, fraction)


def step_progress(step: int, steps: int, warmup: float) -> tuple[float, float]:
    """``(progress, warm-up)`` for step ``step`` (from 0) of a run of ``steps`` with a warm-up of ``warmup`` of them:
    :func:`one_cycle` of it is ``OneCycleLR``'s multiplier at that step wherever ``OneCycleLR`` is defined.

    ``OneCycleLR`` peaks at step ``e = warmup · steps - 1`` and ends at ``L = steps - 1``; here the run's span is
    ``[min(0, e), L]`` (a warm-up shorter than a step has ended before step 0), and a one-step run sits at its peak.
    Steps past ``L`` keep the final rate.
    """
    if steps <= 1:
        return 0.0, 0.0
    last = steps - 1
    peak = min(max(warmup, 0.0), 1.0) * steps - 1
    start = min(0.0, peak)
    span = last - start
    return (min(max(step, 0), last) - start) / span, (peak - start) / span


class OneCycle(LRScheduler):
    """:func:`one_cycle` by step count: ``OneCycle(optimiser, lr, steps, warmup)`` in place of ``OneCycleLR``
    (the same rates and momenta where that one is defined), for any ``steps >= 1`` and ``warmup ∈ [0, 1]``.

    Its state (a checkpoint's) records ``steps``, so a finished run resumed with more steps keeps its final rate.
    Following a clock (:meth:`follow`), the progress is the larger of the clock's and the steps' -- whichever
    ends first ends the cycle.
    """

    def __init__(self, optimiser: torch.optim.Optimizer, lr: float, steps: int, warmup: float) -> None:
        if type(steps) is not int or steps < 1:
            raise ValueError(f"OneCycle: steps must be an int >= 1, got {steps!r}")
        if not 0.0 <= warmup <= 1.0:
            raise ValueError(f"OneCycle: warmup must be a fraction in [0, 1], got {warmup!r}")
        self.peak, self.steps, self.warmup = float(lr), steps, float(warmup)
        self.clock: Clock | None = None
        super().__init__(optimiser)

    def follow(self, clock: Clock) -> None:
        """Follow ``clock`` from now on: the progress ``x = max(p, s / (n - 1))``, ``p`` the clock's
        (:attr:`~training.deadline.Clock.progress`, the fraction of the time for steps spent), ``s`` the step and
        ``n`` the steps, now a cap; the warm-up the same fraction ``warmup`` of the run. The rates change from the
        next ``step()`` (a resumed run's are its checkpoint's; a fresh run's first, ``lr / 25``, is the same).
        """
        self.clock = clock

    def get_lr(self) -> list[float | torch.Tensor]:
        """The rate of each parameter group at the current step (and its momentum set, as ``OneCycleLR`` does)."""
        if self.clock is None:
            progress, warmup = step_progress(self.last_epoch, self.steps, self.warmup)
        else:
            steps = self.last_epoch / (self.steps - 1) if self.steps > 1 else 1.0
            progress, warmup = max(self.clock.progress, steps), self.warmup
        momentum = one_cycle_momentum(progress, warmup)
        for group in self.optimizer.param_groups:
            _set_momentum(group, momentum)
        return [self.peak * one_cycle(progress, warmup) for _ in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Plain data: the step reached, the rates and the run's shape (not the clock, which a checkpoint keeps
        apart: :meth:`~training.deadline.Clock.state_dict`)."""
        return {k: v for k, v in super().state_dict().items() if k != "clock"}


def _set_momentum(group: dict[str, Any], momentum: float) -> None:
    if not group.get("cycle_momentum", True):
        return
    if "betas" in group:
        group["betas"] = (momentum, *group["betas"][1:])
    elif "momentum" in group:
        group["momentum"] = momentum
