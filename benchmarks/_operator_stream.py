"""The operator model trained on a stream (shared by ``streaming.py`` and ``torchrun_speed.py``).

:func:`stream_task` builds, from a heat-map file (:func:`operators.heat.write`: keys ``u0`` and ``u``), the
operator model (:class:`training.tasks.operator.OperatorModel`, a config's public fields), its normalisation from
one streaming pass (:func:`operators.streams.summarise`), and a :class:`training.streamed.StreamTask` whose loss
is the operator task's relative L² error through the model's forward pass (DDP's, under ``torchrun``).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import torch
from torch import Tensor

from operators.files import contents
from operators.layout import Axis
from operators.streams import Evaluation, PairStream, Summary, open_pairs, summarise
from training.distributed import Ranks
from training.streamed import Batches, StreamTask, gathered
from training.tasks.operator import Config, OperatorModel, Shape
from training.tasks.operator.model import roughness
from training.tasks.operator.train import relative_sq


def heat_stream(path: Path, memory: int) -> PairStream:
    """The pairs ``u0 -> u`` of a heat-map file, every axis periodic (``i / P``)."""
    dims = len(contents(path)["u0"].shape) - 1
    axes = tuple(Axis("periodic") for _ in range(dims))
    return open_pairs(path, axes, input_key="u0", output_key="u", memory=memory)


def scale(model: OperatorModel, s: Summary) -> None:
    """What :meth:`~training.tasks.operator.OperatorModel.fit_scales` sets, from a streaming pass's moments (a
    model without ``log_input`` or ``homogeneous``, on periodic axes: the outputs' mean is shifted out)."""
    with torch.no_grad():
        model.in_shift.copy_(s.inputs.mean)
        model.in_scale.copy_(s.inputs.std.clamp_min(1e-12))
        model.out_shift.copy_(s.outputs.mean)
        model.out_scale.copy_(s.outputs.rms(s.outputs.mean).reciprocal())


def stream_task(
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
    scale(model, summary if summary is not None else summarise(stream, memory=memory))
    model = model.to(device)
    grid = stream.grid

    def loss(forward: object, x: Tensor, y: Tensor) -> Tensor:
        u = forward(x)  # type: ignore[operator]
        weights = [a.weights(p, y.dtype, y.device) for a, p in zip(model.shape.axes, grid, strict=True)]
        per = relative_sq(model.values(u, grid), y, weights)
        smooth = config.smooth * roughness(u, model.shape.axes) / y.pow(2).flatten(1).mean(-1)
        return (per + smooth).mean()

    batches = Batches(stream, config.batch, config.seed + 1, device=device, memory=memory, ranks=ranks, workers=workers)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, config.beta2))
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, config.lr, total_steps=config.steps, pct_start=0.1)
    return StreamTask(model, loss, batches, optimiser, schedule, seed=config.seed, clip=config.clip)


def held_out_errors(task: StreamTask, held: PairStream, ranks: Ranks, memory: int) -> Tensor:
    """The trained model's relative L² error on each held-out sample: an evaluation pass split over the ranks and
    gathered (:class:`operators.streams.Evaluation`, :func:`training.streamed.gathered`)."""
    model, grid = task.model, held.grid
    assert isinstance(model, OperatorModel)

    def metric(x: Tensor, y: Tensor) -> Tensor:
        exact = y.to(task.device, task.dtype)
        weights = [a.weights(p, exact.dtype, exact.device) for a, p in zip(held.axes, grid, strict=True)]
        return relative_sq(model.values(model(x.to(task.device, task.dtype)), grid), exact, weights).sqrt()

    evaluation = Evaluation(held, 16, memory=memory, rank=ranks.rank, world=ranks.world)
    return gathered(evaluation(metric), evaluation.positions(), len(held), ranks)


def peak(pid: int | str = "self") -> int:
    """A process's peak resident memory (``VmHWM``), bytes; 0 where ``/proc`` does not say."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def children() -> list[int]:
    """This process's live child processes (a loader's workers)."""
    me, out = str(os.getpid()), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            out.append(int(stat.parent.name))
    return out


def finished_children_peak() -> int:
    """The largest peak resident memory of this process's finished children, bytes (Linux's ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
