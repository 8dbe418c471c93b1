"""``python -m examples.poisson``: train the Funcformer to solve Poisson's equation, the main job.

Learns the operator ``f ↦ g`` with ``Δg = f`` on ``[-1, 1]²``, ``g = 0`` on the boundary, from exact
spectral solutions; prints held-out and out-of-distribution relative L² errors and writes
``OUT/report.json``, ``OUT/poisson.png`` and a resumable ``OUT/checkpoint.pt`` (rerun the same
command after Ctrl-C to continue).

Examples::

    python -m examples.poisson                          # default: ~10 min on 2 CPU cores
    python -m examples.poisson --preset gpu --device cuda
    python -m examples.poisson --steps 500 --out runs/short
    python -m examples.poisson --config width=32 --config lr=3e-3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from . import data, plot, train
from .config import PRESETS, Config


def parse(argv: list[str] | None = None) -> tuple[Config, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -m examples.poisson", description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="default")
    p.add_argument("--config", action="append", default=[], metavar="FIELD=VALUE", help="override a config field")
    p.add_argument("--steps", type=int, help="shorthand for --config steps=N")
    p.add_argument("--out", type=Path, default=Path("runs/poisson"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--cache", type=Path, default=None, help="directory to cache the generated data")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    changes = dict(kv.split("=", 1) for kv in a.config)
    if a.steps is not None:
        changes["steps"] = str(a.steps)
    return PRESETS[a.preset].replace(**changes), a


def summary(errs: torch.Tensor) -> dict[str, float]:
    return {"mean": float(errs.mean()), "median": float(errs.median()), "max": float(errs.max())}


def main(argv: list[str] | None = None) -> int:
    config, a = parse(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    t0 = time.perf_counter()
    splits = data.splits(config.n_train, config.n_test, config.seed, config.modes, cache=a.cache)
    print(f"config: {config}")
    print(
        f"data: {len(splits.train)} train, {len(splits.test)} held-out, {len(splits.ood)} OOD "
        f"({time.perf_counter() - t0:.1f}s)"
    )
    try:
        state = train.train(config, splits, a.out, device, progress=not a.no_progress)
    except KeyboardInterrupt as e:
        print(f"\n{e}; rerun the same command to resume", file=sys.stderr)
        return 130
    model = state.model
    params = sum(p.numel() for p in model.parameters())
    test = train.errors(model, splits.test, device)
    ood = train.errors(model, splits.ood, device)
    report = {
        "config": config.__dict__,
        "parameters": params,
        "train_seconds": state.elapsed,
        "steps": state.step,
        "held_out_relative_l2": summary(test),
        "ood_relative_l2": summary(ood),
        "truncation_floor_held_out": float(data.relative_l2(splits.test.target(config.modes), splits.test.g).mean()),
        "history": state.history,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "report.json").write_text(json.dumps(report, indent=1))
    i = int(test.argmax())  # show the worst held-out sample
    pred = train.predict(model, splits.test.f[i : i + 1].to(device))[0]
    plot.figure(splits.test.f[i], splits.test.g[i], pred, a.out / "poisson.png")
    fmt = "mean {mean:.3e}  median {median:.3e}  max {max:.3e}"
    print(f"parameters: {params}")
    print(f"training time: {state.elapsed:.1f}s for {state.step} steps on {device}")
    print(f"held-out relative L2:  {fmt.format(**summary(test))}")
    print(f"OOD relative L2:       {fmt.format(**summary(ood))}")
    print(f"wrote {a.out / 'report.json'}, {a.out / 'poisson.png'}, {a.out / train.CHECKPOINT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
