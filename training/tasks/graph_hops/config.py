"""Configuration of the two-hop graph task: one frozen dataclass, its presets and the models compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from training import at_least, between
from training.config import MAX_STEPS, Checked, batch_within, document_bounds

#: the models compared: the generic encoder (two layers, one), PyG's TransformerConv and GATConv
ModelKind = Literal["ours", "transformerconv", "gatconv", "ours-1"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)
#: the models that need PyTorch Geometric (the ``bench`` extra)
PYG = ("transformerconv", "gatconv")


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one model's run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: Adam at a constant rate, ``batch`` training graphs drawn per step (without replacement).
        train, test: seeded random graphs to train on / to measure node accuracy on.
        seed: seeds the graphs, the initialisation and the batches.
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
    """

    steps: int = between(1500, 1, MAX_STEPS)
    batch: int = between(32, 1, 2**16)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    train: int = between(4000, 1, 10**6)
    test: int = between(500, 1, 10**6)
    seed: int = at_least(0, 0)
    eval_every: int = between(500, 1, MAX_STEPS)
    checkpoint_every: int = between(500, 1, MAX_STEPS)

    def consistent(self) -> str | None:
        return batch_within(self, "training graphs")


document_bounds(Config)


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(steps=20, batch=8, train=64, test=16, eval_every=10, checkpoint_every=10),
}
