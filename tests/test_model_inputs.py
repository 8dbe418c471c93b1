"""Every trained model checks what it is given: one :class:`training.InputError` naming the method and the argument.

Each case is an input a careless or hostile caller passes -- a list for a tensor, an empty batch, a 1-D tensor, ids
outside the vocabulary, floats for ids, a temperature of zero or below, malformed ListOps expressions, a chunk of
zero -- and each must be refused before any computation, in one line, never as a raw error from inside torch or
Python. The control: a well-formed input of each kind is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from training import InputError
from training.tasks import darcy, lm, operator, poisson, tree_listops
from training.tasks.tree_listops.model import ListOpsModel

torch.manual_seed(0)
POISSON = poisson.PoissonModel(poisson.PRESETS["tiny"])
DARCY = operator.build(darcy.PRESETS["tiny"], darcy.model.SHAPE)  # the operator model on the square
LM = lm.CharLM(lm.PRESETS["tiny"], "abcdefgh")
LISTOPS = {k: ListOpsModel(tree_listops.PRESETS["tiny"], k) for k in ("tree-mean", "vector", "fold")}
G = torch.Generator().manual_seed(0)
SMALL_INTS = (torch.int32, torch.int16, torch.int8, torch.uint8)


def _nested(levels: int) -> Any:
    e: Any = 1
    for _ in range(levels):
        e = ("MAX", [e, 2])
    return e


CASES: dict[str, tuple[Callable[[], object], str]] = {
    "poisson: a list": (lambda: POISSON([[1.0]]), "PoissonModel: f must be a real tensor (batch, m, m')"),
    "poisson: empty batch": (
        lambda: POISSON(torch.zeros(0, 16, 16)),
        "PoissonModel: f has shape (0, 16, 16): an empty",
    ),
    "poisson: 2-D": (lambda: POISSON(torch.zeros(16, 16)), "PoissonModel: f must have shape (batch, m, m')"),
    "poisson: no modes": (lambda: POISSON(torch.zeros(2, 0, 16)), "size 0 on axis 1"),
    "poisson: complex": (lambda: POISSON(torch.zeros(2, 4, 4, dtype=torch.complex64)), "must be a real tensor"),
    "operator: a list": (lambda: DARCY([[1.0]]), "OperatorModel: inputs must be a tensor (batch, *grid, channels)"),
    "operator: 1-D": (lambda: DARCY(torch.ones(8)), "OperatorModel: inputs of shape (8,), expected (batch, x, y, 1)"),
    "operator: two channels": (lambda: DARCY(torch.ones(2, 9, 9, 2)), "expected (batch, x, y, 1)"),
    "operator: empty batch": (lambda: DARCY(torch.ones(0, 9, 9)), "an empty batch"),
    "operator: one node": (lambda: DARCY(torch.ones(2, 1, 9)), "axis x has 1 sample(s); the nodes layout needs more"),
    "operator: integers": (lambda: DARCY(torch.ones(2, 9, 9, dtype=torch.long)), "expected floats"),
    "lm: id past the vocabulary": (lambda: LM(torch.tensor([[1, 8]])), "CharLM: tokens holds the id 8, outside"),
    "lm: id -1": (lambda: LM(torch.tensor([[1, -1]])), "CharLM: tokens holds the id -1"),
    "lm: float ids": (lambda: LM(torch.tensor([[1.0, 2.0]])), "CharLM: tokens must be an integer tensor"),
    "lm: no positions": (lambda: LM(torch.zeros(1, 0, dtype=torch.long)), "size 0 on axis 1"),
    "lm: past the context": (lambda: LM(torch.zeros(1, 17, dtype=torch.long)), "past the context of 16"),
    "lm: temperature 0": (
        lambda: LM.sample(torch.tensor([1]), 3, 0.0, G),
        "CharLM.sample: temperature must be a number in 0.0001..10000",
    ),
    "lm: temperature 1e-45": (lambda: LM.sample(torch.tensor([1]), 3, 1e-45, G), "temperature must be a number in"),
    "lm: infinite temperature": (lambda: LM.sample(torch.tensor([1]), 3, math.inf, G), "temperature must be"),
    "lm: length 10**12": (lambda: LM.sample(torch.tensor([1]), 10**12, 1.0, G), "length must be at most 100000"),
    "poisson: NaN": (lambda: POISSON(torch.full((2, 4, 4), math.nan)), "PoissonModel: f holds 32 NaN or infinite"),
    "poisson: -inf": (lambda: POISSON(torch.tensor([[[0.0, -math.inf]]])), "the first -inf at index (0, 0, 1)"),
    "poisson: 1e39, infinite in float32": (
        lambda: POISSON(torch.full((1, 2, 2), 1e39, dtype=torch.float64)),
        "(finite in torch.float64, infinite in the model's torch.float32: scale it)",
    ),
    "lm: negative temperature": (lambda: LM.sample(torch.tensor([1]), 3, -1.0, G), "temperature must be"),
    "lm: NaN temperature": (lambda: LM.sample(torch.tensor([1]), 3, float("nan"), G), "temperature must be"),
    "lm: empty prompt": (lambda: LM.sample(torch.zeros(0, dtype=torch.long), 3, 1.0, G), "prompt has shape (0,)"),
    "lm: negative length": (lambda: LM.sample(torch.tensor([1]), -1, 1.0, G), "length must be an integer >= 0"),
    "lm: no generator": (lambda: LM.sample(torch.tensor([1]), 1, 1.0, 7), "generator must be a torch.Generator"),  # type: ignore[arg-type]
    "listops: chunk 0": (lambda: LISTOPS["tree-mean"].predict([("MAX", [1, 2])], chunk=0), "chunk must be an integer"),
}
for kind, model in LISTOPS.items():
    CASES |= {
        f"listops {kind}: unknown operator": (lambda m=model: m([("FOO", [1, 2])]), "holds the operator 'FOO'"),
        f"listops {kind}: no arguments": (lambda m=model: m([("MAX", [])]), "takes a non-empty list of arguments"),
        f"listops {kind}: digit 10": (lambda m=model: m([("MAX", [10, 2])]), "holds the number 10"),
        f"listops {kind}: a string": (lambda m=model: m(["abc"]), "exprs[0] holds 'abc'"),
        f"listops {kind}: empty": (lambda m=model: m([]), "exprs is an empty list"),
        f"listops {kind}: not a list": (lambda m=model: m(5), "exprs must be a list of expressions"),
        f"listops {kind}: a bool": (lambda m=model: m([1, True]), "exprs[1] holds True"),
        f"listops {kind}: too deep": (lambda m=model: m([_nested(17)]), "nests more than 16 levels"),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_is_one_input_error(case: str) -> None:
    call, says = CASES[case]
    with torch.no_grad(), pytest.raises(InputError) as refused:
        call()
    message = str(refused.value)
    assert says in message and "\n" not in message, message
    assert isinstance(refused.value, ValueError)  # callers that guard with `except ValueError` still catch it


CONTROLS: dict[str, tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]] = {
    "poisson": (POISSON, lambda m: m(torch.randn(2, 20, 12))),
    "poisson, integer sources": (POISSON, lambda m: m(torch.ones(1, 4, 4, dtype=torch.long))),
    "operator": (DARCY, lambda m: m(torch.rand(2, 9, 9) + 0.5)),
    "operator, another grid": (DARCY, lambda m: m(torch.rand(2, 17, 7, 1, dtype=torch.float64) + 0.5)),
    "lm": (LM, lambda m: m(torch.tensor([[0, 7, 3]]))),
    "lm, one sequence": (LM, lambda m: m(torch.tensor([0, 7, 3]))),
    **{f"lm, {t} ids": (LM, lambda m, t=t: m(torch.tensor([[0, 7, 3]], dtype=t))) for t in SMALL_INTS},
    "lm sample, uint8 prompt": (LM, lambda m: m.sample(torch.tensor([1, 2], dtype=torch.uint8), 3, 1e-4, G)),  # type: ignore[operator]
    "lm sample": (LM, lambda m: m.sample(torch.tensor([1, 2]), 3, 0.5, G)),  # type: ignore[operator]
    **{f"listops {k}": (m, lambda m: m([("MAX", [1, ("SM", (2, 3))]), 4, _nested(16)])) for k, m in LISTOPS.items()},
}


@pytest.mark.parametrize("case", list(CONTROLS))
def test_a_good_input_is_accepted(case: str) -> None:
    model, call = CONTROLS[case]
    with torch.no_grad():
        out = call(model)
    assert bool(torch.isfinite(out.double()).all())
