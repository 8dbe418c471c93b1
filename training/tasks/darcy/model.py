r"""The Darcy task's model: the operator model on the unit square with ``u = 0`` on its boundary.

Coordinates: the physical square :math:`[0, 1]^2` is the model's :math:`[-1, 1]^2` through :math:`t = 2x - 1`; the
data are ``points x points`` nodes ``i/(P - 1)`` on each axis (:data:`AXIS`), the boundary ``zero`` (the output
series multiplied by :math:`1 - t^2` per axis). The model reads ``log a`` where it is given, on the grid.
Checkpoints of the earlier Darcy models (version 1) are refused with the command that retrains them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from instances.axes import ZERO, Axis
from models.operator import OperatorModel
from operators.darcy.data import MODES
from training import registry
from training.tasks.operator.model import activations, build, channels_before, channels_for
from training.tasks.operator.shape import Shape

from .config import Config

#: each axis of the square: nodes with both ends on [0, 1], u = 0 there
AXIS = Axis("nodes", 0.0, 1.0, ZERO)
#: what a Darcy model reads and writes: log a in, u out, on the square
SHAPE = Shape((AXIS, AXIS), 1, 1)


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> OperatorModel:
    """The trained model of a run directory (``python -m examples.darcy --out run_dir``), in eval mode."""
    model = registry.load(run_dir, device, task=SPEC.name)
    assert isinstance(model, OperatorModel)
    return model


def config_of(fields: Mapping[str, Any]) -> Config:
    """The config a checkpoint records; one written before the ``norms`` field had them, one before the
    ``interleaved`` field an axial form composed, and an axial one recording ``channels=0`` four functions
    (:func:`~training.tasks.operator.model.channels_before`; on the square the ``convolution``, ``decoder`` and
    ``plane`` fields change nothing: no axis is periodic)."""
    return channels_before(Config(**{"norms": True, "interleaved": False} | dict(fields)), SHAPE.c_out)


def as_built(config: Config) -> Config:
    """``config`` as its checkpoints record it: in the axial form the ``channels`` counted
    (:func:`~training.tasks.operator.model.channels_for`), so that :func:`config_of` reads ``0`` there as the older
    default."""
    return config.replace(channels=channels_for(config, SHAPE.c_out)) if config.axial else config


def data_bytes(fields: Mapping[str, Any]) -> int:
    """The data a run holds: ``a``, ``u`` and the draws of every sample, and the solver's grid."""
    c = Config(**fields)
    examples = c.n_train + c.n_test
    fine = c.refine * (c.points - 1) + 1
    return 8 * examples * (3 * c.points * c.points + MODES * MODES) + 8 * 16 * fine * fine * min(examples, 64)


#: the Darcy operator as :func:`training.load` knows it
SPEC = registry.TaskSpec(
    "darcy",
    2,
    OperatorModel,
    lambda blob: build(config_of(blob["config"]), SHAPE),
    "examples.darcy",
    "a Darcy model",
    config=config_of,
    activations=lambda fields, state: activations(config_of(fields), SHAPE, fields["points"]),
    data=data_bytes,
)
