"""Generic Transformers over applicative structures.

A Transformer is written once against two abstract bases -- :class:`Structure` (an applicative with a counit:
``pure``, ``zip_with``/``pair``, ``fmap``, ``counit``, all derived from a small contract) and :class:`Ring`
(``zero``, ``add``, ``mul``) -- and values are :class:`Field` tensors whose trailing axes belong to typed
structures.
"""

from ._algebra import (
    add,
    counit,
    dot,
    fmap,
    join,
    linear,
    mul,
    mul_mm,
    mul_mmt,
    mul_mv,
    mul_vm,
    outer,
    pointwise,
    pointwise2,
    pure,
    scale,
    zip_with,
)
from ._attention import (
    Causal,
    CausalSoftmax,
    FlexSoftmax,
    LinearAttention,
    Normalise,
    ReluAttention,
    ScaledSoftmax,
    SoftplusAttention,
    attention,
    cannot_lower,
    generic_attention,
    lowered,
    scaled_softmax,
    self_attention,
)
from ._data import DataStructure, Lineage, per_example, same_values, unsqueeze_batch
from ._errors import DataError, InputError, StructureError, UserError
from ._field import Field, cat, check_compatible, expect_field, stack
from ._flex import flex_softmax_attention
from ._inputs import clear_padding, require_finite
from ._layers import layer_norm, mlp, position_wise, residual
from ._lowering import FLEX, FLEX_EAGER, GALERKIN, SDPA, Lowering, galerkin_lowering, sdpa_lowering
from ._modules import MLP, LayerNorm, Linear, MultiHeadAttention
from ._pairs import Pairs, PairsBasis
from ._ragged import Ragged
from ._ring import REAL, Capability, Real, Ring
from ._sized import Sized
from ._structure import Basis, Pointwise, Pointwise2, Stacked, Structure, require_order
from ._vector import Vector

__all__ = [
    "FLEX",
    "FLEX_EAGER",
    "GALERKIN",
    "MLP",
    "REAL",
    "SDPA",
    "Basis",
    "Capability",
    "Causal",
    "CausalSoftmax",
    "DataError",
    "DataStructure",
    "Field",
    "FlexSoftmax",
    "InputError",
    "LayerNorm",
    "Lineage",
    "Linear",
    "LinearAttention",
    "Lowering",
    "MultiHeadAttention",
    "Normalise",
    "Pairs",
    "PairsBasis",
    "Pointwise",
    "Pointwise2",
    "Ragged",
    "Real",
    "ReluAttention",
    "Ring",
    "ScaledSoftmax",
    "Sized",
    "SoftplusAttention",
    "Stacked",
    "Structure",
    "StructureError",
    "UserError",
    "Vector",
    "add",
    "attention",
    "cannot_lower",
    "cat",
    "check_compatible",
    "clear_padding",
    "counit",
    "dot",
    "expect_field",
    "flex_softmax_attention",
    "fmap",
    "galerkin_lowering",
    "generic_attention",
    "join",
    "layer_norm",
    "linear",
    "lowered",
    "mlp",
    "mul",
    "mul_mm",
    "mul_mmt",
    "mul_mv",
    "mul_vm",
    "outer",
    "per_example",
    "pointwise",
    "pointwise2",
    "position_wise",
    "pure",
    "require_finite",
    "require_order",
    "residual",
    "same_values",
    "scale",
    "scaled_softmax",
    "sdpa_lowering",
    "self_attention",
    "stack",
    "unsqueeze_batch",
    "zip_with",
]
