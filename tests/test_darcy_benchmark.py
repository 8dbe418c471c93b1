"""``benchmarks/darcy_vs_fno.py``'s training loop: ``--compile`` trains the same steps, outside the model's clock."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest
import torch
from torch import Tensor, nn

from models.operator import OperatorModel
from operators.darcy import data
from training.tasks.darcy.config import PRESETS
from training.tasks.darcy.model import SHAPE
from training.tasks.operator.model import build
from training.tasks.operator.task import objective


@pytest.mark.skipif(
    not (shutil.which("c++") or shutil.which("g++")), reason="torch.compile on the CPU needs a C++ compiler"
)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's inductor imports torch.jit.script_method
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`:UserWarning")
def test_a_compiled_model_trains_the_same_steps_outside_its_clock(benchmark: Callable[[str], ModuleType]) -> None:
    """Compiled before its clock starts (one forward and backward, no step taken), then the eager trajectory."""
    bench = benchmark("darcy_vs_fno")
    ticks = itertools.count()  # a clock that advances one second per reading: what the run counts, not how fast
    bench.time = SimpleNamespace(perf_counter=lambda: float(next(ticks)))
    cfg = PRESETS["tiny"].replace(smooth=1.0)
    d = data.sample("lognormal", 12, cfg.points, 0, cfg.refine)
    x, u = d.a[..., None], d.u[..., None].float()

    def loss(m: nn.Module, idx: Tensor, which: Tensor | None) -> Tensor:
        assert isinstance(m, OperatorModel)
        moved, exact = bench.moved(x[idx], which), bench.moved(u[idx], which)
        return objective(m, moved.contiguous(), exact, cfg.smooth)

    def predict(m: nn.Module, fine: bool) -> Tensor:
        assert isinstance(m, OperatorModel)
        return m.values(m(x), (cfg.points, cfg.points))[..., 0].double()

    def optimiser(m: nn.Module, steps: int) -> tuple[torch.optim.Optimizer, object]:
        return torch.optim.Adam(m.parameters(), lr=3e-3), lambda step: None

    def make() -> nn.Module:
        torch.manual_seed(0)
        return build(cfg, SHAPE)

    runs = [
        bench.train(
            bench.Learner("funcformer", make, loss, predict, optimiser, 1.0, compiled), 8, 12, 4, 0, 2, d.u, d.u, True
        )
        for compiled in (False, True)
    ]
    eager, compiled = runs
    # the warm-up is one reading apart, reported on its own; the clock holds the eight steps and nothing else
    assert (eager.compile_seconds, compiled.compile_seconds) == (0.0, 1.0)
    assert eager.seconds == compiled.seconds == 8.0
    assert [s for s, _, _ in compiled.curve] == [s for s, _, _ in eager.curve] == [4, 8]
    assert eager.curve[0][2] != eager.curve[1][2]  # the steps moved the model: the comparison can fail
    for (_, _, e1), (_, _, e2) in zip(eager.curve, compiled.curve, strict=True):
        assert e2 == pytest.approx(e1, rel=1e-4)
    assert compiled.error == pytest.approx(eager.error, rel=1e-4)
