"""What a ListOps model costs, from its config alone: parameters and a training batch's activations.

The encoders (``tree-mean``, ``tree-sum``, ``vector``): :func:`models.treeformer` over ``len(VOCAB) + levels``
features (the embedding, ``depth`` encoder layers, a final norm; no unembedding) and a readout ``width -> 10``.
The fold: a :class:`models.TreeFold` (leaf embedding ``10 -> width``, a norm, a :class:`models.NodeCell` of
state ``width`` and hidden size ``hidden`` over the node operations) and its classifier ``width -> 10``. The
activations are estimated on :data:`TOKENS` tokens per expression, about the training splits' longest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.budget import Estimate, encoder_layer, layer_activations, layer_norm, linear

from .data import VOCAB
from .nodes import DIGITS, NODE_OPS

#: tokens in about the longest training expression (three nesting levels, brackets included)
TOKENS = 160
CLASSES = 10


def node_cell(width: int, hidden: int, operations: int, cell: str) -> int:
    """Parameters of a :class:`models.NodeCell`: four maps of the children into ``hidden`` (one with a bias), the
    output map and norm, an embedding and a scale per operation; a gated cell adds a gate ``2 width -> width``."""
    count = linear(width, hidden) + 3 * linear(width, hidden, bias=False) + linear(hidden, width) + layer_norm(width)
    count += 2 * operations * hidden
    if cell == "gated":
        count += linear(width, width) + linear(width, width, bias=False) + operations * width
    return count


def cost(c: Mapping[str, Any]) -> Estimate:
    """The :class:`~training.budget.Estimate` of a ListOps config's fields; ``model`` (a checkpoint's) names the
    kind, and without it the larger of the encoders and the fold is counted."""
    width, hidden, heads, depth = c["width"], c["hidden"], c["heads"], c["depth"]
    key = width // heads
    encoder = linear(len(VOCAB) + c["levels"], width, bias=False) + layer_norm(width) + linear(width, CLASSES)
    encoder += depth * encoder_layer(width, hidden, heads, key, key)
    fold = linear(DIGITS.size, width) + layer_norm(width) + node_cell(width, hidden, len(NODE_OPS), c["cell"])
    fold += linear(width, CLASSES)
    kind = c.get("model")
    parameters = fold if kind == "fold" else encoder if kind is not None else max(encoder, fold)
    layers = depth if kind != "fold" else 1
    activations = layers * layer_activations(c["batch"], TOKENS, width, hidden, heads)
    return Estimate.of(parameters, "float32", activations)
