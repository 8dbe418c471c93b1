"""``benchmarks/operator_zoo.py``'s Funcformer settings: as many as the FNO's, and the deeper ones at the same weights
(counted on the built models, not from the formula)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from instances.axes import Axis
from training.tasks import operator

PERIODIC, ZERO = Axis("periodic"), Axis("nodes", boundary="zero")


def _weights(config: operator.Config, axes: tuple[Axis, ...]) -> int:
    return sum(p.numel() for p in operator.build(config, operator.Shape(axes, 1, 1)).parameters())


@pytest.mark.parametrize(
    "config", [operator.Config(), operator.Config(width=24, hidden=48, heads=2, depth=2)], ids=["default", "small"]
)
@pytest.mark.parametrize("layers", [1, 2])
def test_deeper_has_more_layers_at_about_the_same_weights(
    config: operator.Config, layers: int, benchmark: Callable[[str], ModuleType]
) -> None:
    deeper = benchmark("operator_zoo").deeper(config, layers)
    assert deeper.depth == config.depth + layers and deeper.width % deeper.heads == 0
    before, after = _weights(config, (PERIODIC,)), _weights(deeper, (PERIODIC,))
    assert abs(after / before - 1) < 0.1, (before, after)


@pytest.mark.parametrize("axes", [(PERIODIC,), (PERIODIC, PERIODIC), (ZERO,), (ZERO, PERIODIC)], ids=str)
def test_the_funcformer_tries_as_many_distinct_settings_as_the_fno(
    axes: tuple[Axis, ...], benchmark: Callable[[str], ModuleType]
) -> None:
    zoo = benchmark("operator_zoo")
    settings = zoo.funcformer_settings(operator.Config(), axes)
    assert len(settings) == len(zoo.FNO_SETTINGS)
    assert len({name for name, _ in settings}) == len({cfg for _, cfg in settings}) == len(settings)
    for _, cfg in settings:  # each builds on these axes (no axial on one axis)
        assert _weights(cfg, axes) > 0
