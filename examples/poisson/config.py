"""Configuration of the Poisson main job: one frozen dataclass and a few named presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from examples.training import validate

Normalisation = Literal["softmax", "coefficient", "linear"]
ModelKind = Literal["vector", "chebyshev"]
DType = Literal["float32", "float64"]


def _at_least(default: Any, least: float) -> Any:
    return field(default=default, metadata={"min": least})


@dataclass(frozen=True)
class Config:
    """Everything that determines a training run (and so its checkpoint); validated on construction.

    Attributes:
        modes: Chebyshev terms per axis of the source and the predicted solution.
        model: ``"vector"`` (a Vector of ``width`` channels) or ``"chebyshev"`` (a Chebyshev series of
            ``width`` terms) as the Transformer's model structure.
        width, hidden, heads, depth: the Transformer's sizes (``heads`` must divide ``width``).
        normalise: attention normalisation: the faithful continuous ``"softmax"``, the design
            source's ``"coefficient"`` softmax, or ``"linear"`` (scaled scores, no normalisation).
        eps: layer-norm epsilon; a large value makes the norm nearly linear (the operator is linear).
        n_train, n_test: data set sizes (the OOD set has ``n_test`` samples).
        steps, batch, lr, weight_decay, warmup: Adam with a one-cycle (warm-up + cosine) schedule.
        clip: the largest gradient norm a step may take (``0`` turns clipping off).
        eval_every: steps between held-out evaluations; checkpoint_every likewise for checkpoints.
        seed: seeds the data, the initialisation and the batch order.
        dtype: ``"float32"`` or ``"float64"`` for the model.
    """

    modes: int = _at_least(16, 2)
    model: ModelKind = "vector"
    width: int = _at_least(64, 1)
    hidden: int = _at_least(128, 1)
    heads: int = _at_least(8, 1)
    depth: int = _at_least(1, 1)
    normalise: Normalisation = "linear"
    eps: float = field(default=100.0, metadata={"above": 0.0})
    n_train: int = _at_least(2000, 1)
    n_test: int = _at_least(200, 1)
    steps: int = _at_least(8000, 1)
    batch: int = _at_least(64, 1)
    lr: float = field(default=1e-2, metadata={"above": 0.0})
    weight_decay: float = _at_least(0.0, 0.0)
    warmup: float = field(default=0.1, metadata={"min": 0.0, "max": 1.0})
    clip: float = _at_least(1.0, 0.0)
    eval_every: int = _at_least(250, 1)
    checkpoint_every: int = _at_least(250, 1)
    seed: int = _at_least(0, 0)
    dtype: DType = "float32"

    def __post_init__(self) -> None:
        validate(self, _consistent)

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)


def _consistent(c: Config) -> str | None:
    if c.model == "vector" and c.width % c.heads:
        return f"config fields width={c.width}, heads={c.heads}: heads must divide width (the model splits into heads)"
    if c.model == "chebyshev" and c.width % c.heads:
        return f"config fields width={c.width}, heads={c.heads}: heads must divide width (Chebyshev(width) splits)"
    return None


PRESETS: dict[str, Config] = {
    # ~4 minutes on 2 free CPU cores (one thread); held-out relative L2 ~6e-3
    "default": Config(),
    # a larger model for a GPU: more data, steps and width; ~4 minutes on one H100, held-out relative L2 ~1.5e-3
    "gpu": Config(width=128, hidden=256, heads=8, depth=2, n_train=8000, n_test=500, steps=20000, batch=128, lr=3e-3),
    # seconds: for tests and smoke runs
    "tiny": Config(width=16, hidden=16, heads=2, n_train=64, n_test=16, steps=20, batch=8, eval_every=10),
}
