"""What a language model costs, from its config and vocabulary alone: parameters, a batch's activations.

The GPT-shaped kinds (``gpt``, ``relu``, ``softplus``): the embedding ``vocab -> width`` (no bias), a learned
position ``context x width``, ``depth`` pre-norm encoder layers, a final norm and the unembedding;
``triangular`` the same with learned mixing in place of attention. ``ipa`` and ``rnn`` have a width chosen so
that their count is the GPT's (:func:`training.tasks.lm.model.matched_size`): the GPT's count stands for theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.budget import Estimate, encoder_layer, layer_activations, layer_norm, linear


def gpt_parameters(c: Mapping[str, Any], vocab: int) -> int:
    """The GPT's parameter count at the config's sizes (``ipa`` and ``rnn`` are matched to it)."""
    width, heads = c["width"], c["heads"]
    layers = c["depth"] * encoder_layer(width, c["hidden"], heads, width // heads, width // heads)
    count: int = 2 * linear(vocab, width, bias=False) + c["context"] * width + layers + layer_norm(width)
    return count


def triangular_parameters(c: Mapping[str, Any], vocab: int) -> int:
    """The ``triangular`` kind's count: the GPT's with each attention replaced by ``heads`` mixing matrices
    ``context x context`` (:class:`models.TriangularMixing`)."""
    width, hidden, t = c["width"], c["hidden"], c["context"]
    layer = c["heads"] * t * t + 2 * layer_norm(width) + linear(width, hidden) + linear(hidden, width)
    count: int = 2 * linear(vocab, width, bias=False) + t * width + c["depth"] * layer + layer_norm(width)
    return count


def cost(c: Mapping[str, Any], vocab: int) -> Estimate:
    """The :class:`~training.budget.Estimate` of a language-model config's fields and a ``vocab``-symbol alphabet.

    Exact for every kind but ``ipa`` and ``rnn``, whose count is the GPT's within a few percent (their width is
    chosen to match it).
    """
    triangular = c["model"] == "triangular"
    parameters = triangular_parameters(c, vocab) if triangular else gpt_parameters(c, vocab)
    batch, t, width = c["batch"], c["context"], c["width"]
    activations = c["depth"] * layer_activations(batch, t, width, c["hidden"], c["heads"]) + 2 * batch * t * vocab
    return Estimate.of(parameters, "float32", activations)
