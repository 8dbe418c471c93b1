"""Tube diagrams: the tubes, parameters and attention gadgets that :func:`models.diagram.diagram` reads off a
model's modules are compared with what a real forward pass uses -- the Field structures seen by forward hooks
on every module, by a recorder around the generic ``attention`` and ``mlp``, and ``named_parameters``."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import applicative
import applicative._modules
import models.transformer
from applicative import Field, Structure, StructureError
from instances import Chebyshev, Padded, Vector
from models import EncoderLayer, FuncformerConfig, funcformer
from models.crossmodal import CrossModal, CrossModalConfig
from models.diagram import Diagram, diagram, render

Sig = tuple[tuple[str, int], ...]


pytestmark = pytest.mark.usefixtures("one_thread")


def sig(structures: tuple[Structure, ...]) -> Sig:
    """Structures as (class, size): per-example data (a Padded's lengths, with a heads axis) aside."""
    return tuple((type(s).__name__, s.size) for s in structures)


def _cases() -> list[tuple[str, nn.Module, Callable[[], tuple[Any, ...]], Structure | None]]:
    torch.manual_seed(0)
    layer = EncoderLayer(Vector(8), Vector(12), 2, norm_first=True)
    post = EncoderLayer(Vector(8), Vector(12), 2, norm_first=False)
    ff = funcformer(6, Vector(8), config=FuncformerConfig(heads=2, depth=2))
    bare = funcformer(6, Vector(8), config=FuncformerConfig(heads=2, depth=2, norms=False))
    sparse = funcformer(6, Vector(8), config=FuncformerConfig(heads=2, depth=3, attend_every=2))
    cm = CrossModal(Vector(3), Chebyshev(7), Vector(1), Vector(8), Vector(16), CrossModalConfig(2, 1, 2))
    pad = Padded(9, [9, 4, 6])
    return [
        ("encoder layer", layer, lambda: (Field(torch.randn(2, 5, 8), (Vector(5), Vector(8))),), Vector(5)),
        ("post-norm layer", post, lambda: (Field(torch.randn(2, 5, 8), (Vector(5), Vector(8))),), Vector(5)),
        ("funcformer", ff, lambda: (Field(torch.randn(2, 6, 6), (Chebyshev(6), Chebyshev(6))),), None),
        ("funcformer, no norms", bare, lambda: (Field(torch.randn(2, 6, 6), (Chebyshev(6), Chebyshev(6))),), None),
        (
            "funcformer, attending every other layer",
            sparse,
            lambda: (Field(torch.randn(2, 6, 6), (Chebyshev(6), Chebyshev(6))),),
            None,
        ),
        ("cross-modal", cm, lambda: (Field(torch.randn(3, 9, 3), (pad, Vector(3))),), pad),
    ]


def _trace(model: nn.Module, args: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run ``model`` recording each module's Field inputs/output and every attention and MLP call's structures."""
    seen: dict[str, tuple[list[Sig], Sig]] = {}
    calls: dict[str, list[Any]] = {"attention": [], "mlp": []}
    names = {m: n for n, m in model.named_modules()}

    def hook(m: nn.Module, a: tuple[Any, ...], out: Any) -> None:
        seen[names[m]] = ([sig(x.structures) for x in a if isinstance(x, Field)], sig(out.structures))

    attention, mlp = applicative.attention, applicative.mlp  # what the modules call

    def spy_attention(normalise: Any, q: Field[Any], k: Field[Any], v: Field[Any], **kw: Any) -> Any:
        calls["attention"].append((sig(q.structures), sig(k.structures), sig(v.structures)))
        return attention(normalise, q, k, v, **kw)

    def spy_mlp(w1: Field[Any, Any], *rest: Any) -> Any:
        calls["mlp"].append(sig(w1.structures))
        return mlp(w1, *rest)

    monkeypatch.setattr(applicative._modules, "attention", spy_attention)
    monkeypatch.setattr(models.transformer, "mlp", spy_mlp)
    handles = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        model(*args)
    finally:
        for h in handles:
            h.remove()
    return {"modules": seen, **calls}


def _within(d: Diagram, name: str) -> list[Any]:
    return [s for s in d.steps if not name or s.module == name or s.module.startswith(name + ".")]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_tubes_match_a_forward_pass(case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _, model, make, sequence = _cases()[case]
    d = diagram(model, sequence)
    trace = _trace(model, make(), monkeypatch)
    assert trace["modules"], "no module ran"
    for name, (inputs, output) in trace["modules"].items():
        steps = _within(d, name)
        assert steps, f"module {name!r} ran but has no steps in the diagram"
        first = next(s for s in steps if s.inputs)
        assert sig(first.inputs[0]) == inputs[0], name
        if len(inputs) > 1:  # attention's memory, a decoder layer's memory
            cross = next(s for s in steps if s.kind == "attention" and len(s.inputs) > 1 and s.inputs[0] != s.inputs[1])
            assert sig(cross.inputs[1]) == inputs[1], name
        assert sig(steps[-1].output) == output, name
    gadgets = [s for s in d.steps if s.kind == "attention"]
    assert [tuple(sig(t) for t in s.inner[:3]) for s in gadgets] == trace["attention"]
    for s in gadgets:  # scores: the doubly nested tube of the queries' and the keys' sequences, capped on the keys'
        assert s.inner[3] == (s.inner[0][0], s.inner[1][0])
        assert s.inner[1][0] in [c.structure for c in s.caps]
    linear1 = [s for s in d.steps if s.module.endswith("linear1")]
    assert [sig(s.parameters[0].tubes) for s in linear1] == trace["mlp"]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_red_triangles_are_the_parameters(case: int) -> None:
    _, model, _, sequence = _cases()[case]
    d = diagram(model, sequence)
    params = dict(model.named_parameters())
    drawn: dict[str, int] = {}
    for p in d.parameters:
        assert p.name in params, f"the diagram draws {p.name!r}, which the model does not have"
        drawn[p.name] = drawn.get(p.name, 0) + math.prod(s.size for s in p.tubes)
        assert params[p.name].shape[-1] == p.tubes[-1].size or params[p.name].ndim == 1
    assert drawn == {k: v.numel() for k, v in params.items()}


def test_gadget_counts_of_an_encoder_layer() -> None:
    """Per the design source: a linear map is pants + cap on its input tube; attention caps the head and keys."""
    d = diagram(EncoderLayer(Vector(8), Vector(12), 2, norm_first=True), Vector(5))
    kinds = [s.kind for s in d.steps]
    assert kinds == ["copy", "layer_norm", "attention", "linear", "residual",
                     "copy", "layer_norm", "linear", "fmap", "linear", "residual"]  # fmt: skip
    assert [c.structure for c in d.steps[2].caps] == [Vector(8), Vector(4), Vector(5)]
    assert set(d.tubes) == {Vector(5), Vector(8), Vector(4), Vector(12)}
    bare = diagram(EncoderLayer(Vector(8), Vector(12), 2, norm_first=True, norms=False), Vector(5))
    assert [s.kind for s in bare.steps] == [k for k in kinds if k != "layer_norm"]
    mlp_only = diagram(EncoderLayer(Vector(8), Vector(12), 2, norm_first=True, attend=False), Vector(5))
    assert [s.kind for s in mlp_only.steps] == kinds[5:]
    assert [s.module for s in mlp_only.steps if s.kind == "layer_norm"] == ["norm2"]


def test_render_writes_pictures(tmp_path: Path) -> None:
    for ext in ("svg", "png"):
        for title, model, _, sequence in _cases()[::2]:
            path = tmp_path / f"{title.replace(' ', '_')}.{ext}"
            render(diagram(model, sequence), path, title)
            assert path.exists()


def test_errors_say_what_is_missing() -> None:
    with pytest.raises(StructureError, match="sequence"):
        diagram(EncoderLayer(Vector(8), Vector(12), 2))
    with pytest.raises(StructureError, match="no tube diagram for a Linear"):
        diagram(nn.Linear(2, 3))
