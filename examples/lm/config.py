"""Configuration of the language-model job: a frozen, validated dataclass and presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from examples.training import validate

ModelKind = Literal["gpt", "relu", "softplus", "triangular"]


def _at_least(default: Any, least: float) -> Any:
    return field(default=default, metadata={"min": least})


@dataclass(frozen=True)
class Config:
    """Everything that determines a run.

    Attributes:
        model: ``gpt`` (softmax attention), ``relu`` or ``softplus`` (Wortsman et al.: ``relu(s)/L``,
            ``softplus(s)`` normalised) -- the same causal decoder otherwise -- or ``triangular``
            (Ishuov: learned lower-triangular time mixing per head in place of attention, LeakyReLU MLP).
        context, width, hidden, heads, depth: the decoder's sizes (pre-norm, learned positions, untied head).
        steps, batch, lr, warmup: AdamW with linear warm-up then cosine decay.
        eval_every, checkpoint_every, eval_batches: evaluation cadence and size (windows of the validation text).
        limit: use only the first ``limit`` characters of the corpus (0: all of it).
    """

    model: ModelKind = "gpt"
    context: int = _at_least(64, 2)
    width: int = _at_least(64, 1)
    hidden: int = _at_least(256, 1)
    heads: int = _at_least(4, 1)
    depth: int = _at_least(2, 1)
    steps: int = _at_least(2000, 1)
    batch: int = _at_least(32, 1)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    warmup: int = _at_least(100, 0)
    clip: float = _at_least(1.0, 0.0)
    eval_every: int = _at_least(250, 1)
    checkpoint_every: int = _at_least(250, 1)
    eval_batches: int = _at_least(8, 1)
    limit: int = _at_least(0, 0)
    seed: int = _at_least(0, 0)

    def __post_init__(self) -> None:
        validate(
            self,
            lambda c: (
                None
                if c.width % c.heads == 0
                else f"config fields width={c.width}, heads={c.heads}: heads must divide width"
            ),
        )

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


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
        warmup=2,
        eval_every=10,
        checkpoint_every=10,
        eval_batches=2,
        limit=20000,
    ),
}
