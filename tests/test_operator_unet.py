"""The U-Net peer (training.tasks.operator.unet): its architecture counted by hand, any grid size, and that it
learns an exact map (the heat equation's, solved in Fourier space) trained as the plain FNO is."""

from __future__ import annotations

import pytest
import torch

from operators.dataset import samples
from operators.layout import Axis
from tests.operator_cases import heat
from training.tasks.operator import PRESETS
from training.tasks.operator.fno import count
from training.tasks.operator.peers import Plain
from training.tasks.operator.unet import LEVELS, UNet, UNetTask, unet_width


def _by_hand(dims: int, c_in: int, c_out: int, w: int) -> int:
    """The documented architecture's parameters: per level a residual block -- a group norm (scale and shift per
    channel) before each of two kernel-3 convolutions with biases, and a 1x1 convolution on the residual where the
    channels change -- the up path's block reading the skip's channels too, and a 1x1 projection."""
    k = 3**dims

    def block(a: int, b: int) -> int:
        return 2 * a + (a * b * k + b) + 2 * b + (b * b * k + b) + (a * b + b if a != b else 0)

    widths = [w * 2**i for i in range(LEVELS)]
    down = sum(block(c_in + dims if i == 0 else widths[i - 1], b) for i, b in enumerate(widths))
    up = sum(block(widths[i + 1] + widths[i], widths[i]) for i in range(LEVELS - 1))
    return down + up + (w * c_out + c_out)


@pytest.mark.parametrize("dims", [1, 2])
def test_the_parameters_are_the_documented_architectures(dims: int) -> None:
    for w in (1, 4, 9):
        assert count(UNet(dims, 2, 3, w, periodic=True)) == _by_hand(dims, 2, 3, w)
    w = unet_width(60_000, dims, 1, 1, periodic=False)
    assert abs(count(UNet(dims, 1, 1, w, periodic=False)) / 60_000 - 1) < 0.1


@pytest.mark.parametrize("grid", [(17,), (32,), (9, 13), (16, 16)])
def test_any_grid_size_maps_to_itself(grid: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    net = UNet(len(grid), 2, 3, 4, periodic=len(grid) == 1)
    out = net(torch.randn(5, 2, *grid))
    assert out.shape == (5, 3, *grid) and bool(torch.isfinite(out).all())


def test_it_learns_an_exact_map_trained_as_the_plain_fno() -> None:
    torch.set_num_threads(1)
    periodic = (Axis("periodic"),)
    train, test = samples(*heat(64, 32, 0), periodic), samples(*heat(16, 32, 1), periodic)
    cfg = PRESETS["tiny"].replace(steps=300, batch=16)
    task = UNetTask(cfg, Plain(lr=1e-2, data="standardised"), train, 3000)
    before = float(task.errors(test).mean())
    for _ in range(cfg.steps):
        task.train_step()
    after = float(task.errors(test).mean())
    assert after < before / 10 and after < 0.08, (before, after)
