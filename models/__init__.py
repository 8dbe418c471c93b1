"""Models written once over any structures: the Transformer family, and the operator model built from it
(:mod:`models.operator`)."""

from .crossmodal import CrossModal, CrossModalConfig
from .dagfold import DAGFold
from .diagram import Diagram, diagram, render
from .funcformer import (
    Funcformer,
    FuncformerConfig,
    SeparableLinear,
    funcformer,
    gaussian_window,
    odd_part,
    unit_scaled,
    window_keys,
    window_queries,
    window_slopes,
)
from .ipa import IPAColumn, IPALayer, IPARow
from .operator import AlongAxes, GridReader, OperatorModel, Reading
from .rnn import RNNCell, scan
from .transformer import (
    DecoderLayer,
    EncoderDecoder,
    EncoderLayer,
    EncoderStack,
    Transformer,
    decoder,
    encoder,
    head_structure,
)
from .treefold import NodeCell, TreeFold
from .treeformer import Readout, tree_features, treeformer
from .triangular import TriangularLayer, TriangularMixing
from .zoo import (
    LinearRegression,
    LogisticRegression,
    MLPClassifier,
    MLPRegressor,
    design_matrix,
    fit_lbfgs,
    fit_least_squares,
    log_loss,
    probabilities,
    squared_error,
    weight_norm2,
)

__all__ = [
    "AlongAxes",
    "CrossModal",
    "CrossModalConfig",
    "DAGFold",
    "DecoderLayer",
    "Diagram",
    "EncoderDecoder",
    "EncoderLayer",
    "EncoderStack",
    "Funcformer",
    "FuncformerConfig",
    "GridReader",
    "IPAColumn",
    "IPALayer",
    "IPARow",
    "LinearRegression",
    "LogisticRegression",
    "MLPClassifier",
    "MLPRegressor",
    "NodeCell",
    "OperatorModel",
    "RNNCell",
    "Reading",
    "Readout",
    "SeparableLinear",
    "Transformer",
    "TreeFold",
    "TriangularLayer",
    "TriangularMixing",
    "decoder",
    "design_matrix",
    "diagram",
    "encoder",
    "fit_lbfgs",
    "fit_least_squares",
    "funcformer",
    "gaussian_window",
    "head_structure",
    "log_loss",
    "odd_part",
    "probabilities",
    "render",
    "scan",
    "squared_error",
    "tree_features",
    "treeformer",
    "unit_scaled",
    "weight_norm2",
    "window_keys",
    "window_queries",
    "window_slopes",
]
