"""SIGINT and SIGTERM during a run: finish the step, write a checkpoint, stop with :class:`Interrupted`.

:func:`caught` installs handlers that only record the signal (signals are handled in the main thread only;
elsewhere nothing is installed); :func:`training.fit` reads the record between steps, and the previous handlers
are restored when the block ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

_Handler = Callable[[int, FrameType | None], Any] | int | None


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run after a step; a checkpoint was written (if there is an ``out``)."""

    def __init__(self, signum: int, step: int, path: Path | None) -> None:
        where = f"checkpoint written to {path}" if path is not None else "no checkpoint (no --out)"
        super().__init__(f"{signal.Signals(signum).name} at step {step}; {where}")
        self.signum, self.step, self.path = signum, step, path


@contextmanager
def caught() -> Iterator[list[int]]:
    """The signals (SIGINT, SIGTERM) received while the block runs, in order, instead of their usual effect."""
    received: list[int] = []
    previous: dict[signal.Signals, _Handler] = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            previous[s] = signal.signal(s, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
