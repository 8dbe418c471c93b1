"""``python -m examples.operator``: the installed ``applicative-transformers train`` under its old name.

The command and its options: :mod:`training.tasks.operator.command` (``applicative-transformers train --help``).
"""

from __future__ import annotations

import sys

from training import run_cli
from training.deadline import leave, timed_command
from training.tasks.operator.command import train

PROG = "python -m examples.operator"


def main(argv: list[str] | None = None) -> int:
    """Run ``train``; a user error is one line on stderr (exit 2), an interruption exit 130 / 143."""
    return run_cli(PROG, lambda: train(argv, PROG, command=argv is None))


if __name__ == "__main__":
    code = main()
    if timed_command(sys.argv[1:]):
        leave(code)  # the deadline counts to the process's end: no seconds of teardown after it
    sys.exit(code)
