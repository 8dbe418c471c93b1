"""``python -m examples.poisson``: train the Funcformer to solve Poisson's equation, the main job.

Learns the operator ``f ↦ g`` with ``Δg = f`` on ``[-1, 1]²``, ``g = 0`` on the boundary, from exact
spectral solutions; prints held-out and out-of-distribution relative L² errors and writes
``OUT/report.json``, ``OUT/poisson.png`` and a resumable ``OUT/checkpoint.pt`` (rerun the same
command after Ctrl-C or a SIGTERM to continue; a larger ``--steps`` extends a finished run).

Examples::

    python -m examples.poisson                          # default: about 7 min on one thread
    python -m examples.poisson --preset gpu --device cuda
    python -m examples.poisson --steps 500 --out runs/short
    python -m examples.poisson --config width=32 --config lr=3e-3
    torchrun --standalone --nproc_per_node=2 -m examples.poisson   # data parallel (DDP)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import torch

from operators.poisson import norms
from training import (
    RunDir,
    check_batch,
    check_resume,
    describe,
    device_of,
    options,
    run_cli,
    setup,
)
from training.cli import writable_dir
from training.speed import check_amp
from training.tasks.poisson import data
from training.tasks.poisson.config import PRESETS, Config
from training.tasks.poisson.model import SPEC

from . import generalise, plot, train

PROG = "python -m examples.poisson"


def parse(argv: list[str] | None = None) -> tuple[Config, argparse.Namespace]:
    """The config (preset, then ``--config`` and ``--steps`` overrides, validated) and the other options."""
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out="runs/poisson")
    p.add_argument("--cache", type=writable_dir, default=None, help="directory to cache the generated data")
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model (equal up to float rounding; pays on a GPU, not on a small CPU run)",
    )
    p.add_argument("--amp", action="store_true", help="bf16 autocast (CUDA only)")
    return options.config_of(p, argv, Config)


def summary(errs: torch.Tensor) -> dict[str, float]:
    return {"mean": float(errs.mean()), "median": float(errs.median()), "max": float(errs.max())}


def run(argv: list[str] | None) -> int:
    config, a = parse(argv)
    ranks, device = setup(device_of(a.device))  # joins the process group under torchrun
    check_batch(config.batch, ranks)
    check_amp(a.amp, device)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    SPEC.admit(describe(config), budget=a.budget, training=True)  # fits in memory: before anything is built
    # writable, ours, and (if resuming) written with this config -- all before any data is generated
    with RunDir(a.out, PROG) if ranks.main else contextlib.nullcontext():
        check_resume(a.out, describe(config), SPEC.meta(), a.budget)
        t0 = time.perf_counter()
        splits = data.splits(config.n_train, config.n_test, config.seed, config.modes, a.cache, config.sources)
        print(f"config: {config}")
        fresh = "a fresh batch of the training law every step (online), " if config.online else ""
        print(
            f"data: {fresh}{len(splits.train)} train, {len(splits.test)} held-out, {len(splits.ood)} OOD "
            f"({time.perf_counter() - t0:.1f}s)"
        )
        trained = train.train(
            config,
            splits,
            a.out,
            device,
            progress=not a.no_progress,
            ranks=ranks,
            compile=a.compile,
            amp=a.amp,
            threads=a.threads,
            budget=a.budget,
        )
        if not ranks.main:
            ranks.barrier()  # leave the group together with rank 0, once it has written its report
            return 0
        model = trained.model
        params = sum(p.numel() for p in model.parameters())
        test = train.errors(model, splits.test, device)
        ood = train.errors(model, splits.ood, device)
        families = generalise.table(model, config.n_test, device)
        report = {
            "config": describe(config),
            "device": str(device),
            "torch": torch.__version__,
            "compile": a.compile,
            "amp": a.amp,
            "processes": ranks.world,
            "resumed_from_step": trained.resumed_from,
            "parameters": params,
            "train_seconds": trained.elapsed,
            "steps": trained.step,
            "held_out_relative_l2": summary(test),
            "ood_relative_l2": summary(ood),
            "truncation_floor_held_out": float(
                norms.relative_l2(splits.test.target(config.out_modes or config.modes), splits.test.g).mean()
            ),
            "families": families,
            "history": trained.history,
        }
        (a.out / "report.json").write_text(json.dumps(report, indent=1))
        i = int(test.argmax())  # show the worst held-out sample
        pred = train.predict(model, splits.test.f[i : i + 1].to(device))[0]
        plot.figure(splits.test.f[i], splits.test.g[i], pred, a.out / "poisson.png", sample=i, error=float(test[i]))
        plot.curves(trained.history, a.out / "curves.png")
        ranks.barrier()
    fmt = "mean {mean:.3e}  median {median:.3e}  max {max:.3e}"
    print(f"parameters: {params}")
    resumed = "" if trained.resumed_from is None else f" (resumed from step {trained.resumed_from})"
    print(f"training time: {trained.elapsed:.1f}s for {trained.step} steps on {device}{resumed}")
    print(f"held-out relative L2:  {fmt.format(**summary(test))}")
    print(f"OOD relative L2:       {fmt.format(**summary(ood))}")
    print(generalise.render(families))
    print(f"wrote {a.out / 'report.json'}, {a.out / 'poisson.png'}, {a.out / 'curves.png'}, {a.out / train.CHECKPOINT}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
