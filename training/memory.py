"""The measured peak of live tensor bytes in a block of code: what :mod:`training.budget` estimates.

:class:`PeakBytes` is a ``TorchDispatchMode``: every tensor an operation returns inside the mode is counted
once per storage while any tensor on that storage lives (a view of a tensor made before the mode adds nothing),
and :attr:`PeakBytes.peak` is the most bytes alive at once. Exact, device-independent, and slow: for
benchmarks and tests, not for training runs.

    with PeakBytes() as m:
        loss = model(x).sum()
    m.peak   # bytes
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class PeakBytes(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Tracks the bytes of storages created inside the mode that are alive at once: :attr:`now`, :attr:`peak`."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.live: dict[int, list[int]] = {}  # data_ptr -> [nbytes, live tensor count]
        self.now = self.peak = 0

    def _release(self, ptr: int) -> None:
        entry = self.live[ptr]
        entry[1] -= 1
        if entry[1] == 0:
            self.now -= entry[0]
            del self.live[ptr]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        flat = [*args, *(kwargs or {}).values()]
        inputs = {t.untyped_storage().data_ptr() for t in flat if isinstance(t, torch.Tensor)}
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in self.live and ptr in inputs:  # a view of a tensor made before the mode: no new bytes
                    continue
                if ptr not in self.live:
                    self.live[ptr] = [t.untyped_storage().nbytes(), 0]
                    self.now += self.live[ptr][0]
                    self.peak = max(self.peak, self.now)
                self.live[ptr][1] += 1
                weakref.finalize(t, self._release, ptr)
        return out
