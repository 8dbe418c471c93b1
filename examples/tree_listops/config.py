"""Configuration of the ListOps job: one frozen dataclass, the models it compares, and a few presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from examples.training import validate

#: the models the job compares: the Treeformer with either tree measure, and a Vector Transformer
ModelKind = Literal["tree-mean", "tree-sum", "vector"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)


def _at_least(default: Any, least: float) -> Any:
    return field(default=default, metadata={"min": least})


@dataclass(frozen=True)
class Config:
    """Everything that determines one model's training run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: AdamW (weight decay 0.01, gradient norm clipped to 1) with a linear warm-up
            over ``steps // 20`` steps and a cosine decay to zero at ``steps``.
        width, hidden, heads, depth: the encoder's sizes (``heads`` must divide ``width``).
        levels: position features per token: root-to-leaf path levels (trees) or sinusoid dimensions (vector).
        train, test: data set sizes (seeded expressions, generated, no download).
        seed: seeds the data, the initialisation and the batch order.
        eval_every: steps between held-out evaluations; checkpoint_every likewise for checkpoints.
    """

    steps: int = _at_least(600, 1)
    batch: int = _at_least(64, 1)
    lr: float = field(default=1e-3, metadata={"above": 0.0})
    width: int = _at_least(64, 1)
    hidden: int = _at_least(128, 1)
    heads: int = _at_least(4, 1)
    depth: int = _at_least(3, 0)
    levels: int = _at_least(16, 1)
    train: int = _at_least(20000, 1)
    test: int = _at_least(2000, 1)
    seed: int = _at_least(0, 0)
    eval_every: int = _at_least(200, 1)
    checkpoint_every: int = _at_least(100, 1)

    def __post_init__(self) -> None:
        validate(self, _consistent)

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)


def _consistent(c: Config) -> str | None:
    if c.width % c.heads:
        return f"config fields width={c.width}, heads={c.heads}: heads must divide width (the model splits into heads)"
    return None


PRESETS: dict[str, Config] = {
    # under a minute to ~4 minutes per model on one CPU thread, by machine; test accuracy with torch 2.13 on a CPU:
    # tree-mean 57.35%, tree-sum 58.3%, vector 49.15%
    "default": Config(),
    # seconds: for tests and smoke runs
    "tiny": Config(steps=20, batch=8, width=16, hidden=16, heads=2, depth=1, train=64, test=32, eval_every=10),
}
