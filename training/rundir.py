"""The run directory: created and tested for writing before any work, and locked against a second run."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from .errors import UserError


class RunDirError(UserError):
    """The run directory cannot be used: not writable, or another run holds it."""


class RunDir:
    """``with RunDir(out):`` -- ``out`` exists, is writable, and no other process trains into it meanwhile.

    The lock is an ``flock`` on ``out/.lock`` (released by the kernel if the process dies).
    """

    def __init__(self, out: Path) -> None:
        self.out = out
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

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None
