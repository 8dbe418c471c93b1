"""Resident memory of this process and of its worker processes, as Linux reports it (``/proc``, ``getrusage``).

A data loader's workers are processes of their own: a budget on resident memory is kept, or not, by all of them at
once. :func:`peak` reads a process's high-water mark (``VmHWM``), :func:`children` this process's live children
(the workers of a loader that persists), :func:`finished_children_peak` the largest high-water mark of those that
have ended (a pass's workers). A forked worker's pages shared with its parent count in both: the sum is an upper
bound. Where ``/proc`` is missing (not Linux) the figures are ``0``.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path


def peak(pid: int | str = "self") -> int:
    """A process's peak resident memory (``VmHWM``), bytes; ``0`` where ``/proc`` does not say."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def children() -> list[int]:
    """The process ids of this process's live children."""
    me, out = str(os.getpid()), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            out.append(int(stat.parent.name))
    return out


def finished_children_peak() -> int:
    """The largest peak resident memory among this process's ended (and waited for) children, bytes."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
