"""What ``python -m examples.poisson`` does, as one library function: :func:`execute`.

Admit the config against the memory budget, take the run directory, check a resume, draw (or read the cached)
data, train with the shared loop, and measure the trained model on the held-out, out-of-distribution and
family sets; writes ``OUT/report.json``, ``OUT/poisson.png`` (the worst held-out sample), ``OUT/curves.png``
and the resumable ``OUT/checkpoint.pt``, and returns the :class:`Report`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from operators.poisson.norms import relative_l2
from training import RunDir, check_batch, check_resume, describe, device_of, setup
from training.options import Shared
from training.speed import check_amp

from . import data, generalise, plot
from .config import Config
from .model import SPEC
from .train import data_of, errors, predict, train


@dataclass(frozen=True)
class Summary:
    """The ``mean``, ``median`` and ``max`` of per-sample errors."""

    mean: float
    median: float
    max: float

    @classmethod
    def of(cls, errs: Tensor) -> Summary:
        return cls(float(errs.mean()), float(errs.median()), float(errs.max()))


@dataclass(frozen=True)
class Report:
    """What :func:`execute` returns (and writes to ``report.json``: :meth:`to_json`).

    Attributes:
        config: the run's config as plain data; device, torch, compile, amp, processes: where and how it ran.
        resumed_from_step: ``None`` unless resumed; parameters, train_seconds, steps: the training run.
        held_out_relative_l2, ood_relative_l2: the errors on the held-out and out-of-distribution sets.
        truncation_floor_held_out: what the series' length alone leaves of the held-out solutions.
        families: the generalisation table (:func:`~training.tasks.poisson.generalise.table`).
        history: the held-out errors along the run.
    """

    config: dict[str, Any]
    device: str
    torch: str
    compile: bool
    amp: bool
    processes: int
    resumed_from_step: int | None
    parameters: int
    train_seconds: float
    steps: int
    held_out_relative_l2: Summary
    ood_relative_l2: Summary
    truncation_floor_held_out: float
    families: dict[str, dict[str, float]]
    history: list[dict[str, float]]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def execute(
    config: Config,
    run: Shared,
    *,
    cache: Path | None = None,
    compile: bool = False,
    amp: bool = False,
    say: Callable[[str], None] = print,
) -> Report | None:
    """Train (or resume) and measure; the report (``None`` on a process other than rank 0 under torchrun)."""
    assert run.out is not None
    out = run.out
    ranks, device = setup(device_of(run.device))  # joins the process group under torchrun
    check_batch(config.batch, ranks)
    check_amp(amp, device)
    if run.threads is not None:
        torch.set_num_threads(run.threads)
    SPEC.admit(describe(config), budget=run.memory, training=True)  # fits in memory: before anything is built
    # writable, ours, and (if resuming) written with this config -- all before any data is generated
    with RunDir(out, run.program) if ranks.main else contextlib.nullcontext():
        check_resume(out, describe(config), SPEC.meta(), run.memory, restart=run.restart)
        t0 = time.perf_counter()
        splits = data.splits(config.n_train, config.n_test, config.seed, config.modes, cache, config.sources)
        # and on these data: before the model is built
        check_resume(out, describe(config), SPEC.meta(), run.memory, data=data_of(config, splits), restart=run.restart)
        say(f"config: {config}")
        fresh = "a fresh batch of the training law every step (online), " if config.online else ""
        say(
            f"data: {fresh}{len(splits.train)} train, {len(splits.test)} held-out, {len(splits.ood)} OOD "
            f"({time.perf_counter() - t0:.1f}s)"
        )
        trained = train(config, splits, out, device, compile=compile, amp=amp, **run.fit(ranks))
        if not ranks.main:
            ranks.barrier()  # leave the group together with rank 0, once it has written its report
            return None
        model = trained.model
        test, ood = errors(model, splits.test, device), errors(model, splits.ood, device)
        report = Report(
            describe(config),
            str(device),
            torch.__version__,
            compile,
            amp,
            ranks.world,
            trained.resumed_from,
            sum(p.numel() for p in model.parameters()),
            trained.elapsed,
            trained.step,
            Summary.of(test),
            Summary.of(ood),
            float(relative_l2(splits.test.target(config.out_modes or config.modes), splits.test.g).mean()),
            generalise.table(model, config.n_test, device),
            trained.history,
        )
        (out / "report.json").write_text(json.dumps(report.to_json(), indent=1))
        i = int(test.argmax())  # show the worst held-out sample
        pred = predict(model, splits.test.f[i : i + 1].to(device))[0]
        plot.figure(splits.test.f[i], splits.test.g[i], pred, out / "poisson.png", sample=i, error=float(test[i]))
        plot.curves(trained.history, out / "curves.png")
        ranks.barrier()
    return report
