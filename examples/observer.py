"""An RNN whose state is a function: estimating a temperature profile from two point sensors.

The heat equation on ``[-1, 1]`` evolves an unknown profile ``u_t``, stirred by random sources; two sensors read it
with noise. The task is to know the *whole* profile at every step from the readings so far -- a state observer,
``h_t = σ(W h_{t-1} + U y_t + b)`` with ``h_t ∈ Chebyshev(n)`` (:mod:`training.tasks.observer`: the maths, and the
reference, the posterior mean that a Kalman filter computes). Prints the median relative L² error per time step
of the observer, the posterior mean and zero; ``--out DIR`` writes ``DIR/report.json`` and a resumable
``DIR/checkpoint.pt``.

    python -m examples.observer              # about a minute on one core
    python -m examples.observer --preset tiny
    python -m examples.observer --activation tanh --out runs/observer
"""

from __future__ import annotations

import sys

from training import options, run_cli
from training.tasks.observer import PRESETS, Config
from training.tasks.observer.config import HELD_OUT
from training.tasks.observer.program import execute

PROG = "python -m examples.observer"


def run(argv: list[str] | None) -> int:
    p = options.program(PROG, __doc__.split("\n")[0], PRESETS, out_help="write report.json and checkpoint.pt here")
    p.add_argument(
        "--activation", choices=["identity", "tanh"], default=None, help="shorthand for --config activation="
    )
    config, a = options.config_of(p, argv, Config)
    errs = execute(config, options.Shared.of(a, PROG))["held_out_median_relative_l2"]
    print(f"median relative L2 error of the estimated profile u_t, held out ({HELD_OUT} trajectories):")
    print(f"{'t':>3} {'RNN (Chebyshev state)':>22} {'posterior mean':>15} {'zero':>8}")
    for t in range(config.steps_in_time):
        print(f"{t + 1:>3} {errs['rnn'][t]:>22.2e} {errs['posterior_mean'][t]:>15.2e} {errs['zero'][t]:>8.2f}")
    if a.out is not None:
        print(f"wrote {a.out / 'report.json'}, {a.out / 'checkpoint.pt'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the demo; a user error is one line on stderr (exit 2)."""
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
