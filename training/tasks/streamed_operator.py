"""The operator model trained on a stream: what the operator task's route becomes for data larger than memory.

:func:`task` builds the operator model (:class:`models.operator.OperatorModel`, from a config's public fields,
:func:`training.tasks.operator.model.build`) for a :class:`~operators.streams.PairStream`, sets its normalisation
from one streaming pass (:func:`fit_scales`, :func:`operators.streams.summarise`), and makes a
:class:`~training.streamed.StreamTask` whose loss is the operator task's (:func:`training.tasks.operator.task.scored`:
the relative L² error integrated by the layouts' quadrature, plus the smoothing penalty) through the model's forward
pass (DDP's, under ``torchrun``), watched for a collapse as the in-memory task is (the stream's first ``PROBE``
pairs, :func:`training.tasks.operator.task.collapse`). :func:`errors` is the held-out relative L² error per
sample, an evaluation pass split over the ranks.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from models.operator import OperatorModel
from operators.streams import Evaluation, PairStream, Summary, summarise
from training.distributed import Ranks
from training.streamed import Batches, StreamTask, gathered
from training.tasks.operator.config import Config
from training.tasks.operator.model import build
from training.tasks.operator.shape import Shape
from training.tasks.operator.task import PROBE, collapse, optimiser, relative_sq, scored


def fit_scales(model: OperatorModel, s: Summary) -> None:
    """What :meth:`models.operator.OperatorModel.fit_scales` sets, from a streaming pass's moments (a model without
    ``log_input`` or ``homogeneous``): inputs to mean 0 and standard deviation 1 per channel, outputs by their
    root-mean-square about their mean -- about zero where a boundary vanishes, as a shift would break it."""
    if model.log_input or model.homogeneous != 0:
        raise ValueError("fit_scales from a stream's moments needs a model without log_input or homogeneous")
    mean = s.outputs.mean if model.shifts_outputs else torch.zeros_like(s.outputs.mean)
    with torch.no_grad():
        model.in_shift.copy_(s.inputs.mean)
        model.in_scale.copy_(s.inputs.std.clamp_min(1e-12))
        model.head.out_shift.copy_(mean)
        model.head.out_scale.copy_(s.outputs.rms(mean).reciprocal())


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
    schedule of ``config.steps``, :meth:`~training.config.Optimiser.adam`, which follows a deadline given to
    :func:`training.fit`; the operator task's loss)."""
    torch.manual_seed(config.seed)
    model = build(config, Shape(stream.axes, *stream.channels))
    fit_scales(model, summary if summary is not None else summarise(stream, memory=memory))
    model = model.to(device)
    relative = config.loss == "relative"

    def loss(forward: Callable[[Tensor], Tensor], x: Tensor, y: Tensor) -> Tensor:
        return scored(model, forward(x), y, config.smooth, relative=relative)[0].mean()

    probe = [t.to(device, model.dtype) for t in stream.read(range(min(PROBE, len(stream))))]

    @torch.no_grad()
    def watch() -> str | None:  # the same pairs on every rank: every rank says the same
        return collapse(model.values(model(probe[0]), stream.grid), probe[1])

    batches = Batches(stream, config.batch, config.seed + 1, device=device, memory=memory, ranks=ranks, workers=workers)
    step, schedule = optimiser(config, model)
    return StreamTask(model, loss, batches, step, schedule, seed=config.seed, clip=config.clip, watch=watch)


def errors(run: StreamTask, held: PairStream, ranks: Ranks, memory: int) -> Tensor:
    """The trained model's relative L² error on each held-out sample: an evaluation pass split over the ranks and
    gathered (:class:`operators.streams.Evaluation`, :func:`training.streamed.gathered`)."""
    model, grid = run.model, held.grid
    assert isinstance(model, OperatorModel)

    def metric(x: Tensor, y: Tensor) -> Tensor:
        exact = y.to(run.device, run.dtype)
        weights = [a.weights(p, exact.dtype, exact.device) for a, p in zip(held.axes, grid, strict=True)]
        err: Tensor = relative_sq(model.values(model(x.to(run.device, run.dtype)), grid), exact, weights).sqrt()
        return err

    evaluation = Evaluation(held, 16, memory=memory, rank=ranks.rank, world=ranks.world)
    out: Tensor = gathered(evaluation(metric), evaluation.positions(), len(held), ranks)
    return out
