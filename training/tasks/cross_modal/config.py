"""Configuration of the cross-modal job: one frozen dataclass and its presets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from training import between
from training.config import (
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MODES,
    MAX_WIDTH,
    Checked,
    document_bounds,
    optimiser_field,
)

#: the two tasks: scattered samples -> a function, a low-resolution image -> a function of two variables
TaskKind = Literal["points", "grid"]
TASKS: tuple[TaskKind, ...] = get_args(TaskKind)


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one training run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: AdamW with a linear warm-up over ``steps // 20`` steps, then a cosine to zero.
        width, hidden, heads, memory_depth, query_depth: the model's sizes (``heads`` divides ``width``).
        modes: the output's Chebyshev terms per axis (at least ``degree``, so targets are representable).
        degree, decay: the data -- random Chebyshev series of ``degree`` terms per axis with coefficients
            ``N(0, decay^(2k))`` (``decay^(k+l)`` in 2-D).
        min_points, max_points: scattered samples per function (points task), drawn uniformly.
        resolution: the low-resolution image's side (grid task), a uniform grid including the corners.
        position: Chebyshev features ``T_k`` of a token's coordinate given to the embedding.
        test: held-out functions; seed: seeds data, initialisation and batches.
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
    """

    steps: int = optimiser_field("steps", 3000)
    batch: int = optimiser_field("batch", 32)
    lr: float = optimiser_field("lr", 2e-3)
    width: int = between(32, 1, MAX_WIDTH)
    hidden: int = between(64, 1, MAX_HIDDEN)
    heads: int = between(4, 1, MAX_HEADS)
    memory_depth: int = between(1, 0, MAX_LAYERS)
    query_depth: int = between(2, 1, MAX_LAYERS)
    modes: int = between(16, 1, MAX_MODES)
    degree: int = between(12, 1, MAX_MODES)
    decay: float = field(default=0.7, metadata={"above": 0.0, "max": 10.0})
    min_points: int = between(6, 2, 10**5)
    max_points: int = between(24, 2, 10**5)
    resolution: int = between(16, 4, 1024)
    position: int = between(16, 1, MAX_WIDTH)
    test: int = between(500, 1, 10**6)
    seed: int = optimiser_field("seed", 0)
    eval_every: int = optimiser_field("eval_every", 250)
    checkpoint_every: int = optimiser_field("checkpoint_every", 500)

    def consistent(self) -> str | None:
        return _consistent(self)


document_bounds(Config)


def _consistent(c: Config) -> str | None:
    if c.modes < c.degree:
        return f"config fields modes={c.modes}, degree={c.degree}: modes must be >= degree to represent the targets"
    if c.min_points > c.max_points:
        return f"config fields min_points={c.min_points} > max_points={c.max_points}"
    return None


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: for tests and smoke runs
    "tiny": Config(
        steps=30,
        batch=8,
        width=16,
        hidden=16,
        heads=2,
        query_depth=1,
        modes=8,
        degree=6,
        max_points=12,
        resolution=8,
        position=6,
        test=16,
        eval_every=15,
        checkpoint_every=15,
    ),
}
