r"""Time-stepping with an operator model: a window of past states to the next, applied autoregressively.

A trajectory is ``(T, *grid[, C])``: ``T`` states of ``C`` fields on a grid. :func:`windows` cuts trajectories into
training pairs -- ``window`` consecutive states (stacked as ``window · C`` input channels, the oldest first) and
the state that follows -- which the operator task trains on like any other samples (teacher forcing: every input
an exact state). :func:`rollout` then applies a trained model to its own predictions: from the first ``window``
states it predicts the next, slides the window, and repeats for ``steps``. :func:`horizon_errors` reports the
relative L² error of each predicted step, and of the whole horizon at once (space and time together, the FNO
paper's figure for Navier--Stokes).

Training is teacher forcing by default (the pairs of :func:`windows`). :class:`UnrolledTask` trains on a short
unrolled loss instead: from a window of exact states the model predicts ``unroll`` states in turn, each from a
window that holds its own earlier predictions, and the loss is the mean of the steps' losses -- the errors a
rollout feeds itself are seen in training (gradients flow through the whole unroll).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from applicative.tensors import unflatten
from models.operator import OperatorModel
from operators import symmetry
from operators.dataset import Samples, samples
from operators.layout import Axis
from training.errors import InputError

from .config import Config
from .task import OperatorTask, losses

Step = Callable[[Tensor], Tensor]


def _fields(t: Tensor, dims: int) -> Tensor:
    """``(N, T, *grid)`` or ``(N, T, *grid, C)`` -> ``(N, T, *grid, C)``."""
    return t[..., None] if t.ndim == dims + 2 else t


def windows(
    trajectories: Tensor,
    window: int,
    axes: Sequence[Axis],
    *,
    where: str = "trajectories",
    key: str = "trajectories",
    log_input: bool = False,
    zero_tolerance: float | None = None,
) -> Samples:
    """Every run of ``window + 1`` consecutive states of ``trajectories`` ``(N, T, *grid[, C])`` as a checked pair:
    inputs ``(N (T - window), *grid, window C)`` (the states oldest first, each one's ``C`` fields together) and
    outputs ``(N (T - window), *grid, C)``. ``where`` and ``key`` are named in messages; ``log_input`` and
    ``zero_tolerance`` are :func:`~operators.dataset.samples`'."""
    dims = len(axes)
    t = _fields(trajectories, dims)
    if t.ndim != dims + 3:
        raise InputError(f"windows: {where} of shape {tuple(trajectories.shape)}, expected (N, T, *grid[, C])")
    steps = t.shape[1]
    if not 1 <= window < steps:
        raise InputError(f"windows: a window of {window} states needs trajectories longer than it, got {steps}")
    runs = t.unfold(1, window + 1, 1)  # (N, T - window, *grid, C, window + 1)
    runs = runs.movedim(-1, 2)  # (N, T - window, window + 1, *grid, C)
    history = runs[:, :, :window].movedim(2, -2).flatten(-2)  # (N, T - window, *grid, window C): state-major
    target = runs[:, :, window]
    return samples(
        history.flatten(0, 1),
        target.flatten(0, 1),
        axes,
        dims=dims,
        where=where,
        keys=(key, key),
        log_input=log_input,
        zero_tolerance=zero_tolerance,
    )


def model_step(model: OperatorModel) -> Step:
    """One step of ``model`` on a window ``(N, *grid, window C)``: its prediction at the same grid ``(N, *grid, C)``."""

    def step(x: Tensor) -> Tensor:
        return model.values(model(x), tuple(x.shape[1:-1]))

    return step


@torch.no_grad()
def rollout(step: Step | OperatorModel, history: Tensor, steps: int, dims: int) -> Tensor:
    """The ``steps`` states ``(N, steps, *grid, C)`` predicted autoregressively from ``history``
    ``(N, window, *grid[, C])``.

    ``step`` maps a window ``(N, *grid, window C)`` to the next state ``(N, *grid, C)``: an :class:`OperatorModel`
    (evaluated at the history's grid) or any function.
    """
    if steps < 1:
        raise InputError(f"rollout: steps must be >= 1, got {steps}")
    f = model_step(step) if isinstance(step, OperatorModel) else step
    h = _fields(history, dims)
    if h.ndim != dims + 3:
        raise InputError(f"rollout: history of shape {tuple(history.shape)}, expected (N, window, *grid[, C])")
    states = list(h.unbind(1))
    window = len(states)
    out = []
    for _ in range(steps):
        x = torch.stack(states[-window:], -2).flatten(-2)  # (N, *grid, window C)
        nxt = f(x).to(h.dtype)
        out.append(nxt)
        states.append(nxt)
    return torch.stack(out, 1)


def horizon_errors(pred: Tensor, exact: Tensor, axes: Sequence[Axis]) -> tuple[Tensor, Tensor]:
    """Relative L² errors of a rollout ``pred`` against ``exact`` (both ``(N, steps, *grid, C)``), integrated by the
    layouts' quadrature: per step ``(N, steps)``, and over the whole horizon ``(N,)``."""
    if pred.shape != exact.shape:
        raise InputError(f"horizon_errors: predictions {tuple(pred.shape)} against exact {tuple(exact.shape)}")
    grid = pred.shape[2:-1]
    w = torch.ones((), dtype=pred.dtype, device=pred.device)
    for i, (a, p) in enumerate(zip(axes, grid, strict=True)):
        wi = a.weights(p, pred.dtype, pred.device)
        w = w[..., None] * wi if i else wi
    w = w[..., None]  # the fields
    num = (w * (pred - exact).pow(2)).flatten(2).sum(-1)  # (N, steps)
    den = (w * exact.pow(2)).flatten(2).sum(-1)
    return (num / den).sqrt(), (num.sum(1) / den.sum(1)).sqrt()


class UnrolledTask(OperatorTask):
    """Training on trajectories ``(N, T, *grid[, C])`` with a loss unrolled over ``unroll`` steps from exact windows
    of ``window`` states (the trajectories' pairs fix the model's shape and scales, as for teacher forcing)."""

    def __init__(
        self, config: Config, trajectories: Tensor, axes: Sequence[Axis], window: int, unroll: int, device: torch.device
    ) -> None:
        t = unrollable(trajectories, len(axes), window, unroll, "UnrolledTask")
        super().__init__(config, windows(t, window, axes), {}, device)
        self.trajectories = t.to(device, self.model.dtype)
        self.window, self.unroll = window, unroll

    def train_step(self) -> Tensor:
        c = self.config
        length = self.window + self.unroll
        seq = draw_sequences(self.trajectories, length, c.batch, c.augment, self.axes, self.sampler)
        relative = c.loss == "relative"
        total = unrolled_loss(
            lambda x, y: losses(self.model, x, y, c.smooth, relative=relative), seq, self.window, self.unroll
        )
        self.optimise(total, clip=c.clip)
        return total


def unrollable(trajectories: Tensor, dims: int, window: int, unroll: int, who: str) -> Tensor:
    """``trajectories`` as ``(N, T, *grid, C)``, checked to hold ``window + unroll`` states (an :class:`InputError`
    naming ``who`` otherwise)."""
    t = _fields(trajectories, dims)
    if not 1 <= unroll <= t.shape[1] - window:
        raise InputError(f"{who}: unroll={unroll} must be in 1..{t.shape[1] - window} (T - window)")
    return t


def draw_sequences(
    trajectories: Tensor,
    length: int,
    batch: int,
    augment: symmetry.Augment,
    axes: Sequence[Axis],
    sampler: torch.Generator,
) -> Tensor:
    """``batch`` runs of ``length`` consecutive states ``(B, length, *grid, C)`` from ``trajectories``
    ``(N, T, *grid, C)``: a trajectory and a start each, then one symmetry move (``augment``) per run, all drawn
    from ``sampler`` in that order (so two tasks seeded alike draw the same runs)."""
    n, steps = trajectories.shape[:2]
    grid = tuple(trajectories.shape[2:-1])
    idx = torch.randint(0, n, (batch,), generator=sampler)
    start = torch.randint(0, steps - length + 1, (batch,), generator=sampler)
    times = start[:, None] + torch.arange(length)
    device = trajectories.device
    seq = trajectories[idx[:, None].to(device), times.to(device)]  # (B, length, *grid, C)
    if augment != "none":
        which = symmetry.draw(augment, batch, axes, grid, sampler)
        moved = symmetry.move(seq.movedim(1, -2).flatten(-2), which, augment, axes)
        seq = unflatten(moved, -1, (length, seq.shape[-1])).movedim(-2, 1)
    return seq


def unrolled_loss(
    step: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]], seq: Tensor, window: int, unroll: int
) -> Tensor:
    """The mean over ``unroll`` steps of ``step(x, target)``'s loss (per sample, averaged), each ``x`` the last
    ``window`` states of ``seq`` ``(B, window + unroll, *grid, C)`` with the predictions so far in place of the
    exact ones: ``step`` returns ``(loss, prediction)``."""
    states = list(seq[:, :window].unbind(1))
    total = seq.new_zeros(())
    for i in range(unroll):
        x = torch.stack(states[-window:], -2).flatten(-2)  # (B, *grid, window C)
        loss, pred = step(x, seq[:, window + i])
        total = total + loss.mean() / unroll
        states.append(pred)
    return total
