"""The prediction as a function: :func:`predict` evaluates a trained model's output functions anywhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from models.operator import OperatorModel
from operators.layout import Axis
from training.errors import InputError


def _check_inputs(model: OperatorModel, inputs: object) -> Tensor:
    """``inputs`` as ``(batch, *grid, C_in)``: what the model checks (:meth:`~models.OperatorModel.check`: a float
    tensor of its grid's dimensions and channels, each axis sampled often enough for its layout), finite, and
    positive where a log is taken (an :class:`InputError` naming what is wrong)."""
    x = model.check(inputs, "predict")
    if not bool(torch.isfinite(x).all()):
        raise InputError("predict: inputs hold NaN or infinite values")
    if model.log_input and bool((x <= 0).any()):
        raise InputError("predict: the model reads log inputs, and some inputs are <= 0")
    return x


@torch.no_grad()
def predict(
    model: OperatorModel,
    inputs: Tensor,
    at: Sequence[Tensor] | Tensor | None = None,
    *,
    chunk: int = 256,
) -> Tensor:
    """The predicted output functions, evaluated where asked; float64 on the CPU.

    Args:
        model: a trained :class:`OperatorModel` (``training.load(run_dir)``).
        inputs: ``(batch, *grid, C_in)`` samples in the layouts the model was trained on, at any resolution
            (``(batch, *grid)`` for one channel).
        at: ``None``: at the inputs' own samples, ``(batch, *grid, C_out)``; one 1-D tensor of coordinates (the
            data's units) per axis: on their tensor grid, ``(batch, len(x)[, len(y)], C_out)``; a tensor
            ``(M, dims)`` of points: ``(batch, M, C_out)``.
        chunk: samples per forward pass (``>= 1``).

    Raises:
        InputError: inputs of the wrong shape, dtype or values; coordinates outside the domain; ``chunk < 1``.
    """
    if type(chunk) is not int or chunk < 1:
        raise InputError(f"predict: chunk must be an int >= 1, got {chunk!r}")
    x = _check_inputs(model, inputs)
    device = next(iter(model.parameters())).device
    axes, dims = model.axes, model.dims
    where: Callable[[Tensor], Tensor]
    if at is None:
        grid = tuple(x.shape[1:-1])
        where = lambda c: model.values(c, grid)  # noqa: E731
    elif isinstance(at, Tensor):
        if at.ndim != 2 or at.shape[1] != dims:
            raise InputError(f"predict: at= points of shape {tuple(at.shape)}, expected (M, {dims})")
        pts = torch.stack([_model_t(axes[i], at[:, i], f"at[:, {i}]") for i in range(dims)], -1)
        where = lambda c: model.at_points(c, pts.to(c))  # noqa: E731
    else:
        coords = list(at)
        if len(coords) != dims or not all(isinstance(c, Tensor) and c.ndim == 1 for c in coords):
            raise InputError(f"predict: at= needs {dims} one-dimensional tensor(s) of coordinates, one per axis")
        ts = [_model_t(axes[i], coords[i], f"at[{i}]") for i in range(dims)]
        where = lambda c: model.at(c, [t.to(c) for t in ts])  # noqa: E731
    outs = [where(model(x[i : i + chunk].to(device)).double()).cpu() for i in range(0, len(x), chunk)]
    return torch.cat(outs)


def _model_t(axis: Axis, x: Tensor, name: str) -> Tensor:
    """Coordinates in the data's units -> the model's ``t``; outside a bounded axis's extent is an error."""
    if not x.dtype.is_floating_point or not bool(torch.isfinite(x).all()):
        raise InputError(f"predict: {name} must hold finite float coordinates")
    x = x.double()
    if not axis.periodic and bool(((x < axis.lo - 1e-12) | (x > axis.hi + 1e-12)).any()):
        raise InputError(
            f"predict: {name} has coordinates outside the axis's extent [{axis.lo:g}, {axis.hi:g}]; the model "
            "knows the operator there only"
        )
    return axis.to_t(x)
