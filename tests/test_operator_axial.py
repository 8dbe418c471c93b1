"""The operator model's axial form on two axes: against a per-point loop with numpy's bases (each axis's Funcformer at
every point of the other, composed; or interleaved, layer by layer), one point's change reaching the whole plane, the
config building it, a checkpoint of the composed form read as one, the budget counting it, its gradients and its
refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev as C

from applicative import Field, InputError, ScaledSoftmax, Structure
from instances import Chebyshev, Fourier, Vector
from instances.axes import Axis
from models.funcformer import FuncformerConfig
from models.operator import AlongAxes, OperatorModel
from training.budget import layer_activations
from training.tasks import operator
from training.tasks.operator.model import activations, config_of, record

PERIODIC = Axis("periodic")
ZERO = Axis("nodes", boundary="zero")
SIZES = {"modes": 7, "width": 8, "hidden": 16, "heads": 2, "depth": 1, "channels": 3}

pytestmark = pytest.mark.usefixtures("one_thread")


def _basis(axis: Structure) -> np.ndarray:
    """The series' basis at its ``n`` points, written here: ``(points, terms)``. Fourier: ``1, cos kθ, sin kθ`` at
    ``t_j = -1 + 2j/n`` (``θ = π(t + 1)``); Chebyshev: ``T_k`` at the first-kind points, increasing."""
    n = axis.size
    if isinstance(axis, Fourier):
        theta = np.pi * (1 + (-1 + 2 * np.arange(n) / n))
        k = np.arange(1, (n - 1) // 2 + 1)
        cols = [np.ones(n)] + [f(kk * theta) for kk in k for f in (np.cos, np.sin)]
        return np.stack(cols, 1)
    t = np.sort(np.cos(np.pi * (2 * np.arange(n) + 1) / (2 * n)))
    return C.chebvander(t, n - 1)


def _reference(along: AlongAxes, f: torch.Tensor) -> torch.Tensor:
    """``F_y ∘ F_x`` by loops: the values at each point of the other axis (numpy's basis), one Funcformer call per
    point, the coefficients back by numpy's inverse of the basis."""
    assert along.y is not None
    x, y = along.domain
    vx, vy = (torch.from_numpy(_basis(a)) for a in (x, y))
    ix, iy = (torch.from_numpy(np.linalg.inv(_basis(a))) for a in (x, y))
    g = torch.einsum("jl,bilc->bijc", vy, f)  # values along y
    rows = [along.x(Field(g[:, :, j], (x, Vector(f.shape[-1])))).tensor for j in range(y.size)]
    h = torch.einsum("lj,bijc->bilc", iy, torch.stack(rows, 2))  # coefficients along y
    g = torch.einsum("ik,bklc->bilc", vx, h)  # values along x
    cols = [along.y(Field(g[:, i], (y, Vector(f.shape[-1])))).tensor for i in range(x.size)]
    return torch.einsum("ki,bilc->bklc", ix, torch.stack(cols, 1))


def _interleaved(along: AlongAxes, f: torch.Tensor) -> torch.Tensor:
    """Layer by layer by loops: ``F_x``'s lift at each point ``y_j`` (numpy's basis) with ``F_y``'s position there;
    then each layer along ``x`` at every ``y_j`` and along ``y`` at every ``x_i``, the state moved between the two
    representations by numpy's bases; ``F_x``'s lowering, the coefficients back by numpy's inverse."""
    fx, fy = along.x, along.y
    assert fy is not None
    x, y = along.domain
    vx, vy = (torch.from_numpy(_basis(a)) for a in (x, y))
    ix, iy = (torch.from_numpy(np.linalg.inv(_basis(a))) for a in (x, y))
    g = torch.einsum("jl,bilc->bijc", vy, f)  # x coefficients, y values
    h = torch.stack([fx.lift(Field(g[:, :, j], (x, Vector(f.shape[-1])))).tensor for j in range(y.size)], 2)
    if fy.position is not None:
        h = h + torch.einsum("jl,lw->jw", vy, fy.position)[None, None]
    for i in range(len(fx.transformer.layers)):
        h = torch.stack([fx.layer(i, Field(h[:, :, j], (x, fx.model))).tensor for j in range(y.size)], 2)
        h = torch.einsum("ik,lj,bkjw->bilw", vx, iy, h)  # x values, y coefficients
        h = torch.stack([fy.layer(i, Field(h[:, k], (y, fy.model))).tensor for k in range(x.size)], 1)
        h = torch.einsum("ki,jl,bilw->bkjw", ix, vy, h)  # x coefficients, y values
    out = torch.stack([fx.lower(Field(h[:, :, j], (x, fx.model))).tensor for j in range(y.size)], 2)
    return torch.einsum("lj,bijc->bilc", iy, out)


def _along(domain: tuple[Structure, Structure], axial: bool = True, interleaved: bool = False) -> AlongAxes:
    torch.manual_seed(0)
    config = FuncformerConfig(heads=2, depth=2, normalise=ScaledSoftmax(0.5), window=4.0, convolution=True)
    return AlongAxes(domain, 3, 8, 16, config, axial=axial, interleaved=interleaved, dtype=torch.float64)


DOMAINS = [(Fourier(7), Fourier(5)), (Chebyshev(6), Fourier(7)), (Chebyshev(5), Chebyshev(6))]


@pytest.mark.parametrize("domain", DOMAINS)
def test_axial_is_each_axis_funcformer_at_every_point_of_the_other(domain: tuple[Structure, Structure]) -> None:
    along = _along(domain)
    f = torch.randn(2, domain[0].size, domain[1].size, 3, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(along(f), _reference(along, f), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("domain", DOMAINS)
def test_interleaved_alternates_the_layers_and_carries_the_plane_whole(domain: tuple[Structure, Structure]) -> None:
    along, composed = _along(domain, interleaved=True), _along(domain)
    f = torch.randn(2, domain[0].size, domain[1].size, 3, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(along(f), _interleaved(along, f), rtol=1e-9, atol=1e-10)
        assert (along(f) - composed(f)).abs().amax() > 1e-3  # another map, from the same weights
    assert along.y is not None and not hasattr(along.y.transformer, "embed")  # y's lift and lowering: not built
    dropped = sum(p.numel() for p in composed.parameters()) - sum(p.numel() for p in along.parameters())
    assert dropped == 2 * 3 * 8


def test_an_axial_run_written_before_the_field_is_read_as_composed() -> None:
    shape = operator.Shape((PERIODIC, PERIODIC), 1, 1)
    fields = {k: v for k, v in record(operator.PRESETS["tiny"].replace(axial=True), shape).items()}
    assert fields["interleaved"] is True
    del fields["interleaved"]
    old = config_of(fields)
    assert not old.interleaved and not operator.build(old, shape).along.interleaved
    assert operator.build(old.replace(interleaved=True), shape).along.interleaved
    flat = operator.PRESETS["tiny"]  # without axial the field builds nothing: either reads the same
    assert record(flat, shape) == record(flat.replace(interleaved=False), shape)


@pytest.mark.parametrize(("c_out", "axial", "expected"), [(1, True, 24), (30, True, 30), (1, False, 4), (6, False, 6)])
def test_the_axial_form_hands_on_as_many_functions_as_the_state_is_wide(c_out: int, axial: bool, expected: int) -> None:
    """``channels=0``: in the axial form ``width`` functions (24 here), as many as the outputs where they are more;
    elsewhere as many as the outputs, at least 4. The count is what the model collapses its state to, and what a
    checkpoint records."""
    config = operator.PRESETS["tiny"].replace(channels=0, axial=axial)
    shape = operator.Shape((PERIODIC, PERIODIC), 1, c_out)
    model = operator.build(config, shape)
    assert model.collapse.weight.shape[0] == expected
    assert record(config, shape)["channels"] == expected
    assert config_of(record(config, shape)).channels == expected


def test_an_axial_record_of_channels_0_is_read_as_the_model_it_built() -> None:
    """Before ``0`` meant ``width`` in the axial form it meant as many functions as outputs, at least 4, and
    checkpoints recorded the ``0``: such a record builds that model; without ``axial`` the ``0`` reads as it did."""
    shape = operator.Shape((PERIODIC, PERIODIC), 1, 1)
    for axial, functions in ((True, 4), (False, 4)):
        fields = record(operator.PRESETS["tiny"].replace(axial=axial), shape) | {"channels": 0}
        assert operator.build(config_of(fields), shape).collapse.weight.shape[0] == functions
        assert record(config_of(fields), shape)["channels"] == functions


def test_one_points_change_reaches_the_whole_plane() -> None:
    """Composed, the output at every point of the plane depends on the input at any one point (a sum of the two
    directions would change only the row and the column through it)."""
    domain = (Fourier(7), Fourier(5))
    along = _along(domain)
    vx, vy = (torch.from_numpy(_basis(a)) for a in domain)
    f = torch.randn(1, 7, 5, 3, dtype=torch.float64)
    bump = torch.zeros(1, 7, 5, 3, dtype=torch.float64)
    bump[0, 2, 3] = 0.5  # in values: one point (x_2, y_3)
    ix, iy = (torch.from_numpy(np.linalg.inv(_basis(a))) for a in domain)
    moved = f + torch.einsum("ki,lj,bijc->bklc", ix, iy, bump)  # the bump's coefficients
    with torch.no_grad():
        change = torch.einsum("ik,jl,bklc->bijc", vx, vy, along(moved) - along(f)).abs().amax(-1)
    assert change.amin() > 1e-6, change


def test_the_config_builds_it_and_the_budget_counts_it() -> None:
    shape = operator.Shape((PERIODIC, PERIODIC), 1, 1)
    config = operator.PRESETS["tiny"].replace(axial=True)
    built, factored = operator.build(config, shape), operator.build(config.replace(axial=False), shape)
    assert built.along.axial and not factored.along.axial
    n = PERIODIC.boundary.length(config.modes)
    one = config.depth * layer_activations(1, n, config.width, config.hidden, config.heads)
    assert activations(config, shape) - activations(config.replace(axial=False), shape) == 2 * (n - 1) * one


def test_gradients_reach_every_weight() -> None:
    torch.manual_seed(0)
    model = OperatorModel([ZERO, PERIODIC], 2, 1, axial=True, **SIZES, dtype=torch.float64)  # type: ignore[arg-type]
    model(torch.randn(2, 12, 12, 2, dtype=torch.float64)).square().sum().backward()  # type: ignore[no-untyped-call]
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_refusals_name_the_axes() -> None:
    with pytest.raises(InputError, match=r"axial=True on a grid of 1 axis: .* use axial=False on a 1D grid"):
        OperatorModel([PERIODIC], 1, 1, axial=True)
    config = FuncformerConfig(heads=2, normalise=ScaledSoftmax(0.5))
    with pytest.raises(InputError, match=r"AlongAxes: axial=True on a domain of 1 axis"):
        AlongAxes((Fourier(5),), 3, 8, 16, config, axial=True)
    with pytest.raises(InputError, match=r"axial=True on a grid of 1 axis"):
        operator.build(operator.Config(axial=True), operator.Shape((PERIODIC,), 1, 1))


def test_without_the_position_the_funcformers_have_none() -> None:
    """``positional=False`` drops each Funcformer's learned function of its coordinate, ``n · width`` weights each,
    and nothing else; the config builds the same."""
    axes = [PERIODIC, ZERO]
    torch.manual_seed(0)
    on = OperatorModel(axes, 2, 1, **SIZES)  # type: ignore[arg-type]
    off = OperatorModel(axes, 2, 1, positional=False, **SIZES)  # type: ignore[arg-type]
    dropped = {k for k, _ in on.named_parameters()} - {k for k, _ in off.named_parameters()}
    assert dropped == {"along.x.position", "along.y.position"}
    n = [a.boundary.length(SIZES["modes"]) for a in axes]
    count = sum(p.numel() for p in on.parameters()) - sum(p.numel() for p in off.parameters())
    assert count == sum(n) * SIZES["width"]
    built = operator.build(operator.PRESETS["tiny"].replace(positional=False), operator.Shape(tuple(axes), 2, 1))
    assert built.along.x.position is None and built.along.y is not None and built.along.y.position is None
