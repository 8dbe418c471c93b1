"""``benchmarks/operator_zoo.py``'s Funcformer settings: as many as the FNO's, and the earlier default at about the
default's weights (counted on the built models); a run that collapses is stopped and marked."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest
import torch

from instances.axes import Axis
from models.transformer import EncoderLayer
from operators.dataset import Samples, samples
from training.tasks import operator

PERIODIC, ZERO = Axis("periodic"), Axis("nodes", boundary="zero")


def _weights(config: operator.Config, axes: tuple[Axis, ...]) -> int:
    return sum(p.numel() for p in operator.build(config, operator.Shape(axes, 1, 1)).parameters())


@pytest.mark.parametrize("axes", [(PERIODIC,), (PERIODIC, PERIODIC), (ZERO,)], ids=str)
def test_the_earlier_four_layers_with_norms_have_about_the_default_weights(
    axes: tuple[Axis, ...], benchmark: Callable[[str], ModuleType]
) -> None:
    """The zoo compares its settings at about equal weights: the earlier default beside today's, which has 7–10% fewer
    (the zoo sizes its peers to the best setting's, within 10%)."""
    earlier = operator.Config().replace(**benchmark("operator_zoo").FOUR_NORMED)
    assert earlier.depth == 4 and earlier.norms and not operator.Config().norms
    before, now = _weights(earlier, axes), _weights(operator.Config(), axes)
    assert 1 < before / now < 1.12, (before, now)


def test_sixteen_layers_attending_every_fourth_have_about_the_default_weights(
    benchmark: Callable[[str], ModuleType],
) -> None:
    """The 1D periodic rows' third and fourth settings: sixteen layers of which four attend, within 10% of the
    default's weights; layers 0, 4, 8 and 12 attend."""
    zoo = benchmark("operator_zoo")
    sparse = operator.Config().replace(**zoo.DEEP_SPARSE)
    assert 0.9 < _weights(sparse, (PERIODIC,)) / _weights(operator.Config(), (PERIODIC,)) < 1.1
    model = operator.build(sparse, operator.Shape((PERIODIC,), 1, 1))
    attending = [m.self_attn is not None for m in model.modules() if isinstance(m, EncoderLayer)]
    assert attending == [True, False, False, False] * 4
    names = [name for name, cfg in zoo.funcformer_settings(operator.Config(), (PERIODIC,)) if cfg.attend_every == 4]
    assert len(names) == 2 and any("no position" in n for n in names)


@pytest.mark.parametrize("axes", [(PERIODIC,), (PERIODIC, PERIODIC), (ZERO,), (ZERO, PERIODIC)], ids=str)
def test_the_funcformer_tries_as_many_distinct_settings_as_the_fno(
    axes: tuple[Axis, ...], benchmark: Callable[[str], ModuleType]
) -> None:
    zoo = benchmark("operator_zoo")
    settings = zoo.funcformer_settings(operator.Config(), axes)
    assert len(settings) == len(zoo.fno_settings(axes)) == len(set(zoo.fno_settings(axes)))
    fewer = [cfg for _, cfg in settings if cfg.axial and cfg.modes == zoo.AXIAL_MODES]
    cut = [f for f in zoo.fno_settings(axes) if f.modes == zoo.AXIAL_MODES]
    assert bool(fewer) == bool(cut) and len(fewer) <= len(cut)  # both try the same cut (the FNO with each optimiser)
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


@pytest.mark.parametrize("axes", [(PERIODIC,), (PERIODIC, PERIODIC), (ZERO,)], ids=str)
def test_the_fno_is_tried_with_muon_as_the_funcformer_is_trained(
    axes: tuple[Axis, ...], benchmark: Callable[[str], ModuleType]
) -> None:
    """The comparison is not of optimisers: the Funcformer trains with Muon by default, and half the FNO's settings
    do too (the other half Adam, its authors')."""
    assert operator.Config().optimiser == "muon"
    optimisers = [p.optimiser for p in benchmark("operator_zoo").fno_settings(axes)]
    assert optimisers.count("muon") == 2 and len(optimisers) == 4
