"""Configuration of the ListOps job: one frozen dataclass, the models it compares, and a few presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from training.config import (
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_WIDTH,
    Checked,
    between,
    document_bounds,
    optimiser_field,
)

from .data import DEPTH

#: the models the job compares: the Treeformer with either tree measure, a Vector Transformer, and a
#: learned fold over expression trees (operators at the nodes)
ModelKind = Literal["tree-mean", "tree-sum", "vector", "fold"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)
#: the fold model's node cell (:class:`models.NodeCell`)
CellKind = Literal["mlp", "gated"]


#: the most expressions one split may hold
MAX_EXPRESSIONS = 2_000_000
#: the deepest nesting of the deeper test split: each level adds up to three levels to the binary tree of an
#: expression, whose leaves a Tree places on dyadic intervals of depth at most 62
MAX_NESTING = 16


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one model's training run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: AdamW (weight decay 0.01, gradient norm clipped to 1) with a linear warm-up
            over ``steps // 20`` steps and a cosine decay to zero at ``steps``.
        width, hidden, heads, depth: the encoder's sizes (``heads`` must divide ``width``); the fold model
            has state ``width`` and cell hidden size ``hidden``.
        cell: the fold model's node cell, ``mlp`` or ``gated``.
        levels: position features per token: root-to-leaf path levels (trees) or sinusoid dimensions (vector).
        train, test: data set sizes (seeded expressions nesting at most 3 levels, generated, no download).
        deep, deepest: size of a second test split nesting 4 .. ``deepest`` levels, deeper than any training
            expression (``deep=0``: none).
        seed: seeds the data, the initialisation and the batch order.
        eval_every: steps between held-out evaluations; checkpoint_every likewise for checkpoints.
    """

    steps: int = optimiser_field("steps", 600)
    batch: int = optimiser_field("batch", 64)
    lr: float = optimiser_field("lr", 1e-3)
    width: int = between(64, 1, MAX_WIDTH)
    hidden: int = between(128, 1, MAX_HIDDEN)
    heads: int = between(4, 1, MAX_HEADS)
    depth: int = between(3, 0, MAX_LAYERS)
    levels: int = between(16, 1, MAX_WIDTH)
    cell: CellKind = "mlp"
    # expressions are generated one by one in Python (~10 µs each) and held as lists: a few million at most
    train: int = between(20000, 1, MAX_EXPRESSIONS)
    test: int = between(2000, 1, MAX_EXPRESSIONS)
    deep: int = between(1000, 0, MAX_EXPRESSIONS)
    deepest: int = between(6, DEPTH + 1, MAX_NESTING)
    seed: int = optimiser_field("seed", 0)
    eval_every: int = optimiser_field("eval_every", 200)
    checkpoint_every: int = optimiser_field("checkpoint_every", 100)


document_bounds(Config)


PRESETS: dict[str, Config] = {
    # under a minute to ~4 minutes per model on one CPU thread, by machine; test accuracy with torch 2.13 on a CPU:
    # tree-mean 57.35%, tree-sum 58.3%, vector 49.15%
    "default": Config(),
    # the learned fold (--models fold): 4-7 minutes on one shared CPU thread; accuracy with torch 2.13 on a CPU:
    # test 98.85% (nesting 1/2/3: 100/99.7/98.0%), deeper split (nesting 4-6) 94.7%; --cell gated: 97.95%, 93.3%
    "fold": Config(steps=6000, lr=2e-3, eval_every=500, checkpoint_every=500),
    # seconds: for tests and smoke runs
    "tiny": Config(steps=20, batch=8, width=16, hidden=16, heads=2, depth=1, train=64, test=32, deep=16, eval_every=10),
}
