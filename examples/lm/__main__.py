"""``python -m examples.lm``: train a character-level language model on Python's own documentation.

Examples::

    python -m examples.lm                          # GPT, default preset (a few minutes on 2 CPU cores)
    python -m examples.lm --model ipa --out runs/lm-ipa     # or relu, softplus, triangular, rnn
    python -m examples.lm --preset tiny --steps 50
    torchrun --standalone --nproc_per_node=2 -m examples.lm
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import torch

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
from training.cli import bounded
from training.tasks.lm import data
from training.tasks.lm.config import PRESETS, Config
from training.tasks.lm.model import CHECKPOINT, SPEC

from . import train

PROG = "python -m examples.lm"


def parse(argv: list[str] | None) -> tuple[Config, argparse.Namespace]:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help="run directory (default runs/lm-MODEL)")
    p.add_argument("--model", help="gpt, ipa, relu, softplus, triangular or rnn (shorthand for --config model=...)")
    p.add_argument("--sample", type=bounded(0, 10**6), default=400, help="characters of generated text to write")
    config, a = options.config_of(p, argv, Config)
    if a.out is None:
        a.out = Path("runs") / f"lm-{config.model}"
    return config, a


def run(argv: list[str] | None) -> int:
    config, a = parse(argv)
    ranks, device = setup(device_of(a.device))
    check_batch(config.batch, ranks)
    with RunDir(a.out, PROG) if ranks.main else contextlib.nullcontext():
        check_resume(a.out, describe(config), SPEC.meta(), a.budget)
        corpus = data.corpus(config.limit or None)
        # fits in memory (the vocabulary is the corpus's): before anything is built
        SPEC.admit(describe(config), {"vocab": corpus.vocab}, a.budget, training=True)
        unigram = corpus.unigram_bits()
        print(
            f"corpus: {len(corpus.train)} train / {len(corpus.valid)} valid characters, {len(corpus.vocab)} "
            f"symbols; sha256 {corpus.sha256[:16]}; unigram baseline {unigram:.3f} bits/char"
        )
        trained = train.train(
            config, corpus, a.out, device, progress=not a.no_progress, ranks=ranks, threads=a.threads, budget=a.budget
        )
        if ranks.main:
            model = trained.model.eval()
            g = torch.Generator().manual_seed(config.seed)
            prompt = corpus.valid[: min(config.context, 32)].to(device)
            text = corpus.decode(model.sample(prompt, a.sample, 0.8, g).cpu())
            (a.out / "samples.txt").write_text(text)
            final = trained.history[-1]["valid_bits_per_char"] if trained.history else float("nan")
            report = {
                "config": describe(config),
                "text_sha256": corpus.sha256,
                "python": corpus.python,
                "device": str(device),
                "torch": torch.__version__,
                "processes": ranks.world,
                "parameters": sum(p.numel() for p in model.parameters()),
                "steps": trained.step,
                "resumed_from_step": trained.resumed_from,
                "train_seconds": trained.elapsed,
                "unigram_bits_per_char": unigram,
                "valid_bits_per_char": final,
                "history": trained.history,
            }
            (a.out / "report.json").write_text(json.dumps(report, indent=1))
            resumed = "" if trained.resumed_from is None else f" (resumed from step {trained.resumed_from})"
            print(
                f"{config.model}: {report['parameters']} parameters, {trained.step} steps in {trained.elapsed:.1f}s"
                f"{resumed}; validation {final:.3f} bits/char (unigram {unigram:.3f})"
            )
            print(f"sample:\n{text[:300]}")
            print(f"wrote {a.out / 'report.json'}, {a.out / 'samples.txt'}, {a.out / CHECKPOINT}")
        ranks.barrier()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
