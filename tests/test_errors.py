"""Bad input fails loudly: mismatched structures, shapes, dtypes, devices, rings and non-finite values.

Each error must be a :class:`StructureError` whose message names the
operation and both structures (or both dtypes/devices/rings) involved.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
import torch

import applicative as ap
from applicative import Field, StructureError
from instances import MAX_PLUS, Tree, Vector
from models import (
    DecoderLayer,
    EncoderDecoder,
    EncoderLayer,
    Funcformer,
    FuncformerConfig,
    Readout,
    decoder,
    encoder,
)


class Seq(Vector):
    size = 5


class Model(Vector):
    size = 8


class Hidden(Vector):
    size = 8  # same size as Model: only the nominal type tells them apart


class Head(Vector):
    size = 4


def raises(fn: Callable[[], object], *fragments: str) -> str:
    """Run ``fn``; it must raise :class:`StructureError` whose message contains every fragment."""
    with pytest.raises(StructureError) as info:
        fn()
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in error message {msg!r}"
    return msg


x = Field(torch.randn(5, 8), (Seq(), Model()))
h = Field(torch.randn(5, 8), (Seq(), Hidden()))
w = Field(torch.randn(8, 8), (Hidden(), Model()))  # Model -> Hidden


MISMATCHES: dict[str, tuple[Callable[[], object], str, str, str]] = {
    "mul_mv": (lambda: ap.mul_mv(w, Field(torch.randn(8), (Hidden(),))), "mul_mv", "Model(8)", "Hidden(8)"),
    "mul_vm": (lambda: ap.mul_vm(Field(torch.randn(8), (Model(),)), w), "mul_vm", "Model(8)", "Hidden(8)"),
    "mul_mm": (lambda: ap.mul_mm(x, w), "mul_mm", "Model(8)", "Hidden(8)"),
    "mul_mmt": (lambda: ap.mul_mmt(w, h), "mul_mmt", "Model(8)", "Hidden(8)"),
    "dot": (lambda: ap.dot(x, h), "dot", "Model(8)", "Hidden(8)"),
    "attention keys": (lambda: ap.attention(ap.ScaledSoftmax(), x, h, h), "attention", "Model(8)", "Hidden(8)"),
    "attention values": (
        lambda: ap.attention(ap.ScaledSoftmax(), x, x, Field(torch.randn(8, 3), (Model(), Vector(3)))),
        "attention",
        "Seq(5)",
        "Model(8)",
    ),
    "attention unfused": (
        lambda: ap.attention(ap.ScaledSoftmax(), x, h, h, fused=False),
        "attention",
        "Model(8)",
        "Hidden(8)",
    ),
    "linear input": (lambda: ap.linear(w, None, h), "linear", "Model(8)", "Hidden(8)"),
    "linear bias": (lambda: ap.linear(w, Field(torch.randn(8), (Model(),)), x), "linear", "Model(8)", "Hidden(8)"),
    "mlp": (
        lambda: ap.mlp(w, Field(torch.randn(8), (Hidden(),)), w, Field(torch.randn(8), (Hidden(),)), torch.relu, x),
        "linear",
        "Model(8)",
        "Hidden(8)",
    ),
    "add": (lambda: ap.add(x, h), "add", "Model(8)", "Hidden(8)"),
    "mul": (lambda: ap.mul(x, h), "mul", "Model(8)", "Hidden(8)"),
    "add anonymous": (
        lambda: ap.add(x, Field(torch.randn(5, 8), (Vector(5), Model()))),
        "add",
        "Seq(5)",
        "Vector(5)",
    ),
    "zip_with": (
        lambda: ap.zip_with(ap.dot, x, Field(torch.randn(8, 8), (Hidden(), Model()))),
        "zip_with",
        "Seq(5)",
        "Hidden(8)",
    ),
    "layer_norm": (
        lambda: ap.layer_norm(x, Field(torch.ones(8), (Hidden(),)), None),
        "layer_norm",
        "Hidden(8)",
        "Model(8)",
    ),
    "MultiHeadAttention": (
        lambda: ap.MultiHeadAttention(Model(), Head(), Head(), 2)(h),
        "MultiHeadAttention",
        "Hidden(8)",
        "Model(8)",
    ),
    "MultiHeadAttention memory": (
        lambda: ap.MultiHeadAttention(Model(), Head(), Head(), 2)(x, h),
        "MultiHeadAttention",
        "Hidden(8)",
        "Model(8)",
    ),
    "EncoderLayer": (lambda: EncoderLayer(Model(), Vector(16), 2)(h), "MultiHeadAttention", "Hidden(8)", "Model(8)"),
    "Linear module": (lambda: ap.Linear(Model(), Head())(h), "linear", "Model(8)", "Hidden(8)"),
    "LayerNorm module": (lambda: ap.LayerNorm(Model())(h), "layer_norm", "Model(8)", "Hidden(8)"),
}


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_mismatch_names_operation_and_both_structures(case: str) -> None:
    fn, op, first, second = MISMATCHES[case]
    msg = raises(fn, first, second)
    assert msg.startswith(op), f"message should start with the operation {op!r}: {msg!r}"


def test_layer_norm_checks_its_input_axis() -> None:
    """``LayerNorm(Model)`` on ``Seq x Hidden``: the mismatch is reported, not silently normalised."""
    raises(
        lambda: ap.LayerNorm(Model())(h), "layer_norm", "the weight is Model(8)", "the input's last axis is Hidden(8)"
    )


# ---- Field construction -----------------------------------------------------------------


def test_field_wrong_size() -> None:
    msg = raises(lambda: Field(torch.randn(5, 7), (Seq(), Model())), "Field", "Model(8)")
    assert re.search(r"\b8\b", msg) and re.search(r"\b7\b", msg) and "(5, 7)" in msg


def test_field_too_few_dimensions() -> None:
    raises(lambda: Field(torch.randn(8), (Seq(), Model())), "Field", "Seq(5)", "Model(8)", "(8,)")


def test_field_axis_not_a_structure() -> None:
    raises(lambda: Field(torch.randn(5, 8), (Seq(), 8)), "Field", "axis 1", "not a Structure")  # type: ignore[arg-type]


def test_field_not_a_tensor() -> None:
    raises(lambda: Field([1.0, 2.0], (Vector(2),)), "torch.Tensor", "list")  # type: ignore[arg-type]


def test_vector_declared_size() -> None:
    raises(lambda: Seq(6), "Seq", "5", "6")
    raises(lambda: Vector(), "Vector", "size")
    with pytest.raises(StructureError, match="positive"):

        class Bad(Vector):
            size = 0


# ---- dtypes, devices, rings ---------------------------------------------------------------


def test_integer_tensor_rejected_by_ring() -> None:
    raises(lambda: Field(torch.ones(5, 8, dtype=torch.long), (Seq(), Model())), "Real()", "torch.int64", ".to(")
    raises(lambda: Field(torch.ones(8, dtype=torch.complex64), (Model(),), MAX_PLUS), "MaxPlus()", "complex64")


DTYPE_MIXES: dict[str, Callable[[Field[Seq, Model]], object]] = {
    "add": lambda y: ap.add(x, y),
    "mul_mm": lambda y: ap.mul_mm(x, Field(torch.randn(8, 8, dtype=y.dtype, device=y.device), (Model(), Model()))),
    "mul_mmt": lambda y: ap.mul_mmt(Field(torch.randn(3, 8), (Vector(3), Model())), y),
    "dot": lambda y: ap.dot(x, y),
    "linear": lambda y: ap.Linear(Model(), Hidden())(y),
    "attention": lambda y: ap.attention(ap.ScaledSoftmax(), x, y, y),
    "layer_norm": lambda y: ap.LayerNorm(Model())(y),
    "MultiHeadAttention": lambda y: ap.MultiHeadAttention(Model(), Head(), Head(), 2)(y),
    "DecoderLayer memory": lambda y: DecoderLayer(Model(), Vector(16), 2, norm_first=True)(x, y),
}


@pytest.mark.parametrize("op", list(DTYPE_MIXES))
def test_dtype_mix(op: str) -> None:
    raises(lambda: DTYPE_MIXES[op](x.to(torch.float64)), "torch.float32", "torch.float64")


@pytest.mark.parametrize("op", list(DTYPE_MIXES))
def test_device_mix(op: str) -> None:
    """A second device without a GPU: the ``meta`` device."""
    raises(lambda: DTYPE_MIXES[op](x.to("meta")), "cpu", "meta")


@pytest.mark.parametrize(
    ("op", "who"),
    [
        ("attention", "keys has torch.float64"),
        ("linear", "the input has torch.float64"),
        ("layer_norm", "the input has torch.float64"),
        ("add", "argument 2 has torch.float64"),
    ],
)
def test_mix_names_the_argument(op: str, who: str) -> None:
    raises(lambda: DTYPE_MIXES[op](x.to(torch.float64)), who)


def test_ring_mix() -> None:
    tropical = Field(x.tensor, x.axes, MAX_PLUS)
    raises(lambda: ap.add(x, tropical), "add", "Real()", "MaxPlus()")
    raises(lambda: ap.mul_mm(tropical, Field(torch.randn(8, 8), (Model(), Model()))), "mul_mm", "rings")


# ---- non-finite values ---------------------------------------------------------------------


def test_check_finite_passes_finite_values_through() -> None:
    assert x.check_finite() is x


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_check_finite_reports_count_and_first_position(bad: float) -> None:
    t = torch.randn(2, 5, 8)
    positions = [(1, 3, 2), (0, 4, 7), (1, 0, 0)]
    for p in positions:
        t[p] = bad
    first = min(positions)  # row-major order
    f = Field(t, (Seq(), Model()))
    raises(
        lambda: f.check_finite("encoder input"), "encoder input", f"{len(positions)} non-finite", str(first), str(bad)
    )


# ---- bad arguments and raw inputs ------------------------------------------------------------


def test_vector_size_must_be_an_int() -> None:
    raises(lambda: Vector(2.5), "Vector", "positive int", "2.5", "float")  # type: ignore[arg-type]
    raises(lambda: Vector(True), "Vector", "positive int", "True", "bool")
    raises(lambda: Seq(5.0), "Seq", "positive int", "5.0")  # type: ignore[arg-type]
    assert Vector(np.int64(3)).size == 3 and type(Vector(np.int64(3)).size) is int  # type: ignore[arg-type]


def test_heads_and_depth_are_validated() -> None:
    raises(lambda: encoder(Vector(4), Vector(8), Vector(16), heads=0, depth=2), "encoder", "heads", ">= 1", "0")
    raises(lambda: decoder(Vector(4), Vector(8), Vector(16), heads=0, depth=2), "decoder", "heads", ">= 1", "0")
    raises(lambda: encoder(Vector(4), Vector(8), Vector(16), heads=2, depth=-1), "encoder", "depth", ">= 0", "-1")
    raises(lambda: decoder(Vector(4), Vector(8), Vector(16), heads=2, depth=1.5), "decoder", "depth", "1.5")  # type: ignore[arg-type]
    raises(lambda: encoder(Vector(4), Vector(8), Vector(16), heads=True, depth=1), "encoder", "heads", "True")
    raises(lambda: EncoderLayer(Model(), Vector(16), 0), "EncoderLayer", "heads", "0")
    raises(lambda: DecoderLayer(Model(), Vector(16), -2), "DecoderLayer", "heads", "-2")
    assert len(encoder(Vector(4), Vector(8), Vector(16), heads=2, depth=0).layers) == 0  # embed/unembed only


RAW_INPUTS: dict[str, Callable[[torch.Tensor], object]] = {
    "Linear": lambda t: ap.Linear(Model(), Head())(t),  # type: ignore[arg-type]
    "LayerNorm": lambda t: ap.LayerNorm(Model())(t),  # type: ignore[arg-type]
    "MLP": lambda t: ap.MLP(Model(), Hidden(), Model())(t),  # type: ignore[arg-type]
    "MultiHeadAttention": lambda t: ap.MultiHeadAttention(Model(), Head(), Head(), 2)(t),  # type: ignore[arg-type]
    "MultiHeadAttention memory": lambda t: ap.MultiHeadAttention(Model(), Head(), Head(), 2)(x, t),  # type: ignore[arg-type]
    "EncoderLayer": lambda t: EncoderLayer(Model(), Vector(16), 2)(t),  # type: ignore[arg-type]
    "DecoderLayer memory": lambda t: DecoderLayer(Model(), Vector(16), 2)(x, t),  # type: ignore[arg-type]
    "Transformer": lambda t: encoder(Model(), Model(), Vector(16), 2, 1)(t),  # type: ignore[arg-type]
    "EncoderDecoder": lambda t: EncoderDecoder(Model(), Model(), [], [])(t, x),  # type: ignore[arg-type]
    "Funcformer": lambda t: Funcformer(Seq(), Model(), Vector(4), Vector(8), FuncformerConfig(heads=1, depth=1))(t),  # type: ignore[arg-type]
    "Readout": lambda t: Readout(encoder(Model(), Model(), Vector(16), 2, 1), 3)(t),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("op", list(RAW_INPUTS))
def test_raw_tensor_instead_of_a_field(op: str) -> None:
    raises(
        lambda: RAW_INPUTS[op](torch.randn(5, 8)),
        op.split()[0],
        "expected a Field",
        "got a torch.Tensor of shape (5, 8)",
        "Field(tensor, (",
    )


def test_tree_from_nested_lists() -> None:
    tree = Tree([[1, 1], [0, -1]])  # type: ignore[arg-type]
    assert tree.depths(0) == [1, 1] and tree.depths(1) == [0]
    raises(lambda: Tree([[1, 1], [0]]), "Tree", "leaf depths", "pad shorter trees with -1")  # type: ignore[arg-type]
    raises(lambda: Tree([[1.0, 1.0]]), "Tree", "integer", "float")  # type: ignore[arg-type]
    raises(lambda: Tree("1 1"), "Tree", "leaf depths", "str")  # type: ignore[arg-type]


def test_tree_constructors_want_lists() -> None:
    raises(
        lambda: Tree.from_sexp("((a b) c)"),
        "Tree.from_sexp: expected a list of s-expressions, got a str",
        'Tree.from_sexp(["((a b) c)"])',
    )
    raises(lambda: Tree.from_nested(5), "Tree.from_nested", "expected a list", "got an int", "[5]")  # type: ignore[arg-type]
    raises(lambda: Tree.from_nested("ab"), "Tree.from_nested", "expected a list", "got a str")


def test_very_deep_nesting_reports_the_depth() -> None:
    deep: object = 0
    for _ in range(5000):
        deep = (deep, 0)
    msg = raises(lambda: Tree.from_nested([deep]), "deeper than the maximum depth")  # type: ignore[list-item]
    assert len(msg) < 400, msg
    wide = tuple(range(10_000))
    assert len(raises(lambda: Tree.from_nested([wide]), "2-tuple", "10000-tuple")) < 400  # type: ignore[list-item]
    leaf: object = [0]
    for _ in range(5000):
        leaf = [leaf]
    assert len(raises(lambda: Tree.from_sexp([leaf]), "from_sexp")) < 400  # type: ignore[list-item]


def test_depths_of_a_batched_tree_needs_an_index() -> None:
    tree, _ = Tree.from_nested([(1, 2), ((1, 2), 3)])
    raises(lambda: tree.depths(), "Tree.depths", "batch (2,)", "index=")
    raises(lambda: tree.depths(2), "Tree.depths", "batch (2,)", "2")
    assert tree.depths(1) == [2, 2, 1]


def test_encoder_decoder_every_parameter_gets_a_gradient() -> None:
    torch.manual_seed(0)
    enc = [EncoderLayer(Model(), Vector(16), 2) for _ in range(2)]
    dec = [DecoderLayer(Model(), Vector(16), 2) for _ in range(2)]
    model = EncoderDecoder(Model(), Model(), enc, dec)
    model(x, Field(torch.randn(3, 8), (Vector(3), Model()))).tensor.sum().backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None]
    assert not missing, missing


def test_readout_returns_a_field() -> None:
    clf = Readout(encoder(Model(), Model(), Vector(16), 2, 1), classes=3)
    out = clf(Field(torch.randn(4, 5, 8), (Seq(), Model())))
    assert isinstance(out, Field) and out.structures == (Vector(3),) and out.tensor.shape == (4, 3)


def test_a_decoder_checks_order_at_build_or_says_at_forward_in_one_line() -> None:
    from instances import Chebyshev

    # at build: the sequence, when given
    msg = raises(lambda: decoder(Model(), Model(), Vector(16), 2, 1, sequence=Chebyshev(5)), "decoder", "Chebyshev(5)")
    assert "ordered" in msg and "\n" not in msg
    # otherwise the sequence arrives with the input: checked first thing, naming the model, the structure and the fix
    model = decoder(Model(), Model(), Vector(16), 2, 1)
    unordered = Field(torch.randn(5, 8), (Chebyshev(5), Model()))
    msg = raises(lambda: model(unordered), "Transformer", "Chebyshev(5)", "`ordered`", "Vector, Padded", "sequence=")
    assert "\n" not in msg
    enc = [EncoderLayer(Model(), Vector(16), 2)]
    dec = [DecoderLayer(Model(), Vector(16), 2)]
    both = EncoderDecoder(Model(), Model(), enc, dec)
    msg = raises(lambda: both(x, unordered), "EncoderDecoder", "Chebyshev(5)", "`ordered`", "normalise=")
    assert "\n" not in msg
    # a non-causal encoder over the same structure is fine
    encoder(Model(), Model(), Vector(16), 2, 1)(unordered)
