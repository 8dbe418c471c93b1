"""Models written once over any structures: the Transformer family."""

from .funcformer import Funcformer, FuncformerConfig, funcformer
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
    "DecoderLayer",
    "EncoderDecoder",
    "EncoderLayer",
    "EncoderStack",
    "Funcformer",
    "FuncformerConfig",
    "LinearRegression",
    "LogisticRegression",
    "MLPClassifier",
    "MLPRegressor",
    "RNNCell",
    "Readout",
    "Transformer",
    "TriangularLayer",
    "TriangularMixing",
    "decoder",
    "design_matrix",
    "encoder",
    "fit_lbfgs",
    "fit_least_squares",
    "funcformer",
    "head_structure",
    "log_loss",
    "probabilities",
    "scan",
    "squared_error",
    "tree_features",
    "treeformer",
    "weight_norm2",
]
