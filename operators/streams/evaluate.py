"""A metric per sample over a whole :class:`~.pairs.PairStream`, a batch at a time: :class:`Evaluation`.

Evaluation reads the stream in order, ``rows`` pairs a batch (sized by the caller from the memory budget, like a
training batch), and hands each batch -- inputs and outputs in the file's dtype -- to a metric that returns one
value per sample (a model's relative L² error, say). Under several processes each rank takes every ``world``-th
batch from its ``rank``; the positions returned say where its values go in the whole.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from .batches import Sequential, loader
from .pairs import PairStream

#: a batch's inputs and outputs ``(b, *grid, C)`` (file dtypes, on the CPU) -> one value per sample ``(b,)``
Metric = Callable[[Tensor, Tensor], Tensor]


class Evaluation:
    """Passes over ``stream`` in order, ``rows`` pairs a batch, read by ``workers`` processes that persist from
    one pass to the next (within ``memory`` bytes in flight: :func:`~.batches.loader`)."""

    def __init__(
        self,
        stream: PairStream,
        rows: int,
        *,
        memory: int,
        workers: int = 0,
        pin_memory: bool = False,
        rank: int = 0,
        world: int = 1,
    ) -> None:
        self.stream = stream
        self.sampler = Sequential(len(stream), rows, rank=rank, world=world)
        self.batches = loader(stream, self.sampler, rows, memory=memory, workers=workers, pin_memory=pin_memory)

    def positions(self) -> np.ndarray:
        """The stream's positions this rank evaluates, in the order of the values a call returns."""
        return np.fromiter((i for b in self.sampler for i in b), dtype=np.int64)

    @torch.no_grad()
    def __call__(self, metric: Metric) -> Tensor:
        """``metric`` of each of this rank's samples, float64 on the CPU (``(len(positions()),)``)."""
        out = [metric(x, y).detach().to("cpu", torch.float64) for x, y in self.batches]
        return torch.cat(out) if out else torch.empty(0, dtype=torch.float64)


def per_sample(stream: PairStream, metric: Metric, rows: int, *, memory: int, workers: int = 0) -> Tensor:
    """``metric`` of every sample of ``stream`` in order, by one :class:`Evaluation` pass in this process."""
    return Evaluation(stream, rows, memory=memory, workers=workers)(metric)
