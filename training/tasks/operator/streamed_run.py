"""``train --stream``: the operator task on data read from the files as the steps need them, in one process or as
one rank of several under ``torchrun``.

The files are opened from their headers (:func:`operators.streams.open_pairs`), summarised and checked in one
streaming pass (the in-memory route's checks, in its words), and trained on by
:mod:`training.tasks.streamed_operator`: each step's global batch is a function of the seed and the step, every rank
reads its slice, DDP averages the gradients (gloo on CPUs, NCCL on GPUs), and a checkpoint resumes under any number
of processes. What is resident is bounded by ``--memory``, never the files' sizes. The report is the in-memory
route's (:class:`~.program.Report`: the errors per test file, the worst sample of each plotted), written by rank 0;
the least-squares baseline needs the data in memory and is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from models.operator import OperatorModel
from operators.dataset import INPUT_KEYS, Samples, infer_dims, pick_key
from operators.files import contents
from operators.streams import PairStream, held_out, open_pairs, summarise
from training.deadline import Clock
from training.distributed import check_batch, device_of, setup
from training.errors import UserError
from training.loop import Trained

from .config import Config
from .model import SPEC, record, recorded
from .program import (
    Errors,
    LinearBaseline,
    Options,
    Report,
    check_room,
    describe_data,
    modes_for,
    plot_worst,
    resume_point,
    same_channels,
    stored_axes,
    test_names,
    write_report,
)
from .shape import Shape
from .task import check_fit


def refusal(config: Config, o: Options) -> str | None:
    """Why ``--stream`` cannot run ``config`` with options ``o`` (one line naming the option), or ``None``."""
    if o.time_axis is not None:
        return "--stream reads pairs; a time axis (--time-axis) is read in memory: drop one of them"
    if o.baseline is not None:
        return "--baseline fno trains in memory; drop it with --stream"
    if config.augment != "none":
        return f"config field augment={config.augment} is not applied to streamed batches; set augment=none"
    if config.log_input or config.homogeneous != 0:
        return "--stream takes a model without log_input or homogeneous (its scales come from the stream's moments)"
    return None


def open_streams(
    config: Config, o: Options, memory: int, say: Callable[[str], None]
) -> tuple[PairStream, dict[str, PairStream]]:
    """The training stream and the test streams by name (without ``--test``, the training file's last tenth, held
    out), their grids' axes read as the in-memory route reads them (:func:`~.program.stored_axes`)."""
    found = contents(o.train)
    key = pick_key(list(found), o.input_key, INPUT_KEYS, o.train, "input")
    shape = found[key].shape
    dims = o.dims if o.dims is not None else infer_dims(shape)
    axes = stored_axes(o, found, dims, shape, say)
    paths = (o.train, *o.tests)
    share = memory // (2 * len(paths))  # the readers' buffers; the rest for the batches in flight

    def stream(p: Path) -> PairStream:
        keys = {"input_key": o.input_key, "output_key": o.output_key}
        return open_pairs(p, axes, **keys, dims=dims, channels=o.channel_axis, memory=share)

    train = stream(o.train)
    tests = {name: stream(p) for name, p in zip(test_names(o.tests), o.tests, strict=True)}
    if not tests:
        train, tenth = held_out(train)
        tests = {"held-out": tenth}
    same_channels(train, tests.values())
    return train, tests


def worst_sample(s: PairStream, errs: Tensor) -> tuple[Samples, Tensor]:
    """The stream's worst sample (largest error) as one in-memory sample, and its error."""
    i = int(errs.argmax())
    x, y = s.read(np.array([i]))
    return Samples(x.double(), y.double(), s.axes, s.where), errs[i : i + 1]


def execute_streamed(config: Config, o: Options, say: Callable[[str], None] = print) -> Report:
    """The program on streams: open, summarise and check the files, train (or resume) to the steps or the
    deadline, evaluate every test file streamed and split over the ranks; rank 0 writes ``o.out/report.json``, the
    plots and the checkpoint. Returns the :class:`~.program.Report` (on every rank)."""
    from training import RunDir, fingerprint, fit
    from training.tasks import streamed_operator

    why = refusal(config, o)
    if why is not None:
        raise UserError(why)
    ranks, device = setup(device_of(o.device))
    check_batch(config.batch, ranks)
    tell = say if ranks.main else (lambda _: None)
    memory = o.memory.max_bytes
    clock = None if o.time is None else Clock(o.time)
    place = RunDir(o.out, o.program) if ranks.main else contextlib.nullcontext()
    with place:
        if clock is not None:
            clock.start(o.started)
        t0 = time.perf_counter()
        train, tests = open_streams(config, o, memory, tell)
        config = modes_for(config, o, train, tell)
        check_fit(config, train)
        shape = Shape(train.axes, *train.channels)
        SPEC.admit(record(config, shape), budget=o.memory, training=True)
        summary = summarise(train, memory=memory // 2, workers=0)
        summary.check(train)
        describe_data(train, tests, ", streamed", tell)
        tell(f"  opened and summarised in one pass in {time.perf_counter() - t0:.1f}s; {ranks.world} process(es)")
        moments = summary.inputs.mean, summary.inputs.std, summary.outputs.mean, summary.outputs.rms()
        seen = fingerprint(
            str(o.train), **{f"moment{i}": m for i, m in enumerate(moments)}, count=torch.tensor(len(train))
        )
        resumed = resume_point(o, config, shape, seen)
        task = streamed_operator.task(
            train, config, memory=memory // 2, device=device, ranks=ranks, workers=o.workers, summary=summary
        )
        tell(f"config: {config}")
        if clock is not None:
            t1 = time.perf_counter()
            for s in tests.values():
                streamed_operator.errors(task, s, ranks, memory // 2)
            clock.ends["evaluation"], clock.tail = 0.0, time.perf_counter() - t1
            if resumed is None:
                check_room(clock)
            tell(
                f"time {o.time:g}s: {clock.tail:.1f}s kept for the evaluation and report (at most {config.steps} steps)"
            )
        try:
            progress = fit(
                task,
                config=record(config, shape),
                steps=config.steps,
                out=o.out,
                eval_every=config.eval_every,
                checkpoint_every=config.checkpoint_every,
                fix="try a smaller --config lr= or a --config clip= (gradient-norm clipping)",
                meta=SPEC.meta(),
                progress=o.progress and ranks.main,
                ranks=ranks,
                threads=o.threads,
                budget=o.memory,
                data=seen,
                restart=o.restart,
                deadline=clock,
                reads=recorded,
            )
        finally:
            task.close()
        trained = Trained.of(task.model, progress)
        errs = {name: streamed_operator.errors(task, s, ranks, memory // 2) for name, s in tests.items()}
        model = task.model
        assert isinstance(model, OperatorModel)
        params = sum(p.numel() for p in model.parameters())
        result = Report(
            record(config, shape),
            torch.__version__,
            params,
            trained.elapsed,
            trained.step,
            trained.resumed_from,
            {
                name: Errors(s.where, s.grid, len(s), float(e.mean()), float(e.median()), float(e.max()))
                for (name, s), e in zip(tests.items(), errs.values(), strict=True)
            },
            trained.history,
            LinearBaseline(skipped="the data are streamed: the least-squares map needs them in memory"),
        )
        if ranks.main:
            for name, s in tests.items():
                one, err = worst_sample(s, errs[name])
                plot_worst(model, one, err, o.out / f"worst-{name}.png")
            write_report(result, o.out)
        ranks.barrier()
    return result
