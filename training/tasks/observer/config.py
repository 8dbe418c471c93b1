"""Configuration of the observer task: one frozen dataclass and its presets, the sensors and the held-out count."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from training import between
from training.config import MAX_MODES, Checked, document_bounds, optimiser_field

#: the two sensors' positions in ``[-1, 1]``
SENSORS = (-0.3, 0.55)
#: held-out trajectories the errors are measured on
HELD_OUT = 500


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines a run (and so its checkpoint); validated on construction.

    Attributes:
        modes: ``K``, the sine modes in the initial profile.
        terms: ``n``, the Chebyshev terms of the state.
        steps_in_time: ``T``, readings per trajectory.
        nu, dt: the diffusivity and the time step.
        noise: the sensor noise (standard deviation); stir: ``q``, the heat sources' strength per step.
        steps, batch, lr: Adam with a cosine decay to zero at ``steps``, ``batch`` fresh trajectories per step.
        activation: ``σ``, ``identity`` (a linear observer) or ``tanh``.
        seed: seeds the trajectories and the initialisation.
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
    """

    modes: int = between(6, 1, MAX_MODES)
    terms: int = between(24, 1, MAX_MODES)
    steps_in_time: int = between(16, 1, 10**5)
    nu: float = between(0.02, 0.0, 100.0)
    dt: float = field(default=0.1, metadata={"above": 0.0, "max": 100.0})
    noise: float = field(default=1e-2, metadata={"above": 0.0, "max": 100.0})
    stir: float = between(0.1, 0.0, 100.0)
    steps: int = optimiser_field("steps", 1500)
    batch: int = optimiser_field("batch", 64)
    lr: float = optimiser_field("lr", 1e-2)
    activation: Literal["identity", "tanh"] = "identity"
    seed: int = optimiser_field("seed", 0)
    eval_every: int = optimiser_field("eval_every", 250)
    checkpoint_every: int = optimiser_field("checkpoint_every", 500)


document_bounds(Config)


PRESETS = {"default": Config(), "tiny": Config(steps=300, batch=32, eval_every=100, checkpoint_every=100)}
