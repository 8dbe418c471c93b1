"""The guide's user structure, verbatim: its laws, fused attention with no lowering code, and the example.

The class is read from the "Write a structure" guide's code block (``docs/guides/structures.md``) and
must appear verbatim in ``examples/graph_signal.py`` (the runnable example is the
guide's structure, not a copy that drifted).
"""

from __future__ import annotations

import re
from pathlib import Path
from unittest import mock

import torch
from torch import Tensor

from applicative import (
    DataStructure,
    Field,
    Structure,
    Vector,
    _lowering,
    attention,
    counit,
    per_example,
    scaled_softmax,
)
from applicative.laws import check_laws

ROOT = Path(__file__).resolve().parents[1]
F64 = torch.float64


def _readme_structure() -> str:
    section = (ROOT / "docs" / "guides" / "structures.md").read_text()
    match = re.search(r"```python\n.*?\n(class Nodes\(DataStructure\):.*?)```", section, re.S)
    assert match is not None, "the guide's Nodes block is gone"
    return match.group(1)


def _nodes_class() -> type[Structure]:
    namespace: dict[str, object] = {
        "DataStructure": DataStructure,
        "Tensor": Tensor,
        "per_example": per_example,
        "torch": torch,
    }
    exec(compile("from __future__ import annotations\n" + _readme_structure(), "structures.md", "exec"), namespace)
    cls = namespace["Nodes"]
    assert isinstance(cls, type) and issubclass(cls, Structure)
    return cls


def test_the_example_holds_the_readme_structure_verbatim() -> None:
    assert _readme_structure() in (ROOT / "examples" / "graph_signal.py").read_text()


def test_readme_structure_is_lawful_and_integrates_by_its_areas() -> None:
    nodes_cls = _nodes_class()
    area = torch.tensor([0.5, 1.0, 0.25, 2.0], dtype=F64)
    nodes = nodes_cls(area)  # type: ignore[call-arg]
    x = torch.randn(3, 4, dtype=F64)
    torch.testing.assert_close(counit(Field(x, (nodes,))).tensor, x @ area)
    check_laws(nodes, max_examples=10)


def test_readme_structure_reaches_the_fused_kernel() -> None:
    nodes = _nodes_class()(torch.tensor([0.5, 1.0, 0.25, 2.0, 0.75], dtype=F64))  # type: ignore[call-arg]
    g = torch.Generator().manual_seed(0)
    q = Field(torch.randn(2, 3, 4, dtype=F64, generator=g), (Vector(3), Vector(4)))
    k = Field(torch.randn(2, 5, 4, dtype=F64, generator=g), (nodes, Vector(4)))
    v = Field(torch.randn(2, 5, 6, dtype=F64, generator=g), (nodes, Vector(6)))
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as sdpa:
        fused = attention(scaled_softmax(4), q, k, v)
        assert sdpa.call_count == 1
        generic = attention(scaled_softmax(4), q, k, v, fused=False)
        assert sdpa.call_count == 1
    torch.testing.assert_close(fused.tensor, generic.tensor)
    # and against the formula: softmax over nodes weighted by their areas
    w = nodes.area  # type: ignore[attr-defined]
    e = torch.exp(q.tensor @ k.tensor.mT / 2)
    torch.testing.assert_close(fused.tensor, (e * w) @ v.tensor / (e * w).sum(-1, keepdim=True))


def test_example_trains() -> None:
    from examples import graph_signal

    assert graph_signal.main(["--steps", "30", "--nodes", "12"]) == 0
