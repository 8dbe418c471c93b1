"""Generic blocks built from the linear algebra: MLP, layer norm, residual.

mlp x        = linear W2 b2 (fmap σ (linear W1 b1 x))
layer_norm x = (x - mean) / sqrt(var + eps) * γ + β,
               mean = counit x / counit (pure 1),  var = counit ((x - mean)²) / counit (pure 1)
residual f x = zip_with add (f x) x
position_wise f x = fmap (fmap ... f) x   (f on the last axis, at every position of the others)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple, cast

from torch import Tensor

from . import _kernels as kernels
from ._algebra import add, fmap_last, join, linear, pointwise
from ._errors import StructureError
from ._field import Field, check_compatible
from ._structure import Pointwise, Structure

D = TypeVar("D", bound=Structure)
Dff = TypeVar("Dff", bound=Structure)
O = TypeVar("O", bound=Structure)
B = TypeVarTuple("B")
A = TypeVarTuple("A")


def mlp(
    w1: Field[Dff, D],
    b1: Field[Dff],
    w2: Field[O, Dff],
    b2: Field[O],
    activation: Pointwise,
    x: Field[*B, D],
) -> Field[*B, O]:
    """Two affine maps with a pointwise activation between them (``fmap σ``)."""
    return linear(w2, b2, pointwise(activation, linear(w1, b1, x)))


def layer_norm(
    x: Field[*B, D],
    weight: Field[D] | None,
    bias: Field[D] | None,
    eps: float = 1e-5,
) -> Field[*B, D]:
    """Layer norm over the last axis, with mean and variance taken through its counit."""
    d = x.structures[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            join("layer_norm", f"the {name}", p.structures[0], "the input's last axis", d)
            check_compatible("layer_norm", x, p, names=("the input", f"the {name}"))
    w, b = (None if weight is None else weight.tensor), (None if bias is None else bias.tensor)
    return x.with_tensor(fmap_last(lambda t: kernels.layer_norm(d, t, w, b, eps), x.tensor, x.structures))


def position_wise(f: Callable[[Field[D]], Field[D]], x: Field[*B, D]) -> Field[*B, D]:
    """``f``, a map of the last axis's values, at every position of ``x``'s leading typed axes, through their
    positions once: ``fmap (fmap ... f)``.

    A Transformer's MLP (and its norm, and the residual sum) acts at each position alone. Step by step, each
    pointwise step on a leading axis stored in another basis (a series' coefficients) goes to the positions and
    back, and a bias is lifted onto the series; as one ``f`` it goes once. The two agree: on ``n`` positions a series
    of ``n`` terms changes basis invertibly (the round trip is the identity up to rounding), and the affine maps act
    on the last axis alone. ``x`` ``(..., |A|, ..., |D|)`` -> the same shape; ``f`` receives ``Field[D]``
    whose batch holds the leading axes' positions, and must keep ``D``.
    """
    d = cast("D", x.structures[-1])

    def g(t: Tensor) -> Tensor:
        y = f(Field(t, (d,), x.ring))
        if y.structures != (d,):
            raise StructureError(f"position_wise: f must map {d!r} to itself, it returned {y.structures!r}")
        return y.tensor

    return x.with_tensor(fmap_last(g, x.tensor, x.structures))


def residual(f: Callable[[Field[*A]], Field[*A]], x: Field[*A]) -> Field[*A]:
    """``f x + x``."""
    return add(f(x), x)
