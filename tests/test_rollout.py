"""Time-stepping with the operator model: windows of a trajectory, autoregressive rollout, errors over the horizon,
against a heat equation solved exactly in Fourier space (a hand-written simulation)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

from operators.layout import Axis
from training.tasks.operator import PRESETS, InputError, train
from training.tasks.operator.rollout import horizon_errors, rollout, windows

AXES = (Axis("periodic"),)
NU, DT = 0.01, 0.5


def heat(n: int, steps: int, points: int, seed: int) -> torch.Tensor:
    """``u_t = ν u_xx`` on the circle ``[0, 1)``, exactly: each mode ``e^{2πikx}`` decays by ``e^{-ν (2πk)² Δt}``
    a step. Random low modes; ``(n, steps, points)``."""
    rng = np.random.default_rng(seed)
    x = np.arange(points) / points
    k = np.arange(1, 5)
    a, b = rng.standard_normal((2, n, 4))
    t = np.arange(steps) * DT
    decay = np.exp(-NU * (2 * math.pi * k[None, :]) ** 2 * t[:, None])  # (steps, 4)
    u = np.einsum("nk,tk,xk->ntx", a, decay, np.cos(2 * math.pi * np.outer(x, k)))
    u += np.einsum("nk,tk,xk->ntx", b, decay, np.sin(2 * math.pi * np.outer(x, k)))
    return torch.from_numpy(u)


def exact_step(x: torch.Tensor) -> torch.Tensor:
    """The heat equation's exact step from the window's last state (its last channel): ``(N, P, w) -> (N, P, 1)``."""
    last = x[..., -1]
    k = torch.fft.rfftfreq(last.shape[-1], 1 / last.shape[-1], dtype=torch.float64)
    return torch.fft.irfft(torch.fft.rfft(last) * torch.exp(-NU * (2 * math.pi * k) ** 2 * DT), last.shape[-1])[
        ..., None
    ]


def two_steps(
    step: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]], seq: torch.Tensor
) -> torch.Tensor:
    """The loss unrolled over two steps, by hand, on runs ``seq`` ``(N, 4, *grid)``: windows of two states, the
    second fed back from ``step(window, target) -> (mean loss, prediction)``."""
    with torch.no_grad():
        first, pred = step(seq[:, :2].movedim(1, -2).flatten(-2), seq[:, 2])
        second, _ = step(torch.stack([seq[:, 1], pred], -2).flatten(-2), seq[:, 3])
    return (first + second) / 2


def test_windows_pair_each_run_of_states_with_the_next() -> None:
    u = heat(3, 6, 16, 0)
    s = windows(u, 2, AXES)
    assert s.inputs.shape == (3 * 4, 16, 2) and s.outputs.shape == (3 * 4, 16, 1)
    torch.testing.assert_close(s.inputs[5, :, 0], u[1, 1])  # trajectory 1, start 1: states 1 and 2, then 3
    torch.testing.assert_close(s.inputs[5, :, 1], u[1, 2])
    torch.testing.assert_close(s.outputs[5, :, 0], u[1, 3])
    with pytest.raises(InputError, match="longer than it"):
        windows(u, 6, AXES)


def test_an_exact_step_rolls_out_the_exact_trajectory_and_errors_are_relative_l2() -> None:
    u = heat(4, 8, 32, 1)
    pred = rollout(exact_step, u[:, :2], 6, dims=1)
    torch.testing.assert_close(pred[..., 0], u[:, 2:], rtol=1e-10, atol=1e-12)
    noisy = pred + 0.01 * torch.randn_like(pred)
    per_step, total = horizon_errors(noisy, u[:, 2:, :, None], AXES)
    want = ((noisy[..., 0] - u[:, 2:]).pow(2).sum(-1) / u[:, 2:].pow(2).sum(-1)).sqrt()  # uniform weights
    torch.testing.assert_close(per_step, want)
    want_total = ((noisy[..., 0] - u[:, 2:]).pow(2).sum((1, 2)) / u[:, 2:].pow(2).sum((1, 2))).sqrt()
    torch.testing.assert_close(total, want_total)


def test_a_trained_model_rolls_out_with_its_error_reported_per_step() -> None:
    torch.set_num_threads(1)
    train_set = windows(heat(40, 8, 32, 2), 2, AXES)
    run = train(PRESETS["tiny"].replace(steps=300, modes=9), train_set, {}, None, progress=False)
    test = heat(6, 8, 32, 3)
    pred = rollout(run.trained.model, test[:, :2], 6, dims=1)
    per_step, total = horizon_errors(pred, test[:, 2:, :, None], AXES)
    assert per_step.shape == (6, 6) and bool(torch.isfinite(per_step).all())
    assert float(per_step[:, 0].mean()) < 0.3  # one step: far better than predicting zero (1.0)
    assert bool((total >= per_step.min(1).values - 1e-12).all() and (total <= per_step.max(1).values + 1e-12).all())


def test_an_unrolled_loss_trains_through_the_models_own_predictions() -> None:
    """Two steps unrolled from exact windows: the loss is the mean of both steps' losses, the second computed from a
    window holding the first prediction (checked against the same loss computed by hand on the task's model)."""
    from training.tasks.operator.rollout import UnrolledTask
    from training.tasks.operator.task import losses

    torch.set_num_threads(1)
    traj = heat(12, 6, 16, 4)
    cfg = PRESETS["tiny"].replace(modes=9, steps=50, batch=4, augment="shifts", dtype="float64")
    task = UnrolledTask(cfg, traj, AXES, window=2, unroll=2, device=torch.device("cpu"))
    state = torch.get_rng_state(), task.sampler.get_state()
    # the same draws by hand: trajectory and start, the shift, then two steps fed back
    g = torch.Generator()
    g.set_state(state[1])
    idx = torch.randint(0, 12, (4,), generator=g)
    start = torch.randint(0, 6 - 2 - 2 + 1, (4,), generator=g)
    from operators import symmetry

    which = symmetry.draw("shifts", 4, AXES, (16,), g)
    seq = traj[idx[:, None], start[:, None] + torch.arange(4)][..., None]  # (4, 4, 16, 1)
    seq = torch.stack([symmetry.move(seq[:, i], which, "shifts", AXES) for i in range(4)], 1)

    def step(x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loss, pred = losses(task.model, x, target, task.config.smooth)
        return loss.mean(), pred

    want = two_steps(step, seq)
    got = task.train_step()
    torch.testing.assert_close(got.detach(), want, rtol=1e-10, atol=1e-12)
    for _ in range(30):
        task.train_step()
    assert float(task.train_step().detach()) < float(want)
    with pytest.raises(InputError, match=r"unroll=5 must be in 1\.\.4"):
        UnrolledTask(cfg, traj, AXES, window=2, unroll=5, device=torch.device("cpu"))


def test_the_peer_unrolls_as_the_operator_model_does() -> None:
    """The FNO's unrolled loss: the same runs drawn from the same seed as :class:`UnrolledTask`'s, two steps fed
    back, checked against the same loss computed by hand on the peer's own model."""
    pytest.importorskip("neuralop")
    from training.tasks.operator.fno import NAVIER_STOKES, UnrolledFNOTask
    from training.tasks.operator.rollout import UnrolledTask, draw_sequences
    from training.tasks.operator.task import relative_sq

    torch.set_num_threads(1)
    traj = heat(12, 6, 16, 4)
    cfg = PRESETS["tiny"].replace(modes=9, steps=50, batch=4, augment="shifts")
    cpu = torch.device("cpu")
    peer = UnrolledFNOTask(cfg, NAVIER_STOKES, traj, AXES, window=2, unroll=2, params=3000, device=cpu)
    ours = UnrolledTask(cfg, traj, AXES, window=2, unroll=2, device=cpu)
    g = torch.Generator()
    g.set_state(peer.sampler.get_state())
    seq = draw_sequences(peer.trajectories, 4, 4, "shifts", AXES, g)
    g.set_state(ours.sampler.get_state())
    assert torch.equal(draw_sequences(peer.trajectories, 4, 4, "shifts", AXES, g), seq)  # the same runs for both

    def step(states: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = (states - peer.prep.shift.float()) / peer.prep.scale.float()
        pred = peer.model(x.movedim(-1, 1)).movedim(1, -1) / peer.scale
        return relative_sq(pred, target, peer.weights).mean(), pred

    want = two_steps(step, seq)
    got = peer.train_step()
    torch.testing.assert_close(got.detach(), want, rtol=1e-5, atol=1e-7)
    for _ in range(30):
        peer.train_step()
    assert float(peer.train_step().detach()) < float(want)
    with pytest.raises(InputError, match=r"UnrolledFNOTask: unroll=5 must be in 1\.\.4"):
        UnrolledFNOTask(cfg, NAVIER_STOKES, traj, AXES, window=2, unroll=5, params=3000, device=cpu)
