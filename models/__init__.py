"""Models written once over any structures: the Transformer family."""

from .transformer import DecoderLayer, EncoderDecoder, EncoderLayer, Transformer, decoder, encoder, head_structure
from .treeformer import Readout, tree_features, treeformer

__all__ = [
    "DecoderLayer",
    "EncoderDecoder",
    "EncoderLayer",
    "Readout",
    "Transformer",
    "decoder",
    "encoder",
    "head_structure",
    "tree_features",
    "treeformer",
]
