"""The operator model's grid path: its fit against numpy's FFT and Chebyshev fit, the model with it off unchanged,
its shapes at other resolutions, its gradients, its refusals and its parameters counted by the budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev as C

from applicative import InputError
from instances.axes import Axis
from models.operator import GridPath, OperatorModel, Reading
from models.operator._grid_path import fit
from training.config import ConfigError
from training.tasks import operator
from training.tasks.operator.model import record

PERIODIC = Axis("periodic")
ZERO = Axis("nodes", boundary="zero")
SIZES = {"modes": 9, "width": 8, "hidden": 16, "heads": 2, "depth": 1, "channels": 3}


pytestmark = pytest.mark.usefixtures("one_thread")


def _model(axes: list[Axis], grid_path: int, seed: int = 0, **changes: object) -> OperatorModel:
    torch.manual_seed(seed)
    kwargs: dict[str, object] = {**SIZES, "dtype": torch.float64, **changes}
    return OperatorModel(axes, 2, 1, grid_path=grid_path, **kwargs)  # type: ignore[arg-type]


def test_the_fit_on_a_periodic_axis_is_numpys_fft_truncated() -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal(40)
    f = np.fft.rfft(v) / len(v)
    want = [f[0].real]
    for k in range(1, 5):
        want += [2 * f[k].real, -2 * f[k].imag]
    got = fit(PERIODIC, 40, 9, torch.float64, torch.device("cpu")) @ torch.from_numpy(v)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


@pytest.mark.parametrize("layout", ["nodes", "chebyshev", "centres"])
def test_the_fit_on_a_bounded_axis_is_numpys_weighted_chebyshev_fit(layout: str) -> None:
    axis = Axis(layout)
    rng = np.random.default_rng(1)
    v = rng.standard_normal(25)
    t, w = axis.t(25).numpy(), axis.weights(25).numpy()
    want = C.chebfit(t, v, 8, w=np.sqrt(w))  # numpy minimises Σ (w_i (y_i - p(t_i)))²
    got = fit(axis, 25, 9, torch.float64, torch.device("cpu")) @ torch.from_numpy(v)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-10)


@pytest.mark.parametrize("axes", [[PERIODIC], [ZERO, PERIODIC]])
def test_off_builds_todays_model_and_on_starts_from_it(axes: list[Axis]) -> None:
    """``grid_path=0`` adds nothing: the same parameters and outputs as a model built without the argument; on, the
    path's last layer starts at zero, so the same seed's model gives the same output until it trains."""
    torch.manual_seed(0)
    today = OperatorModel(axes, 2, 1, **SIZES, dtype=torch.float64)  # type: ignore[arg-type]
    off, on = _model(axes, 0), _model(axes, 6)
    assert off.grid is None and isinstance(on.grid, GridPath)
    assert today.state_dict().keys() == off.state_dict().keys()
    x = torch.randn(3, *([12] * len(axes)), 2, dtype=torch.float64)
    for (name, a), b in zip(today.state_dict().items(), off.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert torch.equal(today(x), off(x))
    assert torch.equal(today(x), on(x))
    extra = sum(p.numel() for p in on.grid.parameters())
    assert sum(p.numel() for p in on.parameters()) == sum(p.numel() for p in today.parameters()) + extra
    assert extra == (3 + 2 + 1) * 6 + (6 + 1) * 3  # [A P] a, Q q


def test_the_path_adds_its_pointwise_mlp_fitted_back_to_the_series() -> None:
    """On one periodic axis, against a plain computation: the functions at the samples, the MLP there, the FFT."""
    model = _model([PERIODIC], 5)
    assert model.grid is not None
    torch.nn.init.normal_(model.grid.project.weight)
    x = torch.randn(2, 16, 2, dtype=torch.float64)
    v = torch.randn(2, 9, 3, dtype=torch.float64)
    s = torch.arange(16, dtype=torch.float64) / 16 * 2 * torch.pi  # π (t + 1)
    k = torch.arange(1, 5, dtype=torch.float64)
    basis = torch.cat(
        [torch.ones(16, 1), torch.stack([torch.cos(s[:, None] * k), torch.sin(s[:, None] * k)], -1).flatten(1)], 1
    )
    g = torch.einsum("pk,bkc->bpc", basis.double(), v)
    lift, project = model.grid.lift, model.grid.project
    r = project(torch.nn.functional.gelu(lift(torch.cat([g, x], -1)))).detach().numpy()
    f = np.fft.rfft(r, axis=1) / 16
    want = np.concatenate([f[:, :1].real, np.stack([2 * f[:, 1:5].real, -2 * f[:, 1:5].imag], 2).reshape(2, 8, 3)], 1)
    np.testing.assert_allclose(model.grid(v, x).detach().numpy(), want, atol=1e-12)


def test_shapes_at_other_resolutions_and_the_zero_boundary() -> None:
    model = _model([ZERO, PERIODIC], 4)
    assert model.grid is not None
    torch.nn.init.normal_(model.grid.project.weight)
    n = (SIZES["modes"] + 2, SIZES["modes"])
    for grid in [(9, 12), (17, 30)]:
        with torch.no_grad():
            u = model(torch.randn(2, *grid, 2, dtype=torch.float64))
        assert u.shape == (2, 1, *n)
        on = model.values(u, (21, 25))  # anywhere: the output is still a series
        assert on.shape == (2, 21, 25, 1)
        torch.testing.assert_close(on[:, 0], torch.zeros_like(on[:, 0]), atol=1e-12, rtol=0)  # the zero ends held


def test_a_smooth_input_is_read_alike_at_fine_resolutions() -> None:
    """The fit tends to the projection of a fixed function: 128 and 512 samples of the same input agree."""
    model = _model([PERIODIC], 8, reading=Reading(kind="fourier"))
    assert model.grid is not None
    torch.nn.init.normal_(model.grid.project.weight)

    def at(p: int) -> torch.Tensor:
        s = torch.arange(p, dtype=torch.float64) / p * 2 * torch.pi
        return torch.stack([torch.cos(s) + 0.3 * torch.sin(3 * s), torch.sin(2 * s)], -1)[None]

    with torch.no_grad():
        coarse, fine, finest = model(at(32)), model(at(128)), model(at(512))
    torch.testing.assert_close(fine, finest, atol=1e-10, rtol=0)
    assert (coarse - finest).abs().max() > (fine - finest).abs().max()


def test_gradients_reach_every_weight_of_the_path() -> None:
    model = _model([ZERO, PERIODIC], 4)
    assert model.grid is not None
    model(torch.randn(2, 12, 12, 2, dtype=torch.float64)).pow(2).sum().backward()
    assert model.grid.project.weight.grad is not None and model.grid.project.weight.grad.abs().sum() > 0
    torch.nn.init.normal_(model.grid.project.weight)
    model.zero_grad()
    model(torch.randn(2, 12, 12, 2, dtype=torch.float64)).pow(2).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_refusals_name_the_grid_path() -> None:
    with pytest.raises(InputError, match=r"grid_path must be an int >= 0"):
        _model([PERIODIC], -1)
    model = _model([PERIODIC], 4)
    with pytest.raises(InputError, match=r"axis x has 7 samples, fewer than the 9 terms the grid path fits"):
        model(torch.randn(1, 7, 2, dtype=torch.float64))
    with pytest.raises(ConfigError, match=r"config field grid_path=-1: must be >= 0"):
        operator.Config(grid_path=-1)


def test_the_budget_counts_the_path_from_the_built_model() -> None:
    shape = operator.Shape((ZERO, PERIODIC), 2, 1)
    config = operator.PRESETS["tiny"].replace(grid_path=16)
    built = operator.build(config, shape)
    count = sum(p.numel() for p in built.parameters())
    assert count == sum(p.numel() for p in operator.build(config.replace(grid_path=0), shape).parameters()) + (
        (2 + 2 + 1) * 16 + (16 + 1) * 2
    )
    assert operator.SPEC.estimate(record(config, shape), None).parameters == count  # built on the meta device
