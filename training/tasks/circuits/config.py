"""Configuration of the circuits task: one frozen dataclass, its presets, the models compared and the depths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from training import between
from training.config import Checked, batch_within, document_bounds, optimiser_field

#: the circuit depths trained on; the deeper ones only tested
TRAIN_DEPTHS = (1, 2, 3, 4)
TEST_DEPTHS = (5, 6)
#: the models compared: the DAG fold, the tree fold on the unrolled circuit, the message-passing peer
ModelKind = Literal["dag", "tree", "gnn"]
MODELS: tuple[ModelKind, ...] = get_args(ModelKind)


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines one model's run (and so its checkpoint); validated on construction.

    Attributes:
        steps, batch, lr: Adam with a cosine decay to zero at ``steps``, gradient norm clipped to 1; ``batch``
            training circuits drawn per step (without replacement).
        width, hidden: the state size and the node cell's hidden size.
        train, test: seeded circuits to train on (depths 1-4) / per test split (depths 1-4, 5 and 6).
        seed: seeds the circuits, the initialisation and the batches.
        eval_every, checkpoint_every: steps between held-out evaluations (depths 1-4) / checkpoints.
    """

    steps: int = optimiser_field("steps", 3000)
    batch: int = optimiser_field("batch", 128)
    lr: float = optimiser_field("lr", 3e-3)
    width: int = between(64, 1, 4096)
    hidden: int = between(128, 1, 16384)
    train: int = between(20000, 1, 10**6)
    test: int = between(2000, 1, 10**6)
    seed: int = optimiser_field("seed", 0)
    eval_every: int = optimiser_field("eval_every", 1000)
    checkpoint_every: int = optimiser_field("checkpoint_every", 500)

    def consistent(self) -> str | None:
        return batch_within(self, "training circuits")


document_bounds(Config)


PRESETS: dict[str, Config] = {
    "default": Config(),
    # seconds: tests and smoke runs
    "tiny": Config(steps=20, batch=16, width=8, hidden=8, train=200, test=40, eval_every=10, checkpoint_every=10),
}
