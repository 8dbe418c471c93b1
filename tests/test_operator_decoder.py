"""The operator model's pointwise decoder: its output against a plain numpy evaluation (Fourier sums, numpy's
Chebyshev series, the MLP by hand), the zero boundary held at the ends, anywhere and on grids alike, the model with it
off unchanged, gradients, refusals, the budget's count, and a trained run that loads back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev as C

import training
from applicative import InputError
from instances.axes import Axis
from models.operator import DECODER_WIDTH, OperatorModel, PointDecoder, SeriesHead
from operators.dataset import samples
from tests.operator_cases import periodic_inverse
from training.config import ConfigError
from training.tasks import operator
from training.tasks.operator.model import activations, config_of, decoder_for, record

PERIODIC = Axis("periodic")
ZERO = Axis("nodes", boundary="zero")
SIZES = {"modes": 9, "width": 8, "hidden": 16, "heads": 2, "depth": 1, "channels": 3}

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(axes: list[Axis], decoder: int, c_out: int = 2, seed: int = 0, **changes: object) -> OperatorModel:
    torch.manual_seed(seed)
    kwargs: dict[str, object] = {**SIZES, "dtype": torch.float64, **changes}
    return OperatorModel(axes, 2, c_out, decoder=decoder, **kwargs)  # type: ignore[arg-type]


def _mlp(head: PointDecoder, v: np.ndarray) -> np.ndarray:
    """The decoder's MLP in numpy (GELU by its erf form), without the output's scale and shift."""
    from scipy.special import erf

    def w(layer: torch.nn.Linear) -> tuple[np.ndarray, np.ndarray]:
        return layer.weight.detach().numpy(), layer.bias.detach().numpy()

    (p, pb), (q, qb) = w(head.lift), w(head.project)
    z = v @ p.T + pb
    return (0.5 * z * (1 + erf(z / np.sqrt(2)))) @ q.T + qb


def _standardised(model: OperatorModel) -> tuple[np.ndarray, np.ndarray]:
    """Give the output's standardisation values that are not the identity, and return (shift, scale)."""
    shift, scale = torch.tensor([0.3, -1.2], dtype=torch.float64), torch.tensor([0.5, 4.0], dtype=torch.float64)
    model.head.out_shift.copy_(shift)
    model.head.out_scale.copy_(scale)
    return shift.numpy(), scale.numpy()


def test_on_a_periodic_axis_the_output_is_the_mlp_of_the_fourier_sums_at_each_point() -> None:
    model = _model([PERIODIC], 6)
    assert isinstance(model.head, PointDecoder)
    shift, scale = _standardised(model)
    with torch.no_grad():
        c = model(torch.randn(2, 16, 2, dtype=torch.float64))
    assert c.shape == (2, SIZES["channels"], 9) and model.sizes == (9,)
    t = np.linspace(-1, 1, 23)
    ks = np.outer(np.pi * (t + 1), np.arange(1, 5))  # 1, cos πk(t+1), sin πk(t+1), interleaved
    basis = np.concatenate([np.ones((23, 1)), np.stack([np.cos(ks), np.sin(ks)], -1).reshape(23, 8)], 1)
    v = np.einsum("pk,bck->bpc", basis, c.numpy())
    want = _mlp(model.head, v) / scale + shift
    with torch.no_grad():
        got = model.at(c, [torch.from_numpy(t)])
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_on_a_zero_axis_it_is_numpys_chebyshev_series_decoded_and_multiplied_by_the_bubble() -> None:
    model = _model([ZERO], 6)
    assert isinstance(model.head, PointDecoder)
    shift, scale = _standardised(model)
    with torch.no_grad():
        c = model(torch.randn(2, 17, 2, dtype=torch.float64))
    assert c.shape == (2, SIZES["channels"], 9)  # the series it decodes: no imposed terms
    t = np.linspace(-1, 1, 31)
    v = np.stack([C.chebval(t, c[:, j].numpy().T) for j in range(c.shape[1])], -1)  # (b, p, C)
    want = (1 - t**2)[None, :, None] * _mlp(model.head, v) / scale + shift
    with torch.no_grad():
        got = model.at(c, [torch.from_numpy(t)])
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_the_zero_ends_hold_and_points_agree_with_grids_in_2d() -> None:
    model = _model([ZERO, PERIODIC], 5)
    _standardised(model)
    with torch.no_grad():
        c = model(torch.randn(3, 13, 12, 2, dtype=torch.float64))
        ts = [torch.linspace(-1, 1, 7, dtype=torch.float64), torch.linspace(-1, 0.9, 5, dtype=torch.float64)]
        grid = model.at(c, ts)
        mesh = torch.stack(torch.meshgrid(*ts, indexing="ij"), -1).reshape(-1, 2)
        points = model.at_points(c, mesh)
    assert grid.shape == (3, 7, 5, 2)
    torch.testing.assert_close(points, grid.reshape(3, 35, 2), atol=1e-12, rtol=0)
    # u = 0 at x = ±1 (the mean is not added where a boundary vanishes: fit_scales sets it to zero)
    model.fit_scales(torch.randn(4, 13, 12, 2, dtype=torch.float64), torch.randn(4, 13, 12, 2, dtype=torch.float64))
    assert torch.equal(model.head.out_shift, torch.zeros(2, dtype=torch.float64))
    with torch.no_grad():
        ends = model.at(c, ts)[:, [0, -1]]
    torch.testing.assert_close(ends, torch.zeros_like(ends), atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    ("axes", "changes", "width"),
    [
        ([PERIODIC], {}, DECODER_WIDTH),
        ([ZERO, PERIODIC], {}, 0),
        ([PERIODIC], {"log_input": True, "homogeneous": -1.0}, 0),
    ],
)
def test_the_default_chooses_the_decoder_from_the_axes(
    axes: list[Axis], changes: dict[str, object], width: int
) -> None:
    """Left at its default (``-1``), the decoder is the config's choice: on periodic axes an MLP of
    :data:`DECODER_WIDTH`, the series head where an axis is bounded or the model is homogeneous -- the model the
    explicit width builds, weight for weight."""
    torch.manual_seed(0)
    chosen = OperatorModel(axes, 2, 2, **SIZES, **changes, dtype=torch.float64)  # type: ignore[arg-type]
    explicit = _model(axes, width, **changes)
    assert isinstance(chosen.head, PointDecoder if width else SeriesHead)
    assert chosen.state_dict().keys() == explicit.state_dict().keys()
    for (name, a), b in zip(chosen.state_dict().items(), explicit.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    if width:
        assert chosen.head.lift.weight.shape[0] == width
    x = torch.rand(2, *([16] * len(axes)), 2, dtype=torch.float64) + 0.5
    assert torch.equal(chosen(x), explicit(x))


def test_gradients_reach_every_weight() -> None:
    model = _model([ZERO, PERIODIC], 4)
    c = model(torch.randn(2, 12, 12, 2, dtype=torch.float64))
    model.values(c, (12, 12)).pow(2).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_refusals_name_the_decoder() -> None:
    with pytest.raises(InputError, match=r"decoder must be an int >= -1 \(0: off, -1: chosen from the axes\)"):
        _model([PERIODIC], -2)
    with pytest.raises(InputError, match=r"grid_path must be an int >= 0 \(0: off\), got -1"):
        _model([PERIODIC], 0, grid_path=-1)
    with pytest.raises(InputError, match=r"decoder=8 with homogeneous=-1.0: .* use decoder=0"):
        _model([ZERO], 8, log_input=True, homogeneous=-1.0)
    with pytest.raises(ConfigError, match=r"homogeneous=-1.0, decoder=8: .* set decoder=0"):
        operator.Config(log_input=True, homogeneous=-1.0, decoder=8)


def test_the_budget_counts_the_decoder_from_the_built_model() -> None:
    shape = operator.Shape((ZERO, PERIODIC), 2, 1)
    config = operator.PRESETS["tiny"].replace(decoder=16)
    built = operator.build(config, shape)
    count = sum(p.numel() for p in built.parameters())
    head = (2 + 1) * 16 + (16 + 1) * 1  # P p, Q q: from the tiny preset's 2 functions to one output
    off = sum(p.numel() for p in operator.build(config.replace(decoder=0), shape).parameters())
    assert count == off - (2 + 1) * 1 + head  # the series head's combination of the 2 functions replaced
    assert operator.SPEC.estimate(record(config, shape), None).parameters == count  # built on the meta device
    assert activations(config, shape) > activations(config.replace(decoder=0), shape)
    assert config_of({k: v for k, v in record(config, shape).items() if k != "decoder"}).decoder == 0


def test_a_trained_run_with_a_decoder_loads_back_and_predicts_alike(tmp_path: Path) -> None:
    case = periodic_inverse()
    tr = samples(*case.sample(200, 32, 0), case.axes)
    te = samples(*case.sample(20, 32, 1), case.axes)
    config = operator.PRESETS["tiny"].replace(decoder=16, steps=400)
    run = operator.train(config, tr, {"test": te}, tmp_path / "run", progress=False)
    error = float(run.task.errors()["test"].mean())
    assert error < 0.35, error  # predicting zero is 1.0
    loaded = training.load(tmp_path / "run")
    assert isinstance(loaded.head, PointDecoder)
    at = [torch.linspace(0, 1, 41, dtype=torch.float64)]
    torch.testing.assert_close(
        operator.predict(loaded, te.inputs, at=at), operator.predict(run.trained.model, te.inputs, at=at)
    )


@pytest.mark.parametrize(
    ("axes", "changes", "want"),
    [
        ([PERIODIC], {}, 64),
        ([PERIODIC, PERIODIC], {}, 64),
        ([ZERO], {}, 0),
        ([PERIODIC, ZERO], {}, 0),
        ([PERIODIC], {"log_input": True, "homogeneous": -1.0}, 0),
        ([ZERO], {"decoder": 8}, 8),
        ([PERIODIC], {"decoder": 0}, 0),
    ],
)
def test_the_default_decodes_pointwise_on_periodic_grids_only(
    axes: list[Axis], changes: dict[str, object], want: int
) -> None:
    """``decoder = -1``: the decoder where every axis is periodic (fronts a series cannot hold), the series head where
    one is bounded (a smooth solution it holds exactly) or the model is homogeneous (its scaling is the head's)."""
    config = operator.PRESETS["tiny"].replace(**changes)
    assert config.decoder == changes.get("decoder", -1)
    shape = operator.Shape(tuple(axes), 1, 1)
    assert decoder_for(config, shape) == want
    model = operator.build(config, shape)
    assert isinstance(model.head, PointDecoder if want else SeriesHead)
    if want:
        assert model.head.lift.out_features == want
