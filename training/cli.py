"""The command-line boundary every example shares: user errors in one line, interruptions as exit codes.

:class:`Parser` turns argparse's complaints into one line; the option types below check the options
every program shares before any work (``type=threads`` and so on): their errors read
``argument --threads: ...``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import torch

from .deadline import leave
from .distributed import teardown
from .errors import UserError
from .signals import Interrupted

#: the generators' seed range (``torch.Generator.manual_seed``, numpy's ``default_rng``)
SEED_MAX = 2**63 - 1


class Parser(argparse.ArgumentParser):
    """An argument parser whose complaints are :class:`UserError` s: one line, exit status 2, like every other.

    A value that starts with a minus and a digit (``--extent -1:1``, ``--shift -0.5``) is a value, not an option:
    argparse alone takes only plain negative numbers so (``-1``), and refuses ``-1:1`` as an unknown option.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        raise UserError(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        """``; did you mean --width?`` for a misspelt option (``see --help`` when nothing is close)."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return ""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for word in message[len(prefix) :].split():
            if word.startswith("-"):
                close = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.7)
                if close:
                    return f"; did you mean {close[0]}?"
        return "; see --help for the options"


def integer(text: str, least: int, most: int, why: str = "") -> int:
    """``text`` as an integer in ``least..most`` (an ``ArgumentTypeError`` saying what is allowed)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not least <= n <= most:
        raise argparse.ArgumentTypeError(f"{n} is out of range: must be in {least}..{most}{why}")
    return n


def bounded(least: int, most: int, why: str = "") -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``least..most`` (``why``: what the upper bound protects)."""

    def parse(text: str) -> int:
        return integer(text, least, most, why)

    return parse


def checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse ``type``: the text unchanged if ``check(text)`` accepts it; its ``ValueError`` (a
    :class:`UserError` too) becomes the option's one-line error (``argument --layout: ...``)."""

    def parse(text: str) -> str:
        try:
            check(text)
        except (ValueError, UserError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text

    return parse


def threads(text: str) -> int:
    """``--threads``: torch's CPU threads, at least 1."""
    return integer(text, 1, 4096, " (torch CPU threads)")


def seed(text: str) -> int:
    """``--seed``: within the generators' range ``0..2**63-1``."""
    return integer(text, 0, SEED_MAX, " (the random generators' range)")


def learning_rate(text: str) -> float:
    """``--lr``: a finite learning rate in ``(0, 10]``."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < x <= 10:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{x} is out of range: a learning rate must be in (0, 10]")
    return x


def gib(text: str) -> float:
    """``--memory``: GiB of memory a run may take, a finite number in ``(0, 1048576]``."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GiB") from None
    if not 0 < x <= 2**20:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{x} is out of range: must be in (0, 1048576] GiB")
    return x


def out_dir(text: str) -> Path:
    """``--out``: a run directory of its own -- not empty, not the current directory, the repository or ``/``."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; name a run directory, e.g. --out runs/mine")
    path = Path(text)
    resolved = path.resolve()
    repository = Path(__file__).resolve().parents[1]
    if resolved in (Path.cwd().resolve(), repository, Path(resolved.anchor), Path.home().resolve()):
        raise argparse.ArgumentTypeError(
            f"{text!r} is {_which(resolved, repository)}: a run writes several files and a lock there; "
            "name a directory of its own, e.g. --out runs/mine"
        )
    return path


def _which(resolved: Path, repository: Path) -> str:
    if resolved == Path.cwd().resolve():
        return "the current directory"
    if resolved == repository:
        return "the repository's root"
    return "the home directory" if resolved == Path.home().resolve() else "the filesystem's root"


def writable_dir(text: str) -> Path:
    """A directory to write into (``--cache``): an existing writable directory, or one that can be created."""
    path = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; name a directory")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory; name a directory")
    _check_creatable(path, text)
    return path


def output_file(text: str) -> Path:
    """A file to write (``--json``): not a directory, in a directory that exists or can be created, writable."""
    path = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError("empty; name a file, e.g. runs/report.json")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; name a file in it, e.g. {path / 'report.json'}")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text} is not writable; name another file")
    _check_creatable(path.parent, text)
    return path


def _check_creatable(path: Path, text: str) -> None:
    """``path`` (a directory) is writable, or its nearest existing ancestor is a writable directory."""
    existing = path.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {existing} is a file, not a directory; choose another path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {existing} is not writable; choose a writable directory")


def run_cli(prog: str, job: Callable[[], object]) -> int:
    """Run ``job``: 0 on success, 2 with one line on stderr for a :class:`UserError`, 128 + signal when interrupted.

    Running out of memory or disk is one line too (exit status 2): what ran out, and what to change. A rank of
    ``torchrun`` then ends its process at once with that status (:func:`~training.deadline.leave`), once it has left
    its process group: see :func:`~training.distributed.teardown` for why it may not wait for the interpreter's
    own teardown.
    """
    try:
        code = _outcome(prog, job)
    finally:
        ranked = teardown()
    if ranked:
        leave(code)
    return code


def _outcome(prog: str, job: Callable[[], object]) -> int:
    """``job``'s exit status, its user errors and interruptions reported in one line (:func:`run_cli`)."""
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
    except (MemoryError, torch.OutOfMemoryError) as e:
        print(
            f"{prog}: error: out of memory ({_first(e)}); use smaller sizes (--config, --batch, ...)", file=sys.stderr
        )
        return 2
    except RuntimeError as e:
        if "can't allocate memory" not in str(e) and "out of memory" not in str(e):
            raise
        print(
            f"{prog}: error: out of memory ({_first(e)}); use smaller sizes (--config, --batch, ...)", file=sys.stderr
        )
        return 2
    except OSError as e:  # writing a report or a figure: a full disk, a directory removed meanwhile
        where = f": {e.filename}" if e.filename else ""
        print(f"{prog}: error: {e.strerror or _first(e)}{where}; check the path and the free space", file=sys.stderr)
        return 2
    return 0


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:160]
