"""The operator model's convolutions of the plane (``plane``, on two periodic axes): where they act around the
Funcformers (against the composition written out, in both forms), that they start as nothing, what they cost, their
gradients, and the config building them only where both axes are periodic."""

from __future__ import annotations

import pytest
import torch

from applicative import ScaledSoftmax, Structure
from instances import Chebyshev, Fourier
from instances.axes import Axis
from instances.fourier import multiply_plane
from models.funcformer import FuncformerConfig
from models.operator import AlongAxes, OperatorModel
from training.tasks import operator
from training.tasks.operator.model import activations, as_built, channels_for, config_of

PERIODIC = Axis("periodic")
ZERO = Axis("nodes", boundary="zero")
SIZES = {"modes": 7, "width": 8, "hidden": 16, "heads": 2, "depth": 1, "channels": 3}

pytestmark = pytest.mark.usefixtures("one_thread")


def _along(domain: tuple[Structure, Structure], axial: bool, plane: bool, interleaved: bool = False) -> AlongAxes:
    torch.manual_seed(0)
    config = FuncformerConfig(heads=2, depth=2, normalise=ScaledSoftmax(0.5), window=4.0, convolution=True)
    return AlongAxes(domain, 3, 8, 16, config, axial=axial, interleaved=interleaved, plane=plane, dtype=torch.float64)


@pytest.mark.parametrize("axial", [True, False])
def test_the_plane_convolves_before_between_and_after_the_funcformers(axial: bool) -> None:
    domain = (Fourier(7), Fourier(5))
    on, off = _along(domain, axial, True), _along(domain, axial, False)
    assert on.plane is not None and on.plane.shape == (3 if axial else 2, 3, 7, 3, 2)
    with torch.no_grad():
        on.plane.normal_()
    k = torch.view_as_complex(on.plane.detach())
    conv = lambda i, f: f + multiply_plane(k[i], f, dims=(1, 2))  # noqa: E731
    f = torch.randn(2, 7, 5, 3, dtype=torch.float64)
    with torch.no_grad():
        if axial:
            want = conv(2, off._axial(conv(1, off._axial(conv(0, f), 0)), 1))
        else:
            want = conv(1, off(conv(0, f)))
        torch.testing.assert_close(on(f), want, rtol=1e-10, atol=1e-10)
        assert (on(f) - off(f)).abs().amax() > 1e-3  # the kernels act
    on, off = _along(domain, True, True, interleaved=True), _along(domain, True, False, interleaved=True)
    assert on.plane is not None and on.plane.shape == (2, 3, 7, 3, 2)  # interleaved: before and after
    with torch.no_grad():
        on.plane.normal_()
        k = torch.view_as_complex(on.plane.detach())
        torch.testing.assert_close(on(f), conv(1, off(conv(0, f))), rtol=1e-10, atol=1e-10)


def test_it_starts_as_nothing_costs_its_multipliers_and_learns() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 12, 12, 2, dtype=torch.float64)
    for axes in ([PERIODIC, PERIODIC], [ZERO, PERIODIC]):
        torch.manual_seed(0)
        on = OperatorModel(axes, 2, 1, axial=True, plane=True, **SIZES, dtype=torch.float64)  # type: ignore[arg-type]
        torch.manual_seed(0)
        off = OperatorModel(axes, 2, 1, axial=True, **SIZES, dtype=torch.float64)  # type: ignore[arg-type]
        with torch.no_grad():
            torch.testing.assert_close(on(x), off(x), rtol=0, atol=0)
        extra = sum(p.numel() for p in on.parameters()) - sum(p.numel() for p in off.parameters())
        n = PERIODIC.boundary.length(SIZES["modes"])
        assert extra == (2 * SIZES["channels"] * n * (n // 2 + 1) * 2 if axes[0] is PERIODIC else 0)  # interleaved
    torch.manual_seed(0)
    model = OperatorModel([PERIODIC, PERIODIC], 2, 1, plane=True, **SIZES, dtype=torch.float64)  # type: ignore[arg-type]
    model(x).square().sum().backward()  # type: ignore[no-untyped-call]
    assert model.along.plane is not None and model.along.plane.grad is not None
    assert (model.along.plane.grad.abs().sum(dim=(1, 2, 3, 4)) > 0).all()  # every place's kernels


def test_the_config_builds_it_where_both_axes_are_periodic_and_old_runs_had_none() -> None:
    config = operator.PRESETS["tiny"].replace(plane=True)
    both, one = operator.Shape((PERIODIC, PERIODIC), 1, 1), operator.Shape((ZERO, PERIODIC), 1, 1)
    assert operator.build(config, both).along.plane is not None
    assert operator.build(config, one).along.plane is None
    assert operator.build(config, operator.Shape((PERIODIC,), 1, 1)).along.plane is None
    assert as_built(config, both).plane and not as_built(config, one).plane  # a resume under either reads the same
    n = PERIODIC.boundary.length(config.modes)
    c = channels_for(config, 1)
    assert activations(config, both) - activations(config.replace(plane=False), both) == 2 * c * n * n
    assert activations(config, one) == activations(config.replace(plane=False), one)
    assert config_of({"modes": 8}).plane is False  # a checkpoint written before the field


def test_on_a_bounded_axis_alongaxes_has_no_plane() -> None:
    assert _along((Chebyshev(6), Fourier(5)), True, True).plane is None
