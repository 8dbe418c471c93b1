"""Padding is inert: whatever a padded position holds (NaN, infinities, huge numbers), valid outputs are unchanged.

A position of weight zero is masked, not multiplied by zero (``0 · NaN`` is NaN). For every ragged
structure -- :class:`Padded`, trees (both measures), :class:`Graph` (its counting measure and its edge
attention), :class:`DAG` -- and every route attention takes (the fused SDPA kernel, flex's eager kernel,
the Galerkin form, the generic definition, causal), the valid outputs with garbage in the padding equal
those with zeros there; for :class:`Padded` they also equal each example run alone, unpadded (an
independent reference: no mask at all).
"""

from __future__ import annotations

import pytest
import torch

from applicative import (
    Causal,
    Field,
    FlexSoftmax,
    LinearAttention,
    Normalise,
    ReluAttention,
    ScaledSoftmax,
    SoftplusAttention,
    Structure,
    attention,
)
from instances import DAG, EdgeSoftmax, Expressions, Graph, NodeAlgebra, Padded, Tree, Vector
from models import DAGFold, TreeFold, encoder

WIDTH = 8
GARBAGE = (float("nan"), float("inf"), float("-inf"), 1e30)


def _structures() -> dict[str, Structure]:
    return {
        "padded": Padded(5, [5, 2, 3]),
        "tree-sum": Tree([[1, 2, 2, -1], [1, 1, -1, -1], [2, 2, 2, 2]]),
        "tree-mean": Tree([[1, 2, 2, -1], [1, 1, -1, -1], [2, 2, 2, 2]], NodeAlgebra.MEAN),
        "graph": Graph.from_lists([[(0, 1), (1, 2)], [(1, 0)], [(0, 1), (2, 3)]], [3, 2, 4]).with_self_loops(),
        "dag": DAG(
            torch.tensor([[[-1, -1], [-1, -1], [0, 1], [-1, -1]], [[-1, -1], [-1, -1], [0, 1], [2, 1]]]),
            torch.zeros(2, 4, dtype=torch.int64),
            1,
            count=[3, 4],
        ),
    }


def _valid(s: Structure) -> torch.Tensor:
    """``(*batch, n)``: ``True`` where the measure is not zero."""
    return ~torch.isneginf(s.log_measure(torch.float64, torch.device("cpu")))  # type: ignore[union-attr]


def _inputs(s: Structure, fill: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Random features ``(*batch, n, WIDTH)`` with zeros in the padding, and the same with ``fill`` there."""
    g = torch.Generator().manual_seed(0)
    valid = _valid(s)
    x = torch.randn(*valid.shape, WIDTH, generator=g, dtype=torch.float64)
    x = torch.where(valid[..., None], x, 0)
    return x, torch.where(valid[..., None], x, fill)


NORMALISATIONS: dict[str, Normalise] = {
    "sdpa": ScaledSoftmax(0.5),
    "flex-eager": FlexSoftmax(0.5, compiled=False),
    "galerkin": LinearAttention(0.5),
    "relu": ReluAttention(0.5),
    "softplus": SoftplusAttention(0.5),
}


@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
@pytest.mark.parametrize("kind", list(NORMALISATIONS))
@pytest.mark.parametrize("name", list(_structures()))
def test_an_encoder_does_not_read_its_padding(name: str, kind: str, fill: float) -> None:
    s = _structures()[name]
    torch.manual_seed(0)
    net = encoder(Vector(WIDTH), Vector(WIDTH), Vector(16), 2, 2, normalise=NORMALISATIONS[kind], dtype=torch.float64)
    clean, dirty = _inputs(s, fill)
    with torch.no_grad():
        want = net(Field(clean, (s, Vector(WIDTH)))).tensor
        got = net(Field(dirty, (s, Vector(WIDTH)))).tensor
    valid = _valid(s)
    assert bool(torch.isfinite(want[valid]).all())
    torch.testing.assert_close(got[valid], want[valid], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "generic"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_padded_attention_equals_each_example_alone(fill: float, fused: bool, causal: bool) -> None:
    """The independent reference: each example on ``Vector(length)``, with no padding and no mask."""
    s = _structures()["padded"]
    assert isinstance(s, Padded)
    norm: Normalise = Causal(ScaledSoftmax(0.5)) if causal else ScaledSoftmax(0.5)
    _, q = _inputs(s, fill)
    _, k = _inputs(s, fill)
    _, v = _inputs(s, fill)
    k, v = k.roll(1, -1), v.flip(-1)  # three different fields, the same garbage in their padding
    h = Vector(WIDTH)
    out = attention(norm, Field(q, (s, h)), Field(k, (s, h)), Field(v, (s, h)), fused=fused).tensor
    for i, n in enumerate(s.lengths.tolist()):
        alone = Vector(n)
        want = attention(norm, Field(q[i, :n], (alone, h)), Field(k[i, :n], (alone, h)), Field(v[i, :n], (alone, h)))
        torch.testing.assert_close(out[i, :n], want.tensor, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
def test_edge_attention_does_not_read_padding(fill: float) -> None:
    s = _structures()["graph"]
    torch.manual_seed(0)
    net = encoder(Vector(WIDTH), Vector(WIDTH), Vector(16), 2, 1, normalise=EdgeSoftmax(0.5), dtype=torch.float64)
    clean, dirty = _inputs(s, fill)
    with torch.no_grad():
        want = net(Field(clean, (s, Vector(WIDTH)))).tensor
        got = net(Field(dirty, (s, Vector(WIDTH)))).tensor
    valid = _valid(s)
    torch.testing.assert_close(got[valid], want[valid], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
def test_folds_do_not_read_padding(fill: float) -> None:
    """A DAG fold and a tree fold: padding nodes and padding leaves hold garbage, the states of real ones do not."""
    torch.manual_seed(0)
    dag = _structures()["dag"]
    assert isinstance(dag, DAG)
    fold = DAGFold(Vector(WIDTH), Vector(WIDTH), Vector(16), 1, dtype=torch.float64)
    clean, dirty = _inputs(dag, fill)
    with torch.no_grad():
        want = fold(dag, Field(clean, (dag, Vector(WIDTH)))).tensor
        got = fold(dag, Field(dirty, (dag, Vector(WIDTH)))).tensor
    valid = _valid(dag)
    torch.testing.assert_close(got[valid], want[valid], rtol=1e-12, atol=1e-12)

    expressions, _ = Expressions.from_nested([("+", 1, ("*", 2, 3)), ("*", 4, 5)], ["+", "*"])
    tree = TreeFold(Vector(WIDTH), Vector(WIDTH), Vector(16), 2, dtype=torch.float64)
    clean, dirty = _inputs(expressions.tree, fill)
    with torch.no_grad():
        want = tree(expressions, Field(clean, (expressions.tree, Vector(WIDTH)))).tensor
        got = tree(expressions, Field(dirty, (expressions.tree, Vector(WIDTH)))).tensor
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_the_fused_route_is_still_one_sdpa_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Masking the padding keeps attention over a padded axis one fused kernel call."""
    import torch.nn.functional as nnf

    calls = []
    real = nnf.scaled_dot_product_attention

    def counting(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nnf, "scaled_dot_product_attention", counting)
    s = _structures()["padded"]
    _, x = _inputs(s, float("nan"))
    f = Field(x, (s, Vector(WIDTH)))
    attention(ScaledSoftmax(0.5), f, f, f)
    assert len(calls) == 1
