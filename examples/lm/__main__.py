"""``python -m examples.lm``: train a character-level language model on Python's own documentation.

Examples::

    python -m examples.lm                          # GPT, default preset (a few minutes on 2 CPU cores)
    python -m examples.lm --model ipa --out runs/lm-ipa     # or relu, softplus, triangular, rnn
    python -m examples.lm --preset tiny --steps 50
    torchrun --standalone --nproc_per_node=2 -m examples.lm
"""

from __future__ import annotations

import sys
from pathlib import Path

from training import options, run_cli
from training.cli import bounded
from training.tasks.lm import PRESETS, Config
from training.tasks.lm.program import execute

PROG = "python -m examples.lm"


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help="run directory (default runs/lm-MODEL)")
    p.add_argument("--model", help="gpt, ipa, relu, softplus, triangular or rnn (shorthand for --config model=...)")
    p.add_argument("--sample", type=bounded(0, 10**6), default=400, help="characters of generated text to write")
    config, a = options.config_of(p, argv, Config)
    a.out = a.out or Path("runs") / f"lm-{config.model}"
    r = execute(config, options.Shared.of(a, PROG), a.sample)
    if r is None:  # another process under torchrun: rank 0 reports
        return 0
    resumed = "" if r["resumed_from_step"] is None else f" (resumed from step {r['resumed_from_step']})"
    print(
        f"{config.model}: {r['parameters']} parameters, {r['steps']} steps in {r['train_seconds']:.1f}s"
        f"{resumed}; validation {r['valid_bits_per_char']:.3f} bits/char (unigram {r['unigram_bits_per_char']:.3f})"
    )
    print(f"sample:\n{r['sample'][:300]}")
    print(f"wrote {a.out / 'report.json'}, {a.out / 'samples.txt'}, {a.out / 'checkpoint.pt'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
