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

import sys

from training import options, run_cli
from training.cli import writable_dir
from training.tasks.poisson import PRESETS, Config
from training.tasks.poisson.generalise import render
from training.tasks.poisson.program import Summary, execute

PROG = "python -m examples.poisson"


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out="runs/poisson")
    p.add_argument("--cache", type=writable_dir, default=None, help="directory to cache the generated data")
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model (equal up to float rounding; pays on a GPU, not on a small CPU run)",
    )
    p.add_argument("--amp", action="store_true", help="bf16 autocast (CUDA only)")
    config, a = options.config_of(p, argv, Config)
    r = execute(config, options.Shared.of(a, PROG), cache=a.cache, compile=a.compile, amp=a.amp)
    if r is None:  # another process under torchrun: rank 0 reports
        return 0

    def fmt(e: Summary) -> str:
        return f"mean {e.mean:.3e}  median {e.median:.3e}  max {e.max:.3e}"

    resumed = "" if r.resumed_from_step is None else f" (resumed from step {r.resumed_from_step})"
    print(f"parameters: {r.parameters}")
    print(f"training time: {r.train_seconds:.1f}s for {r.steps} steps on {r.device}{resumed}")
    print(f"held-out relative L2:  {fmt(r.held_out_relative_l2)}")
    print(f"OOD relative L2:       {fmt(r.ood_relative_l2)}")
    print(render(r.families))
    files = ("report.json", "poisson.png", "curves.png", "checkpoint.pt")
    print(f"wrote {', '.join(str(a.out / f) for f in files)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
