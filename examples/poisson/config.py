"""Configuration of the Poisson main job: one frozen dataclass and a few named presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

Normalisation = Literal["softmax", "coefficient", "linear"]
ModelKind = Literal["vector", "chebyshev"]


@dataclass(frozen=True)
class Config:
    """Everything that determines a training run (and so its checkpoint).

    Attributes:
        modes: Chebyshev terms per axis of the source and the predicted solution.
        model: ``"vector"`` (a Vector of ``width`` channels) or ``"chebyshev"`` (a Chebyshev series of
            ``width`` terms) as the Transformer's model structure.
        width, hidden, heads, depth: the Transformer's sizes.
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

    modes: int = 16
    model: ModelKind = "vector"
    width: int = 64
    hidden: int = 128
    heads: int = 8
    depth: int = 1
    normalise: Normalisation = "linear"
    eps: float = 100.0
    n_train: int = 2000
    n_test: int = 200
    steps: int = 8000
    batch: int = 64
    lr: float = 1e-2
    weight_decay: float = 0.0
    warmup: float = 0.1
    clip: float = 1.0
    eval_every: int = 250
    checkpoint_every: int = 250
    seed: int = 0
    dtype: str = "float32"

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (values coerced to the fields' types, for the command line)."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        coerced: dict[str, Any] = {}
        for k, v in changes.items():
            if k not in fields:
                raise KeyError(f"unknown config field {k!r}; fields: {sorted(fields)}")
            old = getattr(self, k)
            coerced[k] = type(old)(v) if isinstance(v, str) and not isinstance(old, str) else v
        return dataclasses.replace(self, **coerced)


PRESETS: dict[str, Config] = {
    # ~4 minutes on 2 free CPU cores (one thread); held-out relative L2 ~6e-3
    "default": Config(),
    # a larger model for a GPU: more data, steps and width; ~4 minutes on one H100, held-out relative L2 ~1.5e-3
    "gpu": Config(width=128, hidden=256, heads=8, depth=2, n_train=8000, n_test=500, steps=20000, batch=128, lr=3e-3),
    # seconds: for tests and smoke runs
    "tiny": Config(width=16, hidden=16, heads=2, n_train=64, n_test=16, steps=20, batch=8, eval_every=10),
}
