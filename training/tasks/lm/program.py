"""What ``python -m examples.lm`` does, as one library function: :func:`execute`.

Take the run directory, check a resume, read the corpus (Python's own documentation), admit the config against
the memory budget (its vocabulary is the corpus's), train with the shared loop (under ``torchrun``, data
parallel), and sample text from the trained model; writes ``OUT/report.json``, ``OUT/samples.txt`` and the
resumable ``OUT/checkpoint.pt``, and returns the report.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import torch

from training import RunDir, check_batch, check_resume, describe, device_of, setup
from training.options import Shared

from . import data
from .config import Config
from .model import SPEC
from .train import data_of, train


def execute(
    config: Config, run: Shared, sample: int = 400, say: Callable[[str], None] = print
) -> dict[str, Any] | None:
    """Train (or resume) and sample ``sample`` characters; the report (with the text under ``"sample"``), or
    ``None`` on a process other than rank 0 under torchrun."""
    assert run.out is not None
    ranks, device = setup(device_of(run.device))
    check_batch(config.batch, ranks)
    report: dict[str, Any] | None = None
    with RunDir(run.out, run.program) if ranks.main else contextlib.nullcontext():
        check_resume(run.out, describe(config), SPEC.meta(), run.memory, restart=run.restart)
        corpus = data.corpus(config.limit or None)
        check_resume(run.out, describe(config), SPEC.meta(), run.memory, data=data_of(corpus), restart=run.restart)
        # fits in memory (the vocabulary is the corpus's): before anything is built
        SPEC.admit(describe(config), {"vocab": corpus.vocab}, run.memory, training=True)
        unigram = corpus.unigram_bits()
        say(
            f"corpus: {len(corpus.train)} train / {len(corpus.valid)} valid characters, {len(corpus.vocab)} "
            f"symbols; sha256 {corpus.sha256[:16]}; unigram baseline {unigram:.3f} bits/char"
        )
        trained = train(config, corpus, run.out, device, **run.fit(ranks))
        if ranks.main:
            model = trained.model.eval()
            g = torch.Generator().manual_seed(config.seed)
            prompt = corpus.valid[: min(config.context, 32)].to(device)
            text = corpus.decode(model.sample(prompt, sample, 0.8, g).cpu())
            (run.out / "samples.txt").write_text(text)
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
            (run.out / "report.json").write_text(json.dumps(report, indent=1))
            report = {**report, "sample": text}
        ranks.barrier()
    return report
