"""Models written once over any structures: the Transformer family."""

from .funcformer import Funcformer, FuncformerConfig, funcformer
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

__all__ = [
    "DecoderLayer",
    "EncoderDecoder",
    "EncoderLayer",
    "EncoderStack",
    "Funcformer",
    "FuncformerConfig",
    "Readout",
    "Transformer",
    "decoder",
    "encoder",
    "funcformer",
    "head_structure",
    "tree_features",
    "treeformer",
]
