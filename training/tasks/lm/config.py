"""Configuration of the language-model job: a frozen, validated dataclass and presets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from training.config import (
    INT_LIMIT,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_STEPS,
    MAX_WIDTH,
    Checked,
    between,
    document_bounds,
    optimiser_field,
)

ModelKind = Literal["gpt", "ipa", "relu", "softplus", "triangular", "rnn"]


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines a run.

    Attributes:
        model: ``gpt`` (softmax attention), ``relu`` or ``softplus`` (Wortsman et al.: ``relu(s)/L``,
            ``softplus(s)`` normalised) -- the same causal decoder otherwise -- or ``triangular``
            (Ishuov: learned lower-triangular time mixing per head in place of attention, LeakyReLU MLP),
            ``ipa`` (Shamsi et al.: iterated piecewise-affine column and row operations; ``heads`` centres
            of rank ``width // heads`` per column operation, ``hidden // width`` radial centres per row
            operation, its own width chosen to match the GPT's parameter count) or ``rnn`` (a tanh
            recurrence whose state size is chosen to match the GPT's parameter count).
        context, width, hidden, heads, depth: the decoder's sizes (pre-norm, learned positions, untied head).
        steps, batch, lr, warmup_steps: AdamW with a linear warm-up over ``warmup_steps`` steps then cosine decay
            (``warmup`` elsewhere is a fraction of the steps: another word).
        eval_every, checkpoint_every, eval_batches: evaluation cadence and size (windows of the validation text).
        limit: use only the first ``limit`` characters of the corpus (0: all of it).
    """

    model: ModelKind = "gpt"
    context: int = between(64, 2, 65536)
    width: int = between(64, 1, MAX_WIDTH)
    hidden: int = between(256, 1, MAX_HIDDEN)
    heads: int = between(4, 1, MAX_HEADS)
    depth: int = between(2, 1, MAX_LAYERS)
    steps: int = optimiser_field("steps", 2000)
    batch: int = optimiser_field("batch", 32)
    lr: float = optimiser_field("lr", 3e-3)
    warmup_steps: int = between(100, 0, MAX_STEPS)
    clip: float = optimiser_field("clip", 1.0)
    eval_every: int = optimiser_field("eval_every", 250)
    checkpoint_every: int = optimiser_field("checkpoint_every", 250)
    eval_batches: int = between(8, 1, 10**5)
    limit: int = between(0, 0, INT_LIMIT)
    seed: int = optimiser_field("seed", 0)

    def consistent(self) -> str | None:
        return _consistent(self)


document_bounds(Config)


def _consistent(c: Config) -> str | None:
    # the last 10% of the characters validate: they must hold one window of context + 1 characters
    least = 10 * (c.context + 2)
    if 0 < c.limit and c.limit - math.floor(0.9 * c.limit) < c.context + 2:
        return (
            f"config fields limit={c.limit}, context={c.context}: the validation split (the last 10% of the "
            f"limit) must hold a window of context + 1 characters; use limit >= {least} or limit=0 (all)"
        )
    return None


PRESETS: dict[str, Config] = {
    # a few minutes on 2 CPU cores
    "default": Config(),
    "gpu": Config(context=256, width=256, hidden=1024, heads=8, depth=6, steps=5000, batch=64, lr=1e-3),
    # seconds: tests and smoke runs
    "tiny": Config(
        context=16,
        width=16,
        hidden=32,
        heads=2,
        depth=1,
        steps=20,
        batch=8,
        warmup_steps=2,
        eval_every=10,
        checkpoint_every=10,
        eval_batches=2,
        limit=20000,
    ),
}
