"""Padding is inert in both directions: whatever a padded position holds (NaN, infinities, huge numbers), valid
outputs and every gradient are unchanged.

A position of weight zero is selected out (``torch.where`` on the inputs, before any arithmetic), not multiplied
by zero: ``0 · NaN`` is NaN, in a forward pass and in a backward one alike. For every ragged structure --
:class:`Padded`, trees (both measures), :class:`Graph` (its counting measure and its edge attention),
:class:`DAG` -- and every route attention takes (the fused SDPA kernel, flex's eager kernel, the Galerkin form,
the generic definition, causal), the valid outputs with garbage in the padding equal those with zeros there;
for :class:`Padded` they also equal each example run alone, unpadded (an independent reference: no mask at all).
Backward: every parameter's gradient of a loss on the valid outputs, for an encoder over each structure, a DAG
fold and the cross-modal model, in float32 and float64, is finite and equal to the clean run's; so is the
gradient the derived kernels pass to their inputs, exactly zero at the padding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

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
    StructureError,
    attention,
    counit,
    kernels,
    mul_mm,
)
from instances import DAG, Chebyshev, EdgeSoftmax, Expressions, Graph, NodeAlgebra, Padded, Tree, Vector
from models import DAGFold, Funcformer, FuncformerConfig, LinearRegression, TreeFold, encoder
from models.crossmodal import CrossModal
from training.tasks.cross_modal.config import PRESETS as CROSS_MODAL
from training.tasks.cross_modal.model import PointsModel

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


def _inputs(s: Structure, fill: float, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Random features ``(*batch, n, WIDTH)`` with zeros in the padding, and the same with ``fill`` there."""
    g = torch.Generator().manual_seed(0)
    valid = _valid(s)
    x = torch.randn(*valid.shape, WIDTH, generator=g, dtype=torch.float64).to(dtype)
    x = torch.where(valid[..., None], x, 0)
    return x, torch.where(valid[..., None], x, fill)


DTYPES = [torch.float32, torch.float64]
Run = tuple[torch.Tensor, dict[str, torch.Tensor]]


def _run(net: torch.nn.Module, forward: Callable[[], torch.Tensor]) -> Run:
    """The valid outputs ``forward()`` returns, and every parameter's gradient of a loss on them."""
    net.zero_grad()
    out = forward()
    weights = torch.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)
    (weights * out).sum().backward()
    grads = {}
    for name, p in net.named_parameters():
        assert p.grad is not None, f"{name} has no gradient"
        grads[name] = p.grad.clone()
    return out.detach(), grads


def _same(got: Run, want: Run) -> None:
    """Valid outputs and gradients finite, and equal to the clean run's (the same arithmetic: to the bit)."""
    assert bool(torch.isfinite(want[0]).all())
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=0)
    for name, grad in want[1].items():
        assert bool(torch.isfinite(got[1][name]).all()), f"{name}'s gradient is not finite"
        torch.testing.assert_close(got[1][name], grad, rtol=0, atol=0, msg=lambda m, n=name: f"{n}: {m}")


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
    from applicative import _lowering

    calls = []
    real = _lowering.fused_attention

    def counting(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_lowering, "fused_attention", counting)
    s = _structures()["padded"]
    _, x = _inputs(s, float("nan"))
    f = Field(x, (s, Vector(WIDTH)))
    attention(ScaledSoftmax(0.5), f, f, f)
    assert len(calls) == 1


# ---- backward: no gradient through padding ------------------------------------------------------------------


#: every structure under every normalisation, and the graph under its edge attention
ENCODERS = [(name, kind) for name in _structures() for kind in NORMALISATIONS] + [("graph", "edges")]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
@pytest.mark.parametrize(("name", "kind"), ENCODERS, ids=[f"{n}-{k}" for n, k in ENCODERS])
def test_no_gradient_flows_through_an_encoders_padding(name: str, kind: str, fill: float, dtype: torch.dtype) -> None:
    """One NaN in the padding once left the valid outputs unchanged but made ``embed.weight.grad`` NaN."""
    s = _structures()[name]
    torch.manual_seed(0)
    normalise = EdgeSoftmax(0.5) if kind == "edges" else NORMALISATIONS[kind]
    net = encoder(Vector(WIDTH), Vector(WIDTH), Vector(16), 2, 2, normalise=normalise, dtype=dtype)
    clean, dirty = _inputs(s, fill, dtype)
    valid = _valid(s)
    want = _run(net, lambda: net(Field(clean, (s, Vector(WIDTH)))).tensor[valid])
    _same(_run(net, lambda: net(Field(dirty, (s, Vector(WIDTH)))).tensor[valid]), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
def test_no_gradient_flows_through_a_dag_folds_padding(fill: float, dtype: torch.dtype) -> None:
    dag = _structures()["dag"]
    assert isinstance(dag, DAG)
    torch.manual_seed(0)
    fold = DAGFold(Vector(WIDTH), Vector(WIDTH), Vector(16), 1, dtype=dtype)
    clean, dirty = _inputs(dag, fill, dtype)
    want = _run(fold, lambda: dag.last(fold(dag, Field(clean, (dag, Vector(WIDTH))))).tensor)
    _same(_run(fold, lambda: dag.last(fold(dag, Field(dirty, (dag, Vector(WIDTH))))).tensor), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
def test_the_cross_modal_model_ignores_padding_in_both_directions(fill: float, dtype: torch.dtype) -> None:
    """Coordinates and values beyond each example's length hold garbage: the output and every gradient are
    the clean run's (its standardisation selects the padding out; it once multiplied it by the mask)."""
    torch.manual_seed(0)
    model = PointsModel(CROSS_MODAL["tiny"]).to(dtype)
    lengths = torch.tensor([7, 3, 5])
    g = torch.Generator().manual_seed(1)
    valid = torch.arange(7) < lengths[:, None]
    x = torch.where(valid, 2 * torch.rand(3, 7, generator=g, dtype=torch.float64) - 1, 0).to(dtype)
    f = torch.where(valid, torch.randn(3, 7, generator=g, dtype=torch.float64), 0).to(dtype)
    want = _run(model, lambda: model(x, f, lengths))
    dirty_x, dirty_f = torch.where(valid, x, fill), torch.where(valid, f, fill)
    _same(_run(model, lambda: model(dirty_x, dirty_f, lengths)), want)


def _transposed(x: Field[Padded, Vector]) -> Field[Vector, Padded]:
    return Field(x.tensor.transpose(-1, -2), (Vector(WIDTH), x.structures[0]))


#: each kernel on a field ``Padded x Vector``: its output, and where the output is valid (``None``: everywhere)
KERNELS: dict[str, Callable[[Field[Padded, Vector], torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]] = {
    "counit": lambda x, valid: (counit(x).tensor, None),
    "contract": lambda x, valid: (mul_mm(_transposed(x), x).tensor, None),
    "softmax": lambda x, valid: (kernels.softmax(x.structures[0], x.tensor, -2), valid[..., None]),
    "layer norm": lambda x, valid: (
        kernels.layer_norm(x.structures[0], x.tensor.transpose(-1, -2), None, None, 1e-5),
        valid[:, None, :],
    ),
    "attention": lambda x, valid: (attention(ScaledSoftmax(0.5), _queries(x, valid), x, x).tensor, valid[..., None]),
    "attention (generic)": lambda x, valid: (
        attention(ScaledSoftmax(0.5), _queries(x, valid), x, x, fused=False).tensor,
        valid[..., None],
    ),
}


def _queries(x: Field[Padded, Vector], valid: torch.Tensor) -> Field[Padded, Vector]:
    """Queries whose padding is selected out, as a model's are: a query is attended with like any other (as in
    PyTorch), so its garbage would reach its own (meaningless) output and, backward, the keys' gradients."""
    return x.with_tensor(torch.where(valid[..., None], x.tensor, 0))


@pytest.mark.parametrize("fill", GARBAGE, ids=["nan", "inf", "-inf", "huge"])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_derived_kernels_pass_no_gradient_to_padding(kernel: str, fill: float) -> None:
    """Each kernel on a padded field with garbage in its padding: the gradient it passes back to its input is
    finite, zero at the padding and, at valid positions, the clean run's; its valid outputs are the clean run's.

    (Attention's outputs at padded queries are computed from those queries, like any other: not valid.)
    """
    s = _structures()["padded"]
    clean, dirty = _inputs(s, fill)
    valid = _valid(s)

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.clone().requires_grad_(True)
        out, keep = KERNELS[kernel](Field(x, (s, Vector(WIDTH))), valid)
        out = out if keep is None else torch.where(keep, out, 0)  # selected: the loss reads valid outputs only
        weights = torch.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)
        (weights * out).sum().backward()
        assert x.grad is not None
        return out.detach(), x.grad

    want_out, want_grad = run(clean)
    got_out, got_grad = run(dirty)
    assert bool(torch.isfinite(want_out).all())
    torch.testing.assert_close(got_out, want_out, rtol=0, atol=0)
    assert bool(torch.isfinite(got_grad).all())
    assert bool((got_grad[~valid] == 0).all())
    torch.testing.assert_close(got_grad, want_grad, rtol=0, atol=0)


# ---- models refuse what is not finite at a valid position, in their own dtype ---------------------------------


MODELS: dict[str, tuple[Callable[[], torch.nn.Module], Callable[[torch.nn.Module, torch.Tensor], object]]] = {
    "encoder": (
        lambda: encoder(Vector(WIDTH), Vector(WIDTH), Vector(16), 2, 1),
        lambda m, x: m(Field(x, (Padded(5, [5, 2, 3]), Vector(WIDTH)))),
    ),
    "cross-modal": (
        lambda: CrossModal(Vector(WIDTH), Chebyshev(4), Vector(1), Vector(8), Vector(16)),
        lambda m, x: m(Field(x, (Padded(5, [5, 2, 3]), Vector(WIDTH)))),
    ),
    "funcformer": (
        lambda: Funcformer(Chebyshev(5), Chebyshev(WIDTH), Vector(8), Vector(16), FuncformerConfig(heads=1, depth=1)),
        lambda m, x: m(Field(x, (Chebyshev(5), Chebyshev(WIDTH)))),
    ),
    "dag fold": (
        lambda: DAGFold(Vector(WIDTH), Vector(WIDTH), Vector(16), 1),
        lambda m, x: m(_structures()["dag"], Field(x[:2, :4], (_structures()["dag"], Vector(WIDTH)))),
    ),
    "linear regression": (
        lambda: LinearRegression(Vector(WIDTH), Vector(2)),
        lambda m, x: m(Field(x, (Vector(WIDTH),))),
    ),
}


@pytest.mark.parametrize("model", list(MODELS))
def test_a_model_refuses_non_finite_input_in_its_own_dtype(model: str) -> None:
    build, call = MODELS[model]
    torch.manual_seed(0)
    net = build()  # float32
    x = torch.randn(3, 5, WIDTH, dtype=torch.float64)
    call(net, x.float())  # the control: accepted
    for bad, says in ((math.nan, "the first nan"), (-math.inf, "the first -inf"), (1e39, "infinite in the model's")):
        y = x.clone()
        y[0, 0, 1] = bad
        with pytest.raises(StructureError, match=rf"holds 1 NaN or infinite value\(s\) of \d+, .*{says}"):
            call(net, y if bad == 1e39 else y.float())  # 1e39: finite in float64, infinite in the model's float32
    y = x.clone()
    y[1, 4, :] = math.nan  # padding of Padded(5, [5, 2, 3]) for the sequence models: accepted there
    if model in ("encoder", "cross-modal"):
        out = call(net, y.float())
        assert isinstance(out, Field) and bool(torch.isfinite(out.tensor).all())
