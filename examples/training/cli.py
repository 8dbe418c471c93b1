"""The command-line boundary every example shares: user errors in one line, interruptions as exit codes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from .distributed import teardown
from .errors import UserError
from .loop import Interrupted


class Parser(argparse.ArgumentParser):
    """An argument parser whose complaints are :class:`UserError` s: one line, exit status 2, like every other."""

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def run_cli(prog: str, job: Callable[[], object]) -> int:
    """Run ``job``: 0 on success, 2 with one line on stderr for a :class:`UserError`, 128 + signal when interrupted."""
    try:
        job()
    except UserError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"\n{e}; rerun the same command to resume", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:  # outside a training loop (data, evaluation): the checkpoints on disk are whole
        print("\ninterrupted outside training; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        teardown()
    return 0
