"""Models written once over any structures: the Transformer family."""

from .transformer import DecoderLayer, EncoderDecoder, EncoderLayer, Transformer, decoder, encoder, head_structure

__all__ = ["DecoderLayer", "EncoderDecoder", "EncoderLayer", "Transformer", "decoder", "encoder", "head_structure"]
