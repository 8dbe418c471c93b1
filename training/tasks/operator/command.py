"""``applicative-transformers``: the installed command -- ``train``, ``predict`` and ``inspect`` on operator data.

* ``applicative-transformers train --train FILE [--test FILE ...]`` trains the Funcformer on input and output
  functions sampled on a grid of one or two axes (``.pt``, ``.npz``, ``.npy``, ``.mat``, HDF5), checked against
  the grid declared (``--layout``, ``--boundary``, ``--extent``), for ``--steps`` or within ``--time``; reports the
  relative L² error on each test file at its own resolution (without ``--test``, on the training file's last tenth,
  held out); writes ``OUT/report.json``, ``OUT/worst-NAME.png`` and a resumable ``OUT/checkpoint.pt``.
* ``applicative-transformers predict RUN INPUT [-o OUTPUT] [--at LO:HI:COUNT]`` applies a trained run to a file of
  inputs, checked as training checks them, and writes the outputs in the same format, on the inputs' grid or at
  the coordinates asked for (:func:`~.apply.predict_file`).
* ``applicative-transformers inspect FILE`` prints the file's arrays and, per grid axis, the evidence for each
  layout (:func:`operators.inspection.report`).

A user error is one line on stderr, exit status 2. ``python -m examples.operator`` is ``train`` under its old name.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path

from operators import inspection, layout
from training import cli, options, run_cli
from training.config import MAX_STEPS
from training.deadline import leave, process_age, timed_command
from training.errors import UserError

from .config import PRESETS, Config
from .program import Options, execute, parse_time
from .shape import MAX_STATES
from .time_axis import TimeOptions

COMMAND = "applicative-transformers"
TRAIN_EXAMPLES = """examples:
  %(prog)s --train train.npz --test test.npz --time 10m
  %(prog)s --train darcy_train.pt --test darcy_test.pt --layout periodic --boundary zero --log-input true
  %(prog)s --train burgers.mat --input-key a --output-key u --dims 1 --layout periodic
  %(prog)s --train trajectories.h5 --time-axis 1 --time-window 10 --horizon 10 --layout periodic"""


def _per_axis(option: str) -> Callable[[str], str]:
    """The option's text, each of its values checked as it is parsed (an empty name, an extent out of bounds)."""
    return cli.checked(lambda text: layout.check_option(option, text))


def _fraction(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= x <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{x} is out of range: a fraction of the field's root-mean-square in [0, 1]")
    return x


def train_parser(prog: str) -> argparse.ArgumentParser:
    """The ``train`` options: the shared ones (:func:`training.options.program`) and the data's."""
    p = options.program(
        prog, "train the Funcformer on your own operator data, on any grid", PRESETS, out="runs/operator"
    )
    p.epilog, p.formatter_class = TRAIN_EXAMPLES, argparse.RawDescriptionHelpFormatter
    p.add_argument("--train", type=Path, required=True, help="the training samples (a file)")
    p.add_argument(
        "--test",
        type=Path,
        action="append",
        default=[],
        help="held-out samples (repeatable; default: the training file's last tenth, held out)",
    )
    p.add_argument("--input-key", help="the inputs' key in the files (default: x, a, coeff, input or inputs)")
    p.add_argument("--output-key", help="the outputs' key (default: y, u, sol, output or outputs)")
    p.add_argument("--dims", type=int, choices=(1, 2), help="the grid's dimensions (default: from the shapes)")
    p.add_argument("--channel-axis", choices=("last", "first"), default="last", help="where a channel axis sits")
    p.add_argument(
        "--layout",
        type=_per_axis("--layout"),
        help="where the samples sit: nodes, periodic, centres, chebyshev, lobatto",
    )
    p.add_argument(
        "--boundary", type=_per_axis("--boundary"), help="what the model assumes at the ends: free, zero or periodic"
    )
    p.add_argument("--extent", type=_per_axis("--extent"), help="each axis's extent LO:HI (default 0:1)")
    p.add_argument(
        "--zero-tolerance",
        type=_fraction,
        help="how large a zero boundary's stored ends may be, over the field's root-mean-square (default: the "
        "data's own roughness, at least 1e-3)",
    )
    p.add_argument(
        "--time",
        help="a deadline: the command ends within this duration (90s, 10m, 1.5h; --steps N: at most N steps)",
    )
    p.add_argument("--budget", help=argparse.SUPPRESS)  # split into --steps and --time: said so in one line
    p.add_argument("--baseline", choices=("fno",), help="also train neuraloperator's FNO on the same data")
    s = p.add_argument_group("streams", "data larger than memory, and more than one process (torchrun)")
    s.add_argument(
        "--stream",
        action="store_true",
        help="read the samples from the files as the steps need them (what --memory allows resident), alone or as "
        "one rank under torchrun",
    )
    s.add_argument(
        "--workers",
        type=cli.bounded(0, 64),
        default=2,
        help="with --stream: processes per rank reading the batches (default 2)",
    )
    t = p.add_argument_group("time", "files whose arrays hold a time axis (see the operator guide)")
    t.add_argument(
        "--time-axis",
        type=cli.bounded(1, MAX_STATES),
        metavar="K",
        help="the arrays' axis that counts the states (the samples' axis is 0): trajectories (N, T, *grid), or an "
        "initial condition (N, *grid) and its trajectory (N, T, *grid)",
    )
    t.add_argument(
        "--time-window",
        type=cli.bounded(1, MAX_STATES),
        metavar="W",
        help="trajectories: the past states the model steps from (default 1)",
    )
    t.add_argument(
        "--horizon",
        type=cli.bounded(1, MAX_STATES),
        metavar="H",
        help="trajectories: the steps a test rollout predicts (default: the rest of each test trajectory)",
    )
    return p


def parse_train(argv: list[str] | None, prog: str = f"{COMMAND} train") -> tuple[Config, Options]:
    """The config and options of a ``train`` command line, every option checked before any file is read."""
    p = train_parser(prog)
    config, a = options.config_of(p, argv, Config)
    if a.budget is not None:
        raise UserError(f"--budget {a.budget}: a step count is --steps N, a time --time 10m (memory: --memory GIB)")
    given = [item.split("=", 1)[0].strip() for item in a.config]
    if a.time is not None and a.steps is None and "steps" not in given:
        config = config.replace(steps=MAX_STEPS)  # the deadline ends the run, not the preset's steps
    modes_given = "modes" in given or getattr(a, "field_modes", None) is not None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not a.stream:
        raise UserError("under torchrun each process reads its share of the data: add --stream")
    for flag, value in (("--time-window", a.time_window), ("--horizon", a.horizon)):
        if value is not None and a.time_axis is None:
            raise UserError(f"{flag} steps through time: give --time-axis K, the arrays' axis that counts the states")
    return config, Options(
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
        program=prog,
        zero_tolerance=a.zero_tolerance,
        fit_modes=not modes_given,
        time_axis=None if a.time_axis is None else TimeOptions(a.time_axis, a.time_window, a.horizon),
        workers=a.workers,
        stream=a.stream,
    )


def train(argv: list[str] | None, prog: str = f"{COMMAND} train", *, command: bool = False) -> int:
    """``train``: parse, run (:func:`~.program.execute`) and print the errors per test file. ``command``: run as
    the process's command, whose start and imports ``--time`` counts."""
    config, o = parse_train(argv, prog)
    if command:
        o = dataclasses.replace(o, started=process_age())
    if o.stream:
        from .streamed_run import execute_streamed

        r = execute_streamed(config, o)
    else:
        r = execute(config, o)
    if not o.main:
        return 0
    print(f"parameters: {r.parameters}; {r.steps} steps in {r.train_seconds:.1f}s")
    for name, e in r.tests.items():
        line = f"{name} ({'x'.join(map(str, e.grid))}): relative L2 mean {e.mean:.3e}  median {e.median:.3e}"
        line += f"  max {e.max:.3e}"
        if r.fno is not None:
            line += f"  | FNO {r.fno.tests[name].mean:.3e}, ratio {r.fno.ratio[name]:.3f}"
        if name in r.linear.tests:
            line += f"  | least squares {r.linear.tests[name].mean:.3e}"
        print(line)
    for name, h in r.horizon.items():
        line = f"{name}: over {h.steps} steps, relative L2 mean {h.mean:.3e}  median {h.median:.3e}  max {h.max:.3e}"
        if h.least_squares_mean is not None:
            line += f"  | least squares {h.least_squares_mean:.3e}"
        print(line)
        print(f"  per step: {' '.join(f'{e:.2e}' for e in h.per_step)}")
    if r.linear.skipped is not None:
        print(f"least-squares baseline skipped: {r.linear.skipped}")
    print(f"wrote {o.out / 'report.json'}, {o.out / 'checkpoint.pt'} and the worst samples' plots")
    return 0


def predict(argv: list[str] | None) -> int:
    """``predict RUN INPUT``: the run's prediction on the inputs of a file, written to a file of the same format."""
    from training import load
    from training.budget import Budget

    from .apply import grid_of, predict_file, predict_time_file, recorded_time

    p = cli.Parser(prog=f"{COMMAND} predict", description="apply a trained run to a file of inputs")
    p.add_argument("run", type=Path, help="the run directory (train's --out)")
    p.add_argument("input", type=Path, help="the inputs (a file, in any format train reads)")
    p.add_argument("-o", "--output", type=cli.output_file, help="the file to write (default: INPUT-predicted.SUFFIX)")
    p.add_argument("--input-key", help="the inputs' key (default: x, a, coeff, input or inputs)")
    p.add_argument("--output-key", help="the outputs' key (default: paired with the input's: x -> y, a -> u, ...)")
    p.add_argument("--channel-axis", choices=("last", "first"), default="last", help="where a channel axis sits")
    p.add_argument("--at", help="evaluate on this grid instead: LO:HI:COUNT per axis (x,y), e.g. 0:1:101")
    p.add_argument(
        "--horizon",
        type=cli.bounded(1, MAX_STATES),
        metavar="H",
        help="a run on trajectories: the steps to roll out from each input trajectory's last states (default: the "
        "run's horizon)",
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--memory", type=cli.gib, default=8.0, metavar="GIB", help="the memory the prediction may take")
    a = p.parse_args(argv)
    source: Path = a.input
    target = a.output or Path(f"{source.stem}-predicted{source.suffix}")
    model = load(a.run, device=a.device)
    from models.operator import OperatorModel

    if not isinstance(model, OperatorModel):
        raise UserError(
            f"{a.run}: a run of another task ({type(model).__name__}); give an operator run (train's --out)"
        )
    at = None if a.at is None else grid_of(a.at, model.dims)
    time = recorded_time(a.run)
    budget = Budget.memory(a.memory)
    keys = {"input_key": a.input_key, "output_key_name": a.output_key, "channels": a.channel_axis}
    if time is not None:
        written = predict_time_file(model, time, source, target, **keys, horizon=a.horizon, at=at, budget=budget)
    elif a.horizon is not None:
        raise UserError(f"--horizon: {a.run} was trained without a time axis; drop --horizon")
    else:
        written = predict_file(model, source, target, **keys, at=at, budget=budget)
    for note in written.notes:
        print(f"note: {note}")
    print(f"wrote {written.path}: key {written.key!r}, shape {written.shape}")
    return 0


def inspect(argv: list[str] | None) -> int:
    """``inspect FILE``: the file's arrays and the evidence for each layout per axis."""
    p = cli.Parser(prog=f"{COMMAND} inspect", description="what a data file says about its grid")
    p.add_argument("file", type=Path, help="a data file (.pt, .npz, .npy, .mat, .h5)")
    a = p.parse_args(argv)
    print("\n".join(inspection.report(a.file)))
    return 0


COMMANDS: dict[str, Callable[[list[str]], int]] = {"train": train, "predict": predict, "inspect": inspect}
USAGE = f"""usage: {COMMAND} {{train,predict,inspect}} ...

  train    train the Funcformer on input and output functions in files, on any grid
  predict  apply a trained run to a file of inputs; writes the outputs in the same format
  inspect  what a data file says about its grid: arrays, ends against zero, stored coordinates

{COMMAND} COMMAND --help lists a command's options."""


def main(argv: list[str] | None = None) -> int:
    """The console script: the subcommand named first; a user error is one line on stderr (exit 2)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"{COMMAND}: error: no command {name!r}; the commands are train, predict and inspect", file=sys.stderr)
        return 2
    if name == "train":
        code = run_cli(f"{COMMAND} train", lambda: train(rest, command=argv is None))
        if argv is None and timed_command(rest):
            leave(code)  # the deadline counts to the process's end: no seconds of teardown after it
        return code
    return run_cli(f"{COMMAND} {name}", lambda: COMMANDS[name](rest))
