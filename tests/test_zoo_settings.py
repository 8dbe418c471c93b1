"""``benchmarks/operator_zoo.py``'s Funcformer settings: as many as the FNO's, and the deeper ones at the same weights
(counted on the built models, not from the formula); a run that collapses is stopped and marked."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest
import torch

from instances.axes import Axis
from operators.dataset import Samples, samples
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


@pytest.mark.parametrize("dead", [False, True])
def test_the_zoo_stops_a_run_whose_predictions_stopped_depending_on_the_input(
    dead: bool, benchmark: Callable[[str], ModuleType]
) -> None:
    """A learner that predicts the identity, or the same output for every input from its third step on: the zoo
    stops the second at its first evaluation after, with the step recorded (its other settings go on)."""
    zoo = benchmark("operator_zoo")
    x = torch.randn(32, 16, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    s = samples(x, 2 * x, (PERIODIC,))
    taken = [0]

    def step() -> torch.Tensor:
        taken[0] += 1
        return torch.zeros(())

    def predict(inputs: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(inputs) if dead and taken[0] >= 3 else 2 * inputs

    def evaluate(held: Samples) -> torch.Tensor:
        return (predict(held.inputs) - held.outputs).flatten(1).norm(dim=1) / held.outputs.flatten(1).norm(dim=1)

    p = SimpleNamespace(train=s, tests={"test": s, "fine": s}, residual=None, rollout=None)
    run = zoo.train(lambda: (step, evaluate, predict, 1), p, 10, 5, "toy", "any")
    assert run.collapsed == (4 if dead else None) and taken[0] == (4 if dead else 10)
    assert run.errors["test"] == pytest.approx(1.0 if dead else 0.0)
