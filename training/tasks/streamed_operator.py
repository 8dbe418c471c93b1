"""The operator model trained on a stream: what the operator task's route becomes for data larger than memory.

:func:`task` builds the operator model (:class:`~training.tasks.operator.OperatorModel`, from a config's public
fields) for a :class:`~operators.streams.PairStream`, sets its normalisation from one streaming pass
(:func:`fit_scales`, :func:`operators.streams.summarise`), and makes a :class:`~training.streamed.StreamTask` whose
loss is the operator task's -- the relative L² error integrated by the layouts' quadrature, plus the smoothing
penalty -- through the model's forward pass (DDP's, under ``torchrun``). :func:`errors` is the held-out relative L²
error per sample, an evaluation pass split over the ranks.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from operators.streams import Evaluation, PairStream, Summary, summarise
from training.distributed import Ranks
from training.streamed import Batches, StreamTask, gathered
from training.tasks.operator import Config, OperatorModel, Shape
from training.tasks.operator.model import roughness
from training.tasks.operator.train import relative_sq


def fit_scales(model: OperatorModel, s: Summary) -> None:
    """What :meth:`~training.tasks.operator.OperatorModel.fit_scales` sets, from a streaming pass's moments (a
    model without ``log_input`` or ``homogeneous``, on periodic axes: the outputs' mean is shifted out)."""
    with torch.no_grad():
        model.in_shift.copy_(s.inputs.mean)
        model.in_scale.copy_(s.inputs.std.clamp_min(1e-12))
        model.out_shift.copy_(s.outputs.mean)
        model.out_scale.copy_(s.outputs.rms(s.outputs.mean).reciprocal())


def task(
    stream: PairStream,
    config: Config,
    *,
    memory: int,
    device: torch.device,
    ranks: Ranks,
    workers: int,
    summary: Summary | None = None,
) -> StreamTask:
    """A seeded :class:`~training.streamed.StreamTask` of ``config``'s model on ``stream`` (Adam on a one-cycle
    schedule of ``config.steps``, the operator task's loss)."""
    torch.manual_seed(config.seed)
    model = OperatorModel(config, Shape(stream.axes, *stream.channels))
    fit_scales(model, summary if summary is not None else summarise(stream, memory=memory))
    model = model.to(device)
    grid = stream.grid

    def loss(forward: Callable[[Tensor], Tensor], x: Tensor, y: Tensor) -> Tensor:
        u = forward(x)
        weights = [a.weights(p, y.dtype, y.device) for a, p in zip(model.shape.axes, grid, strict=True)]
        per = relative_sq(model.values(u, grid), y, weights)
        smooth = config.smooth * roughness(u, model.shape.axes) / y.pow(2).flatten(1).mean(-1)
        return (per + smooth).mean()

    batches = Batches(stream, config.batch, config.seed + 1, device=device, memory=memory, ranks=ranks, workers=workers)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, config.beta2))
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, config.lr, total_steps=config.steps, pct_start=0.1)
    return StreamTask(model, loss, batches, optimiser, schedule, seed=config.seed, clip=config.clip)


def errors(run: StreamTask, held: PairStream, ranks: Ranks, memory: int) -> Tensor:
    """The trained model's relative L² error on each held-out sample: an evaluation pass split over the ranks and
    gathered (:class:`operators.streams.Evaluation`, :func:`training.streamed.gathered`)."""
    model, grid = run.model, held.grid
    assert isinstance(model, OperatorModel)

    def metric(x: Tensor, y: Tensor) -> Tensor:
        exact = y.to(run.device, run.dtype)
        weights = [a.weights(p, exact.dtype, exact.device) for a, p in zip(held.axes, grid, strict=True)]
        return relative_sq(model.values(model(x.to(run.device, run.dtype)), grid), exact, weights).sqrt()

    evaluation = Evaluation(held, 16, memory=memory, rank=ranks.rank, world=ranks.world)
    return gathered(evaluation(metric), evaluation.positions(), len(held), ranks)
