r"""The operator task's model: :class:`models.OperatorModel` built from a :class:`~.config.Config` and the data's
:class:`~.shape.Shape`, and the task as :func:`training.load` knows it (:data:`SPEC`).

A checkpoint records the run's config fields and, under ``"data"``, the shape as a record (:meth:`Shape.record`:
the axes by their layouts' and boundaries' names, the channels). Checkpoints of the earlier layout (version 1, the
shape flattened into ``data_*`` fields) are refused with the command that retrains them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import torch

from models.operator import OperatorModel, Reading, decoder_width
from training import registry
from training.budget import layer_activations
from training.config import describe

from .config import ACTIVATIONS, Config
from .shape import Shape

#: the key of a checkpoint's config that records the data's shape
DATA = "data"
#: the samples per axis assumed for an activation estimate (a checkpoint does not record the data's grid)
POINTS = 64
#: a task's config (the operator task's or one that extends it, such as Darcy's)
C = TypeVar("C", bound=Config)


def build(config: Config, shape: Shape) -> OperatorModel:
    """The (untrained) model ``config`` describes for data of ``shape``."""
    return OperatorModel(
        shape.axes,
        shape.c_in,
        shape.c_out,
        modes=config.modes,
        width=config.width,
        hidden=config.hidden,
        heads=config.heads,
        depth=config.depth,
        attend_every=config.attend_every,
        channels=channels_for(config, shape.c_out),
        activation=ACTIVATIONS[config.activation],
        window=config.window,
        convolution=config.convolution,
        axial=config.axial,
        interleaved=config.interleaved,
        plane=config.plane,
        positional=config.positional,
        norms=config.norms,
        eps=config.eps,
        reading=Reading(
            config.reader_width, config.reader_heads, config.reader_window, config.frequencies, config.reader
        ),
        log_input=config.log_input,
        homogeneous=config.homogeneous,
        grid_path=config.grid_path,
        decoder=decoder_for(config, shape),
        dtype=getattr(torch, config.dtype),
    )


def channels_for(config: Config, c_out: int) -> int:
    """The functions handed along each axis: ``config.channels``, or where it is ``0`` as many as the output channels
    and at most 64 (the head mixes them into the outputs: fewer would bound the outputs' rank), at least 4, and in the
    axial form at least ``width`` (they are all of the plane's ``width``-wide state that reaches the output)."""
    return config.channels or min(max(config.width if config.axial else 4, c_out), 64)


def channels_before(config: C, c_out: int) -> C:
    """``config`` as a checkpoint written before ``channels=0`` meant ``width`` in the axial form built it: there
    ``0`` was as many as the output channels, at least 4 (:func:`channels_for` without ``axial``). Records since
    then hold the count (:func:`as_built`), so only an axial record of ``0`` is an older one."""
    older = channels_for(config.replace(axial=False), c_out)
    return config.replace(channels=older) if config.axial and not config.channels else config


def record(config: Config, shape: Shape) -> dict[str, Any]:
    """What a checkpoint records of a run: the fields of the config as built (:func:`as_built`), and the data's
    shape under :data:`DATA`."""
    return {**describe(as_built(config, shape)), DATA: shape.record()}


def as_built(config: Config, shape: Shape) -> Config:
    """``config`` with what it leaves to the data resolved as :func:`build` resolves it: the ``decoder`` chosen
    (:func:`decoder_for`), the ``channels`` counted (:func:`channels_for`), ``convolution`` off where no axis is
    periodic and ``plane`` unless both are (they have nothing to act on), ``interleaved`` off without ``axial``. Two
    configs that build the same model for ``shape`` read the same here, so a run resumes under either."""
    periodic = [a.boundary.periodic for a in shape.axes]
    return config.replace(
        channels=channels_for(config, shape.c_out),
        decoder=decoder_for(config, shape),
        convolution=config.convolution and any(periodic),
        plane=config.plane and len(periodic) == 2 and all(periodic),
        interleaved=config.interleaved and config.axial,
    )


def recorded(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's :func:`record` as this code writes it: fields an older checkpoint lacks take the values its
    model was built with (:func:`config_of`), and what the config left to the data is resolved (:func:`as_built`).
    Raises ``ValueError`` naming what is missing or wrong."""
    return record(config_of(fields), shape_of(fields))


def decoder_for(config: Config, shape: Shape) -> int:
    """The pointwise decoder's width for ``config`` on data of ``shape``: :func:`models.operator.decoder_width`
    (``config.decoder``, or where it is ``-1`` :data:`models.operator.DECODER_WIDTH` on a grid of periodic axes and
    ``0`` where an axis is bounded or the model is homogeneous)."""
    return decoder_width(config.decoder, [a.boundary for a in shape.axes], config.homogeneous)


def config_of(fields: Mapping[str, Any]) -> Config:
    """The config a checkpoint records (its :data:`DATA` record aside), validated. A checkpoint written before the
    ``convolution``, ``decoder`` or ``plane`` field was built without one, one written before the ``norms`` field
    with them, one written before the ``interleaved`` field with the axial form composed, one written before the
    ``optimiser`` field with Adam, and an axial one that
    records ``channels=0`` with as many functions as outputs (:func:`channels_before`)."""
    earlier: dict[str, Any] = {
        "convolution": False,
        "decoder": 0,
        "norms": True,
        "plane": False,
        "interleaved": False,
        "optimiser": "adam",
    }
    config = Config(**earlier | {k: v for k, v in fields.items() if k != DATA})
    return channels_before(config, shape_of(fields).c_out) if DATA in fields else config


def shape_of(fields: Mapping[str, Any]) -> Shape:
    """The data's shape a checkpoint records (a ``ValueError`` naming what is missing or wrong)."""
    if DATA not in fields:
        raise ValueError(f"it does not record the data's shape (no {DATA!r} record)")
    try:
        return Shape.from_record(fields[DATA])
    except (TypeError, ValueError) as e:
        raise ValueError(f"the data's shape it records is not readable ({e})") from None


def activations(config: Config, shape: Shape, points: int = POINTS) -> int:
    """Values one training sample keeps for the backward pass (an estimate, on ``points`` samples per axis): the
    reader's cross-attention along each axis, each Funcformer's layers, the grid path's and the decoder's pointwise
    MLPs."""
    ns = [a.boundary.length(config.modes) for a in shape.axes]
    r, rh = config.reader_width, config.reader_heads
    count = layer_activations(points ** (shape.dims - 1), ns[0], r, 0, rh, points)
    if shape.dims == 2:
        count += layer_activations(ns[0], ns[1], r, 0, rh, points) + 4 * points * points * r
    # each Funcformer runs once along its axis, or (axial, 2D) once at every point of the other axis
    across = [ns[1], ns[0]] if config.axial and shape.dims == 2 else [1] * len(ns)
    attending = -(-config.depth // config.attend_every)  # layers 0, k, 2k, ... attend; the others hold no scores
    count += sum(
        attending * layer_activations(m, n, config.width, config.hidden, config.heads)
        + (config.depth - attending) * layer_activations(m, n, config.width, config.hidden, 0)
        for m, n in zip(across, ns, strict=True)
    )
    if config.convolution:  # each layer's convolved input, along the periodic axes
        periodic = [n for a, n in zip(shape.axes, ns, strict=True) if a.boundary.periodic]
        count += config.depth * config.width * sum(periodic)
    if as_built(config, shape).plane:  # each place's convolved functions
        count += (3 if config.axial else 2) * channels_for(config, shape.c_out) * ns[0] * ns[1]
    if config.grid_path:  # at each sample: the functions and inputs there, its features before and after σ, its output
        count += points**shape.dims * (2 * channels_for(config, shape.c_out) + shape.c_in + 2 * config.grid_path)
    decoder = decoder_for(config, shape)
    if decoder:  # at each output sample: the functions there, the MLP's features before and after σ
        count += points**shape.dims * (channels_for(config, shape.c_out) + 2 * decoder + shape.c_out)
    return count


def _build(blob: dict[str, Any]) -> OperatorModel:
    """The untrained model a checkpoint describes: its config's fields and the data's shape."""
    fields = blob["config"]
    return build(config_of(fields), shape_of(fields))


#: the operator task as :func:`training.load` knows it
SPEC = registry.TaskSpec(
    "operator",
    2,
    OperatorModel,
    _build,
    "examples.operator",
    "an operator model",
    config=config_of,
    activations=lambda fields, state: activations(config_of(fields), shape_of(fields)),
)
