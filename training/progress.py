"""How a training run shows its progress: a tqdm bar on a terminal, plain periodic lines on a file or a pipe.

:func:`progress_bar` picks the display; :func:`training.fit` asks it only what :class:`Bar` says (``update``,
``set_postfix``, ``close``). tqdm is imported when a bar is made, not with the library.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from typing import Any, Protocol


class Bar(Protocol):
    """What the loop asks of a progress display (tqdm's bar, or :class:`Lines`)."""

    def update(self, n: int = 1) -> object: ...
    def set_postfix(self, ordered_dict: Mapping[str, object], refresh: bool = True) -> None: ...
    def close(self) -> None: ...


class Lines:
    """Progress as plain periodic lines, for a stderr that is a file or a pipe (no carriage returns).

    A line at the start, then every ``every`` steps (default: each 5% of the run) and at the end:
    ``train: step 500/8000 (6%), 31 s, ETA 7.8 min, held_out_rel_l2=5.1e-03``; counting seconds (``unit="s"``, a
    run to a deadline), ``train: 60/1200 s (5%), ...``.
    """

    def __init__(
        self, total: int, initial: int, threads: str, stream: Any = None, every: int | None = None, unit: str = "step"
    ) -> None:
        self.total, self.n, self.stream = total, initial, stream if stream is not None else sys.stderr
        self.every = every or max(1, total // 20)
        self.unit = unit
        self.postfix: Mapping[str, object] = {}
        self.start, self.first = time.perf_counter(), initial
        print(f"train: {self.count()} on {threads}", file=self.stream, flush=True)

    def count(self) -> str:
        return f"step {self.n}/{self.total}" if self.unit == "step" else f"{self.n}/{self.total} {self.unit}"

    def update(self, n: int = 1) -> None:
        self.n += n
        if n > 0 and (self.n // self.every > (self.n - n) // self.every or self.n == self.total):
            self.line()

    def set_postfix(self, ordered_dict: Mapping[str, object], refresh: bool = True) -> None:
        self.postfix = dict(ordered_dict)

    def line(self) -> None:
        spent = time.perf_counter() - self.start
        done = self.n - self.first
        eta = spent / done * (self.total - self.n) if done > 0 else math.nan
        metrics = "".join(f", {k}={v}" for k, v in self.postfix.items())
        print(
            f"train: {self.count()} ({100 * self.n // max(self.total, 1)}%), {_duration(spent)}, "
            f"ETA {_duration(eta)}{metrics}",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        pass


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def progress_bar(total: int, initial: int, show: bool, threads: str, stream: Any = None, unit: str = "step") -> Bar:
    """A tqdm bar on a terminal, :class:`Lines` on a file or pipe, nothing when ``show`` is false; counting
    ``unit`` (``"step"``, or ``"s"``: seconds of a run to a deadline)."""
    from tqdm import tqdm  # a feature of the loop, not of the library

    stream = stream if stream is not None else sys.stderr
    if show and not (hasattr(stream, "isatty") and stream.isatty()):
        return Lines(total, initial, threads, stream, unit=unit)
    bar: Bar = tqdm(
        total=total,
        initial=initial,
        disable=not show,
        desc=f"train [{threads.split(' (')[0]}]",
        dynamic_ncols=True,
        file=stream,
        unit="it" if unit == "step" else unit,
    )
    return bar
