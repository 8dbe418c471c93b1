"""The prediction as a function: :func:`predict` evaluates a trained model's output functions anywhere."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from models.operator import OperatorModel
from operators.layout import Axis
from training.budget import Budget, size
from training.errors import InputError

#: output cells (points, or points of a tensor grid) evaluated at a time: what one evaluation holds is bounded
CELLS = 1 << 18


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
    budget: Budget | None = None,
) -> Tensor:
    """The predicted output functions, evaluated where asked; float64 on the CPU.

    Args:
        model: a trained :class:`OperatorModel` (``training.load(run_dir)``).
        inputs: ``(batch, *grid, C_in)`` samples in the layouts the model was trained on, at any resolution
            (``(batch, *grid)`` for one channel).
        at: ``None``: at the inputs' own samples, ``(batch, *grid, C_out)``; one 1-D tensor of coordinates (the
            data's units) per axis: on their tensor grid, ``(batch, len(x)[, len(y)], C_out)``; a tensor
            ``(M, dims)`` of points: ``(batch, M, C_out)``.
        chunk: samples per forward pass (``>= 1``); the points are evaluated in pieces too.
        budget: the memory the prediction may take (default :class:`~training.Budget`: 8 GiB), checked from the sizes
            asked before anything is computed.

    Raises:
        InputError: not a model of this task; inputs of the wrong shape, dtype or values; coordinates outside the
            domain; ``chunk < 1``; a prediction larger than ``budget``.
    """
    if not isinstance(model, OperatorModel):
        got = f"the class {model.__name__}" if isinstance(model, type) else f"a {type(model).__name__}"
        raise InputError(
            f"predict: model must be a trained OperatorModel (training.load(run_dir) of an operator run), got {got}"
        )
    if type(chunk) is not int or chunk < 1:
        raise InputError(f"predict: chunk must be an int >= 1, got {chunk!r}")
    if budget is not None and not isinstance(budget, Budget):
        raise InputError(f"predict: budget must be a training.Budget (e.g. Budget.memory(16)), got {budget!r:.60}")
    x = _check_inputs(model, inputs)
    device = next(iter(model.parameters())).device
    axes, dims = model.axes, model.dims
    where: Callable[[Tensor], Tensor]
    if at is None:
        grid = tuple(x.shape[1:-1])
        _check_size(len(x), math.prod(grid), model.out_channels, budget)
        where = lambda c: model.values(c, grid)  # noqa: E731
    elif isinstance(at, Tensor):
        if at.ndim != 2 or at.shape[1] != dims:
            raise InputError(f"predict: at= points of shape {tuple(at.shape)}, expected (M, {dims})")
        _check_size(len(x), at.shape[0], model.out_channels, budget)
        pts = torch.stack([_model_t(axes[i], at[:, i], f"at[:, {i}]") for i in range(dims)], -1)
        where = lambda c: _pieces(lambda p: model.at_points(c, p.to(c)), pts, CELLS)  # noqa: E731
    else:
        coords = list(at)
        if len(coords) != dims or not all(isinstance(c, Tensor) and c.ndim == 1 for c in coords):
            raise InputError(f"predict: at= needs {dims} one-dimensional tensor(s) of coordinates, one per axis")
        _check_size(len(x), math.prod(len(c) for c in coords), model.out_channels, budget)
        ts = [_model_t(axes[i], coords[i], f"at[{i}]") for i in range(dims)]
        rows = max(1, CELLS // math.prod(len(t) for t in ts[1:]))  # the first axis in pieces: each a slab of cells
        where = lambda c: _pieces(lambda t0: model.at(c, [t.to(c) for t in (t0, *ts[1:])]), ts[0], rows)  # noqa: E731
    outs = [where(model(x[i : i + chunk].to(device)).double()).cpu() for i in range(0, len(x), chunk)]
    return torch.cat(outs)


def _pieces(evaluate: Callable[[Tensor], Tensor], where: Tensor, count: int) -> Tensor:
    """``evaluate`` at ``where`` (points or one axis's coordinates) ``count`` at a time, joined along the points."""
    return torch.cat([evaluate(where[j : j + count]).cpu() for j in range(0, len(where), count)], 1)


def _check_size(batch: int, cells: int, channels: int, budget: Budget | None) -> None:
    """The prediction (``batch x cells x channels`` float64, and as much again while it is joined) within budget."""
    need = 2 * 8 * batch * cells * channels
    limit = (budget or Budget()).max_bytes
    if need > limit:
        raise InputError(
            f"predict: {batch} sample(s) at {cells:,} points x {channels} channel(s) take {size(need)}, past the "
            f"memory budget of {size(limit)}; ask for fewer points or samples at a time, or pass "
            "budget=Budget.memory(GIB)"
        )


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
