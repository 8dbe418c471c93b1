"""Configuration of the two-hop graph task: one frozen dataclass, its presets and the models compared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from training import between
from training.config import Checked, batch_within, document_bounds, optimiser_field

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

    steps: int = optimiser_field("steps", 1500)
    batch: int = optimiser_field("batch", 32)
    lr: float = optimiser_field("lr", 3e-3)
    train: int = between(4000, 1, 10**6)
    test: int = between(500, 1, 10**6)
    seed: int = optimiser_field("seed", 0)
    eval_every: int = optimiser_field("eval_every", 500)
    checkpoint_every: int = optimiser_field("checkpoint_every", 500)

    def consistent(self) -> str | None:
        return batch_within(self, "training graphs")


document_bounds(Config)


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(steps=20, batch=8, train=64, test=16, eval_every=10, checkpoint_every=10),
}
