"""Under ``torch.compile`` every constant is built on the device the model runs on.

A structure's constants (Chebyshev transforms, quadrature weights, metrics) are traced into the compiled
graph. Built in float64 on the CPU and then moved, they made a graph that Inductor cannot lower for a GPU
(``LoweringException: NotImplementedError: Reduction`` when it folds a CPU matrix product into a CUDA
constant; seen on an H200 with ``--compile funcformer --device cuda``). The check runs without a GPU: the
model runs on the ``meta`` device under a backend that only records the graph, and no node of it may hold
a CPU tensor.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor, fx, nn

from applicative import Field
from instances import Chebyshev, Vector
from models import Funcformer, FuncformerConfig
from operators.layout import Axis
from training.tasks.darcy.config import PRESETS
from training.tasks.darcy.model import SHAPE
from training.tasks.operator import Shape, build
from training.tasks.operator.task import objective

META = torch.device("meta")

pytestmark = [
    pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`:UserWarning"),
    # torch 2.11's Dynamo reads .grad of non-leaf tensors while tracing; under "error" the warning aborts the trace
    pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning"),
]


def _python_scalar(node: fx.Node, value: object) -> bool:
    """Whether ``node`` is a Python number passed into the graph, not a tensor the model made: Dynamo (torch 2.11)
    hands a float it does not specialise (an attention's ``scale``, different in two layers) to the graph as a 0-d
    CPU float64 input read only by ``.item()``."""
    return (
        node.op == "placeholder"
        and isinstance(value, Tensor)
        and value.ndim == 0
        and bool(node.users)
        and all(u.op == "call_method" and u.target == "item" for u in node.users)
    )


def _cpu_nodes(run: Callable[[Callable[..., Tensor]], Tensor], module: nn.Module) -> list[str]:
    """The graph's nodes whose value is a CPU tensor, with the source line that made each."""
    found: list[str] = []

    def record(gm: fx.GraphModule, example_inputs: list[Tensor]) -> Callable[..., object]:
        for node in gm.graph.nodes:
            value = node.meta.get("example_value")
            if _python_scalar(node, value):
                continue
            if isinstance(value, Tensor) and value.device.type == "cpu":
                where = node.meta.get("stack_trace", "").strip().splitlines()
                found.append(f"{node.target} {tuple(value.shape)}: {where[-2].strip() if where else '?'}")
        return gm.forward

    torch._dynamo.reset()
    run(torch.compile(module, backend=record))
    return found


class X(Chebyshev):
    pass


class Y(Chebyshev):
    pass


MIXED = Shape((Axis("periodic", boundary="zero"), Axis("lobatto")), 2, 1)


@pytest.mark.parametrize("shape", [SHAPE, Shape((Axis("periodic"),), 1, 2), MIXED])
def test_the_operator_model_builds_its_constants_where_it_runs(shape: Shape) -> None:
    cfg = PRESETS["tiny"].replace(smooth=1.0, channels=2, window=40.0, reader_window=40.0)  # every constant used
    model = build(cfg, shape).to(META)
    grid = (cfg.points,) * shape.dims
    x = torch.rand(3, *grid, shape.c_in, device=META)

    def run(m: Callable[..., Tensor]) -> Tensor:
        loss = objective(m, x, torch.randn(3, *grid, shape.c_out, device=META), cfg.smooth)  # type: ignore[arg-type]
        return loss

    assert _cpu_nodes(run, model) == []


@pytest.mark.parametrize(("model", "window"), [(Vector(8), 0.0), (Chebyshev(5), 0.0), (Vector(8), 10.0)])
def test_the_funcformer_builds_its_constants_where_it_runs(model: Vector | Chebyshev, window: float) -> None:
    net = Funcformer(X(12), Y(9), model, Vector(16), FuncformerConfig(heads=1, depth=1, window=window)).to(META)
    u = torch.randn(2, 12, 9, device=META)

    def run(m: Callable[..., Tensor]) -> Tensor:
        out: Field = m(Field(u, (X(12), Y(9))))  # type: ignore[type-arg]
        return out.tensor

    assert _cpu_nodes(run, net) == []


def test_the_check_can_fail() -> None:
    """A constant made on the CPU and moved is found."""

    class Moves(nn.Module):
        def forward(self, x: Tensor) -> Tensor:
            return x * torch.arange(x.shape[-1], dtype=x.dtype).to(x.device)

    found = _cpu_nodes(lambda m: m(torch.ones(2, 4, device=META)), Moves())
    assert found and "arange" in found[0]
