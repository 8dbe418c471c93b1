"""``python -m examples.operator``: train the Funcformer on your own operator data, on any grid.

Reads input and output functions sampled on a grid of one or two axes from files (``.pt``, ``.npz``, ``.mat``,
HDF5), checks them against the grid declared (``--layout``, ``--boundary``, ``--extent``), trains for ``--steps``
or within ``--time`` and reports the relative L² error on each ``--test`` file at its own resolution; writes
``OUT/report.json``, ``OUT/worst-NAME.png`` and a resumable ``OUT/checkpoint.pt`` (``training.load(OUT)``).

Examples::

    python -m examples.operator --train train.npz --test test.npz --time 10m
    python -m examples.operator --train darcy_train.pt --test darcy_test.pt --test darcy_test_fine.pt \\
        --layout periodic --boundary zero --log-input true --baseline fno
    python -m examples.operator --train burgers.mat --input-key a --output-key u --dims 1 --layout periodic
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

from operators import layout
from training import UserError, cli, options, run_cli
from training.config import MAX_STEPS
from training.deadline import process_age
from training.tasks.operator import PRESETS, Config
from training.tasks.operator.program import Options, execute, parse_time

PROG = "python -m examples.operator"


def parse(argv: list[str] | None) -> tuple[Config, Options]:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out="runs/operator")
    p.add_argument("--train", type=Path, required=True, help="the training samples (a file)")
    p.add_argument("--test", type=Path, action="append", default=[], help="held-out samples (repeatable)")
    p.add_argument("--input-key", help="the inputs' key in the files (default: x, a, coeff, input or inputs)")
    p.add_argument("--output-key", help="the outputs' key (default: y, u, sol, output or outputs)")
    p.add_argument("--dims", type=int, choices=(1, 2), help="the grid's dimensions (default: from the shapes)")
    p.add_argument("--channel-axis", choices=("last", "first"), default="last", help="where a channel axis sits")
    p.add_argument(
        "--layout",
        type=_per_axis("--layout"),
        help="where the samples sit: nodes, periodic, centres, chebyshev, lobatto (x,y)",
    )
    p.add_argument(
        "--boundary",
        type=_per_axis("--boundary"),
        help="what the model assumes at the ends: free, zero or periodic (x,y)",
    )
    p.add_argument("--extent", type=_per_axis("--extent"), help="each axis's extent LO:HI (default 0:1)")
    p.add_argument(
        "--time",
        help="a deadline: the command ends within this duration (90s, 10m, 1.5h; --steps N: at most N steps)",
    )
    p.add_argument("--budget", help=argparse.SUPPRESS)  # split into --steps and --time: said so in one line
    p.add_argument("--baseline", choices=("fno",), help="also train neuraloperator's FNO on the same data")
    config, a = options.config_of(p, argv, Config)
    if a.budget is not None:
        raise UserError(f"--budget {a.budget}: a step count is --steps N, a time --time 10m (memory: --memory GIB)")
    if a.time is not None and a.steps is None and not any(i.partition("=")[0].strip() == "steps" for i in a.config):
        config = config.replace(steps=MAX_STEPS)  # the deadline ends the run, not the preset's steps
    return config, _options(a)


def _per_axis(option: str) -> Callable[[str], str]:
    """The option's text, each of its values checked as it is parsed (an empty name, an extent out of bounds)."""
    return cli.checked(lambda text: layout.check_option(option, text))


def _options(a: argparse.Namespace) -> Options:
    return Options(
        train=a.train,
        tests=tuple(a.test),
        out=a.out,
        input_key=a.input_key,
        output_key=a.output_key,
        dims=a.dims,
        channel_axis=a.channel_axis,
        layout=a.layout,
        boundary=a.boundary,
        extent=a.extent,
        time=None if a.time is None else parse_time(a.time),
        baseline=a.baseline,
        device=a.device,
        threads=a.threads,
        progress=not a.no_progress,
        memory=a.memory,
        restart=a.restart,
        program=PROG,
    )


def run(argv: list[str] | None) -> int:
    config, o = parse(argv)
    if argv is None:  # the command itself: --time counts its start and imports
        o = dataclasses.replace(o, started=process_age())
    r = execute(config, o)
    print(f"parameters: {r.parameters}; {r.steps} steps in {r.train_seconds:.1f}s")
    for name, e in r.tests.items():
        line = f"{name} ({'x'.join(map(str, e.grid))}): relative L2 mean {e.mean:.3e}  median {e.median:.3e}"
        line += f"  max {e.max:.3e}"
        if r.fno is not None:
            line += f"  | FNO {r.fno.tests[name].mean:.3e}, ratio {r.fno.ratio[name]:.3f}"
        if name in r.linear.tests:
            line += f"  | least squares {r.linear.tests[name].mean:.3e}"
        print(line)
    if r.linear.skipped is not None:
        print(f"least-squares baseline skipped: {r.linear.skipped}")
    print(f"wrote {o.out / 'report.json'}, {o.out / 'checkpoint.pt'} and the worst samples' plots")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
