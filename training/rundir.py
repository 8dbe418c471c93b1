"""The run directory: created and writable before any work, locked against a second run, owned by one program."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from .errors import UserError

#: the file naming the program a run directory belongs to (written by the first run into it)
OWNER = ".program"


class RunDirError(UserError):
    """The run directory cannot be used: not writable, another run holds it, or it belongs to another program."""


class RunDir:
    """``with RunDir(out, program):`` -- ``out`` exists, is writable, belongs to ``program``, and no other process
    trains into it meanwhile.

    The lock is an ``flock`` on ``out/.lock`` (released by the kernel if the process dies). ``program`` (``"python
    -m examples.poisson"``) is recorded in ``out/.program`` by the first run; a later run of another program is
    refused in one line naming both, before it writes anything -- its report or checkpoints would overwrite the
    other's. ``program=None`` records and checks nothing.
    """

    def __init__(self, out: Path, program: str | None = None) -> None:
        self.out, self.program = out, program
        self._lock: IO[str] | None = None

    def __enter__(self) -> RunDir:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            lock = open(self.out / ".lock", "a+")  # held until __exit__
        except OSError as e:
            raise RunDirError(f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            lock.close()
            raise RunDirError(
                f"another run ({holder}) is training into {self.out}; wait for it to finish or pass another --out"
            ) from None
        try:
            self._claim()
        except RunDirError:
            lock.close()
            raise
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        probe = self.out / f".write-test.{os.getpid()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            lock.close()
            raise RunDirError(f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory") from None
        self._lock = lock
        return self

    def _claim(self) -> None:
        """Record ``program`` as the directory's owner, or refuse if another program owns it (under the lock)."""
        if self.program is None:
            return
        owner = self.out / OWNER
        try:
            holder = owner.read_text().strip() if owner.exists() else None
        except (OSError, UnicodeDecodeError):
            holder = "an unreadable owner"
        if holder is not None and holder != self.program:
            raise RunDirError(
                f"--out {self.out} holds a run of {holder[:80]}; {self.program} would overwrite its files: "
                "pass another --out"
            )
        if holder is None:
            try:
                owner.write_text(self.program + "\n")
            except OSError as e:
                raise RunDirError(
                    f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory"
                ) from None

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None
