"""The plain FNO peer (training.tasks.operator.peers): its loss, data transforms, schedules, batches and training.

References: the loss written out by hand, numpy's per-point statistics, torch's schedulers' rates at known steps,
the operator model's own sampler, and the heat equation's exact Fourier multiplier (a linear map an FNO learns).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from operators.dataset import samples
from operators.layout import Axis
from training.tasks.operator import Config
from training.tasks.operator.task import OperatorTask

pytest.importorskip("neuralop")
from training.tasks.operator.peers import SWEEP, Plain, PlainFNOTask, _Scales, plain_loss

PERIODIC = (Axis("periodic"),)


pytestmark = pytest.mark.usefixtures("one_thread")


def _heat(count: int, points: int, seed: int, t: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """Random band-limited periodic inputs and their heat flow ``e^{t ∂²}`` (exact per Fourier mode)."""
    g = torch.Generator().manual_seed(seed)
    k = torch.arange(points // 2 + 1, dtype=torch.float64)
    spectrum = torch.complex(torch.randn(count, len(k), generator=g), torch.randn(count, len(k), generator=g))
    spectrum = spectrum.to(torch.complex128) * (k <= 6) / (1 + k) ** 2
    x = torch.fft.irfft(spectrum, n=points) * points
    y = torch.fft.irfft(spectrum * torch.exp(-t * (2 * math.pi * k) ** 2), n=points) * points
    return x, y


def test_the_relative_loss_is_the_norm_ratio_written_out() -> None:
    pred, exact = torch.randn(3, 8, 2, dtype=torch.float64), torch.randn(3, 8, 2, dtype=torch.float64)
    w = [torch.full((8,), 0.25, dtype=torch.float64)]
    by_hand = [
        math.sqrt(float(((pred[i] - exact[i]) ** 2).sum() * 0.25) / float((exact[i] ** 2).sum() * 0.25))
        for i in range(3)
    ]
    torch.testing.assert_close(plain_loss(pred, exact, w, "relative"), torch.tensor(by_hand).mean().double())
    torch.testing.assert_close(plain_loss(pred, exact, w, "squared"), torch.tensor(by_hand).pow(2).mean().double())


def test_gaussian_scaling_is_per_point_and_resamples_to_another_grid() -> None:
    x, y = _heat(40, 16, 0)
    s = _Scales("gaussian", samples(x, y, PERIODIC))
    encoded = s.encode(x[..., None].double()).double()[:, 0]  # (40, 16)
    np.testing.assert_allclose(encoded.mean(0).numpy(), 0, atol=1e-6)
    np.testing.assert_allclose(encoded.std(0).numpy(), 1, atol=1e-5)
    ys = y[..., None]
    torch.testing.assert_close(s.decode(((ys - s.y[0]) / s.y[1]).movedim(-1, 1)), ys)
    # on a grid twice as fine the statistics are interpolated linearly between the training nodes
    shift, _ = s._at(s.x, torch.zeros(1, 31, 1, dtype=torch.float64))
    torch.testing.assert_close(shift[::2], s.x[0])
    torch.testing.assert_close(shift[1::2], (s.x[0][:-1] + s.x[0][1:]) / 2)


@pytest.mark.parametrize(
    ("schedule", "rates"),
    [("cosine", {0: 1e-3, 50: 5e-4, 100: 0.0}), ("halvings", {0: 1e-3, 19: 1e-3, 20: 5e-4, 99: 6.25e-5})],
)
def test_schedules(schedule: str, rates: dict[int, float]) -> None:
    x, y = _heat(8, 16, 1)
    task = PlainFNOTask(
        Config(steps=100, batch=4), Plain(width=4, modes=4, schedule=schedule), samples(x, y, PERIODIC), 0
    )  # type: ignore[arg-type]
    seen = {}
    for i in range(101):
        seen[i] = task.optimiser.param_groups[0]["lr"]
        if i < 100:
            task.train_step()
    for step, rate in rates.items():
        assert seen[step] == pytest.approx(rate, abs=1e-12), (step, seen[step])


def test_batches_are_the_operator_models_draws() -> None:
    x, y = _heat(30, 16, 2)
    train = samples(x, y, PERIODIC)
    cfg = PRESETS_TINY.replace(steps=5, batch=4, augment="shifts")
    ours = OperatorTask(cfg, train, {}, torch.device("cpu"))
    peer = PlainFNOTask(cfg, Plain(width=4, modes=4), train, 0)
    for _ in range(3):
        ours.train_step()
        peer.train_step()
    assert torch.equal(ours.sampler.get_state(), peer.sampler.get_state())


def test_learns_the_heat_equation_and_matches_the_budget() -> None:
    x, y = _heat(200, 32, 3)
    xt, yt = _heat(50, 32, 4)
    cfg = Config(steps=300, batch=16)
    task = PlainFNOTask(cfg, Plain(modes=8), samples(x, y, PERIODIC), 3000)
    assert abs(task.parameters / 3000 - 1) < 0.15
    before = float(task.errors(samples(xt, yt, PERIODIC)).mean())
    for _ in range(cfg.steps):
        task.train_step()
    after = float(task.errors(samples(xt, yt, PERIODIC)).mean())
    assert after < 0.2 * before, (before, after)


def test_equal_parameters_count_real_numbers_as_neuraloperator_does() -> None:
    """A complex spectral weight is two real numbers: the FNO sized to a budget holds that many real weights, as
    neuraloperator's own ``count_model_params`` counts them (counting ``numel()`` gave it nearly twice the budget)."""
    from neuralop.utils import count_model_params

    from training.tasks.operator.fno import count, fno, width_for

    model = fno(1, 1, 1, 20, 16, None)
    assert count(model) == count_model_params(model) > sum(p.numel() for p in model.parameters())
    hidden = width_for(55_000, 1, 1, 1, 16, None)
    assert abs(count_model_params(fno(1, 1, 1, hidden, 16, None)) / 55_000 - 1) < 0.05


def test_the_sweep_differs_in_one_setting_each() -> None:
    labels = [p.label() for p in SWEEP]
    assert labels[0] == "plain" and len(set(labels)) == len(labels)
    assert all("," not in label for label in labels)


PRESETS_TINY = Config(modes=8, width=8, hidden=16, heads=2, depth=1, reader_width=8, channels=2, frequencies=2)


def test_muon_steps_the_fnos_channel_mixers_and_spectral_weights_and_adam_the_rest() -> None:
    from training.muon import Muon

    x, y = _heat(8, 16, 5)
    task = PlainFNOTask(Config(steps=4, batch=4), Plain(width=6, modes=4, optimiser="muon"), samples(x, y, PERIODIC), 0)
    assert isinstance(task.optimiser, Muon)
    muon, modal, adam = task.optimiser.param_groups
    convs = [m.weight for m in task.model.fno_blocks.modules() if isinstance(m, torch.nn.Conv1d)]
    assert [id(p) for p in muon["params"]] == [id(p) for p in convs] and len(convs) == 12
    spectral = [p for p in task.model.parameters() if p.is_complex()]
    assert [id(p) for p in modal["params"]] == [id(p) for p in spectral] and len(spectral) == 4
    lifting = [p for n, p in task.model.named_parameters() if n.startswith(("lifting", "projection"))]
    assert lifting and all(any(p is q for q in adam["params"]) for p in lifting)
    before = [p.detach().clone() for p in task.model.parameters()]
    task.train_step()
    assert all(not torch.equal(b, p) for b, p in zip(before, task.model.parameters(), strict=True) if b.ndim >= 2)
