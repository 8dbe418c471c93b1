"""Configuration of the uncertainty demo: a frozen, validated dataclass and presets."""

from __future__ import annotations

from dataclasses import dataclass

from training import between
from training.config import (
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_WIDTH,
    Checked,
    document_bounds,
    optimiser_field,
)


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines a run.

    Attributes:
        train, test: numbers of synthetic examples.
        components: mixture components ``K`` (the Transformer's tokens).
        width, hidden, heads, depth: the encoder's sizes (pre-norm).
        steps, batch, lr: Adam with cosine decay to 10%, mini-batches drawn by a seeded sampler.
        eval_every: evaluation cadence (test metrics, recorded in the history).
        points: Gauss–Hermite points per component for the predictive mean.
    """

    train: int = between(4000, 2, 10**7)  # more would not fit beside the models in a small machine's memory
    test: int = between(4000, 2, 10**7)
    components: int = between(6, 1, 4096)
    width: int = between(32, 1, MAX_WIDTH)
    hidden: int = between(64, 1, MAX_HIDDEN)
    heads: int = between(2, 1, MAX_HEADS)
    depth: int = between(2, 1, MAX_LAYERS)
    steps: int = optimiser_field("steps", 2500)
    batch: int = optimiser_field("batch", 128)
    lr: float = optimiser_field("lr", 3e-3)
    eval_every: int = optimiser_field("eval_every", 500)
    points: int = between(8, 1, 1024)
    seed: int = optimiser_field("seed", 0)


document_bounds(Config)


PRESETS: dict[str, Config] = {
    # under 3 minutes on one CPU core, both models
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(train=256, test=256, components=3, width=8, hidden=16, depth=1, steps=30, batch=32, eval_every=15),
}
