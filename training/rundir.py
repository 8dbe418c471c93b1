"""The run directory: checked before anything is written, locked against a second run, owned by one program.

A run directory is taken in three moves. First every check that needs no write: ``out`` is a directory (or can be
created), writable, and either empty or a run of this very program -- its ``.program`` names it, read as a small
regular file only (a link, a FIFO or a large file there is refused, and its contents never printed). Then the
lock (an ``flock`` on ``out/.lock``, released by the kernel if the process dies) and the claim (``.program``
written by the first run). And if the run is then refused by a later check -- its resume, its data -- before it
wrote a file, leaving the block undoes the claim, the lock file and a directory it created: a refused run leaves
the directory as it found it.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import IO

from .errors import UserError

#: the file naming the program a run directory belongs to (written by the first run into it)
OWNER = ".program"
LOCK = ".lock"
#: the most a ``.program`` file may hold: a program's name is one short line
OWNER_BYTES = 512


class RunDirError(UserError):
    """The run directory cannot be used: not writable, another run holds it, or it belongs to another program."""


class RunDir:
    """``with RunDir(out, program):`` -- ``out`` exists, is writable, belongs to ``program``, and no other process
    trains into it meanwhile.

    ``program`` (``"python -m examples.poisson"``) is recorded in ``out/.program`` by the first run; a later run of
    another program, and a run into a non-empty directory that is no program's run (a user's folder), are refused in
    one line before anything is written -- its report or checkpoints would overwrite the files there. A block that
    raises before writing a file into ``out`` leaves ``out`` as it was (its claim undone). ``program=None`` records
    and checks nothing of the owner.
    """

    def __init__(self, out: Path, program: str | None = None) -> None:
        self.out, self.program = out, program
        self._lock: IO[str] | None = None
        self._made: list[Path] = []  # what entering wrote: undone if the block fails before writing anything
        self._before: dict[str, tuple[int, int]] = {}

    def __enter__(self) -> RunDir:
        self._check()  # nothing written yet
        created = _missing_parents(self.out)
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            had_lock = (self.out / LOCK).exists()
            lock = open(self.out / LOCK, "a+")  # held until __exit__
        except OSError as e:
            _remove(created)
            raise RunDirError(f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory") from None
        self._made = [*([] if had_lock else [self.out / LOCK]), *created]
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read(80).strip() or "another process"
            lock.close()
            raise RunDirError(
                f"another run ({holder}) is training into {self.out}; wait for it to finish or pass another --out"
            ) from None
        self._lock = lock
        try:
            self._check()  # again, under the lock: another program may have claimed it meanwhile
            self._probe()
            self._claim()
        except BaseException:
            self._release(undo=True)
            raise
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        self._before = _listing(self.out)
        return self

    def _check(self) -> None:
        """Everything that can be checked without writing: a directory we may write, empty or this program's run."""
        if not self.out.exists():
            _check_creatable(self.out)
            return
        if not self.out.is_dir():
            raise RunDirError(f"cannot write to --out {self.out}: it is a file, not a directory; choose a directory")
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise RunDirError(f"cannot write to --out {self.out}: Permission denied; choose a writable directory")
        if self.program is None:
            return
        holder = read_owner(self.out)
        if holder is not None and holder != self.program:
            raise RunDirError(
                f"--out {self.out} holds a run of {holder}; {self.program} would overwrite its files: "
                "pass another --out"
            )
        if holder is None and _listing(self.out):
            shown = ", ".join(sorted(_listing(self.out))[:3])
            raise RunDirError(
                f"--out {self.out} holds files ({shown}{', ...' if len(_listing(self.out)) > 3 else ''}) and is no run "
                f"of {self.program}; {self.program} would overwrite them: pass a new or empty directory as --out"
            )

    def _probe(self) -> None:
        probe = self.out / f".write-test.{os.getpid()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise RunDirError(f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory") from None

    def _claim(self) -> None:
        """Record ``program`` as the directory's owner (under the lock; :meth:`_check` said it is ours or empty)."""
        if self.program is None or read_owner(self.out) is not None:
            return
        owner = self.out / OWNER
        try:
            owner.write_text(self.program + "\n")
        except OSError as e:
            raise RunDirError(f"cannot write to --out {self.out}: {e.strerror}; choose a writable directory") from None
        self._made.insert(0, owner)

    def _release(self, undo: bool) -> None:
        if self._lock is not None:
            if undo:
                _remove(self._made)
            self._lock.close()
            self._lock = None

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        # a block refused before it wrote a file (its resume, its data) leaves no trace of this run
        self._release(undo=kind is not None and _listing(self.out) == self._before)


def read_owner(out: Path) -> str | None:
    """The program ``out/.program`` names, or ``None`` if there is none; a :class:`RunDirError` if it is not a small
    regular file holding one line of text (a link, a FIFO, a device, a large or binary file): never read further."""
    path = out / OWNER
    bad = (
        f"--out {out} has a {OWNER} that is not a run's record (one short line of text in a regular file); "
        "pass another --out"
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:  # a symbolic link (ELOOP), unreadable, ...
        raise RunDirError(bad) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > OWNER_BYTES:
            raise RunDirError(bad)
        data = os.read(fd, OWNER_BYTES + 1)
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise RunDirError(bad) from None
    if not text or not text.isprintable():
        raise RunDirError(bad)
    return text


def _listing(out: Path) -> dict[str, tuple[int, int]]:
    """The directory's entries (its own files aside) by name, with each one's size and modification time."""
    try:
        entries = list(os.scandir(out))
    except OSError:
        return {}
    found = {}
    for e in entries:
        if e.name in (OWNER, LOCK) or e.name.startswith(".write-test."):
            continue
        try:
            info = e.stat(follow_symlinks=False)
        except OSError:
            continue
        found[e.name] = (info.st_size, info.st_mtime_ns)
    return found


def _missing_parents(out: Path) -> list[Path]:
    """``out`` and its ancestors that do not exist yet, deepest first (what ``mkdir(parents=True)`` would make)."""
    missing, p = [], out.absolute()
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing


def _check_creatable(out: Path) -> None:
    existing = out.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirError(f"cannot write to --out {out}: {existing} is a file, not a directory; choose another path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunDirError(f"cannot write to --out {out}: Permission denied; choose a writable directory")


def _remove(paths: list[Path]) -> None:
    """Remove files, then (empty) directories, in order, as far as they go."""
    for p in paths:
        try:
            if p.is_dir() and not p.is_symlink():
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            return
