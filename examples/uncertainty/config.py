"""Configuration of the uncertainty demo: a frozen, validated dataclass and presets."""

from __future__ import annotations

from dataclasses import dataclass, field

from training import at_least, between
from training.config import Checked


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
    components: int = at_least(6, 1)
    width: int = at_least(32, 1)
    hidden: int = at_least(64, 1)
    heads: int = at_least(2, 1)
    depth: int = at_least(2, 1)
    steps: int = at_least(2500, 1)
    batch: int = at_least(128, 1)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    eval_every: int = at_least(500, 1)
    points: int = at_least(8, 1)
    seed: int = at_least(0, 0)


PRESETS: dict[str, Config] = {
    # under 3 minutes on one CPU core, both models
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(train=256, test=256, components=3, width=8, hidden=16, depth=1, steps=30, batch=32, eval_every=15),
}
