"""Every language model of ``examples.lm`` at equal parameters, for equal steps and for equal wall clock.

The models -- GPT, IPA, ReLU and softplus attention, triangular time mixing, the RNN -- are built by
``examples.lm`` with the GPT's parameter count (within 5%) and trained on the same corpus (the
standard library's ``pydoc_data`` text), with the same optimiser, schedule, batches and seed:

1. **equal steps**: ``--steps`` steps each; the time per step is measured on the way;
2. **equal wall clock**: the GPT's time for those steps is the budget; each model trains afresh for as
   many steps as its own measured speed fits into the budget (its schedule spans those steps), and
   stops early if the budget runs out.

Validation bits per character at both budgets are printed as a table beside the unigram baseline;
the last line counts the models that beat the unigram baseline at both budgets.

    python benchmarks/lm_zoo.py                 # 1000 steps each, default sizes (tens of minutes on 2 cores)
    python benchmarks/lm_zoo.py --quick         # about a minute: small models, 150 steps, part of the text
    python benchmarks/lm_zoo.py --models gpt,ipa --steps 2000 --json lm_zoo.json
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import get_args

import torch

from training.cli import Parser, bounded, run_cli
from training.distributed import device_of
from training.tasks.lm import data
from training.tasks.lm.config import PRESETS, Config, ModelKind
from training.tasks.lm.train import LMTask

KINDS: tuple[str, ...] = get_args(ModelKind)


@dataclass(frozen=True)
class Row:
    model: str
    parameters: int
    ms_per_step: float
    bits_equal_steps: float
    steps_in_budget: int
    bits_equal_time: float


def run(config: Config, corpus: data.Corpus, device: torch.device, steps: int, budget: float | None) -> LMTask:
    """Train a fresh ``config`` model for ``steps`` steps (stopping at ``budget`` seconds, if given)."""
    task = LMTask(config.replace(steps=steps, warmup_steps=min(config.warmup_steps, steps // 10)), corpus, device)
    start = time.perf_counter()
    done = 0
    while done < steps:
        task.train_step()
        done += 1
        if budget is not None and time.perf_counter() - start >= budget:
            break
    task.steps_done = done  # type: ignore[attr-defined]
    task.seconds = time.perf_counter() - start  # type: ignore[attr-defined]
    return task


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="python benchmarks/lm_zoo.py", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small models, few steps, part of the text (~1 minute)")
    p.add_argument("--steps", type=int, default=None, help="the equal-steps budget (default 1000; 150 with --quick)")
    p.add_argument("--models", default=",".join(KINDS), help=f"comma-separated, from {', '.join(KINDS)}")
    p.add_argument("--threads", type=bounded(0, 4096), default=0, help="torch threads (0: torch's default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", default=None, help="also write the table to this file")
    a = p.parse_args(argv)
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in KINDS]
    if unknown or not models:
        p.error(f"--models: unknown {unknown or 'empty list'}; choose from {', '.join(KINDS)}")
    if "gpt" not in models:
        models.insert(0, "gpt")  # the wall-clock budget is the GPT's
    models.sort(key=lambda m: m != "gpt")
    if a.threads:
        torch.set_num_threads(a.threads)
    steps = a.steps if a.steps is not None else (150 if a.quick else 1000)
    if steps < 1:
        p.error(f"--steps {steps}: must be >= 1")
    base = PRESETS["default"]
    if a.quick:
        base = base.replace(
            context=32, width=32, hidden=128, heads=4, depth=1, batch=16, lr=1e-2, warmup_steps=10, eval_batches=4
        )
    corpus = data.corpus(120_000 if a.quick else None)
    device = device_of(a.device)
    unigram = corpus.unigram_bits()
    print(
        f"corpus: pydoc_data.topics, Python {corpus.python}, sha256 {corpus.sha256[:16]}..., "
        f"{len(corpus.train) + len(corpus.valid)} characters; unigram baseline {unigram:.3f} bits/char"
    )
    print(
        f"sizes: context {base.context}, width {base.width}, hidden {base.hidden}, heads {base.heads}, "
        f"depth {base.depth}, batch {base.batch}; {steps} steps; threads {torch.get_num_threads()}"
    )
    rows: list[Row] = []
    budget = 0.0
    for m in models:
        config = base.replace(model=m)
        by_steps = run(config, corpus, device, steps, None)
        ms = 1000 * by_steps.seconds / steps  # type: ignore[attr-defined]
        if m == "gpt":
            budget = by_steps.seconds  # type: ignore[attr-defined]
        fits = max(1, int(budget * 1000 / ms))
        by_time = run(config, corpus, device, fits, budget)
        row = Row(
            m,
            sum(q.numel() for q in by_steps.model.parameters()),
            ms,
            by_steps.evaluate()["valid_bits_per_char"],
            by_time.steps_done,  # type: ignore[attr-defined]
            by_time.evaluate()["valid_bits_per_char"],
        )
        rows.append(row)
        print(
            f"  {m}: {row.bits_equal_steps:.3f} bits/char at {steps} steps, {row.bits_equal_time:.3f} in "
            f"{budget:.0f} s ({row.steps_in_budget} steps)",
            flush=True,
        )
    gpt = rows[0]
    print(
        f"\n| model | parameters | ms/step | bits/char, {steps} steps "
        f"| steps in {budget:.0f} s | bits/char, {budget:.0f} s |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.model} | {r.parameters} ({100 * (r.parameters / gpt.parameters - 1):+.1f}%) | {r.ms_per_step:.1f} "
            f"| {r.bits_equal_steps:.3f} | {r.steps_in_budget} | {r.bits_equal_time:.3f} |"
        )
    print(f"| unigram | | | {unigram:.3f} | | {unigram:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "unigram": unigram,
                    "steps": steps,
                    "budget_s": budget,
                    "sha256": corpus.sha256,
                    "python": corpus.python,
                    "rows": [r.__dict__ for r in rows],
                },
                f,
                indent=1,
            )
    beating = sum(r.bits_equal_steps < unigram and r.bits_equal_time < unigram for r in rows)
    print(f"result: models_beating_unigram {beating} (target >= 6)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("lm_zoo", main))
