"""Which samples each training step reads, on each of several processes, and the loader that reads them.

**The batches.** Step ``s`` of a run takes the global batch of ``B`` positions ``s B .. s B + B - 1`` of an endless
sequence: the stream's ``n`` positions in a seeded random order, epoch after epoch (each epoch its own order,
:func:`permutation`). So a batch is a function of the seed and the step alone (:func:`global_batch`): a run
resumed at step ``s`` reads what it would have read, and its sampler's state is ``(seed, step)``. Every sample is
read once per epoch.

**Several processes.** Under ``torchrun`` every rank computes the same global batch and reads only its slice
(:class:`GlobalBatches`: rank ``r`` of ``W`` takes positions ``r B/W .. (r+1) B/W - 1`` of it), the convention of
:mod:`training.distributed`: the gradients DDP averages are the whole batch's, so ``W`` processes take the steps one
process takes with ``B``, and a checkpoint resumes under any number of processes.

**The loader.** :func:`loader` wraps a :class:`~.pairs.PairStream` and a batch sampler in a
:class:`~torch.utils.data.DataLoader` (a batch read at once, worker processes that persist, pinned memory for a
CUDA device). What it holds resident is the batches in flight, :func:`in_flight`, which the memory budget bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import count
from typing import Any, cast

import numpy as np
from torch.utils.data import DataLoader, Sampler

from applicative import DataError

from .pairs import PairStream, batch
from .rows import mib


def permutation(seed: int, epoch: int, n: int) -> np.ndarray:
    """Epoch ``epoch``'s order of ``n`` positions for ``seed`` (numpy's generator seeded by ``(seed, epoch)``)."""
    return np.random.default_rng([seed, epoch]).permutation(n)


class Orders:
    """:func:`permutation` for one seed and size, the last two epochs' kept (a batch spans at most two)."""

    def __init__(self, seed: int, n: int) -> None:
        self.seed, self.n = seed, n
        self._kept: dict[int, np.ndarray] = {}

    def __call__(self, epoch: int) -> np.ndarray:
        if epoch not in self._kept:
            self._kept = {e: p for e, p in self._kept.items() if e == epoch - 1}
            self._kept[epoch] = permutation(self.seed, epoch, self.n)
        return self._kept[epoch]


def global_batch(orders: Orders, step: int, size: int) -> np.ndarray:
    """Positions ``step · size .. (step + 1) · size - 1`` of the endless sequence of epochs' orders: ``(size,)``."""
    n, start = orders.n, step * size
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        epoch, offset = divmod(start + done, n)
        take = min(size - done, n - offset)
        out[done : done + take] = orders(epoch)[offset : offset + take]
        done += take
    return out


class GlobalBatches(Sampler[list[int]]):
    """This rank's slice of each step's global batch, from step ``start`` (to ``stop``, or without end).

    Args:
        n: positions in the stream.
        size: the global batch ``B`` (divisible by ``world``).
        seed: the order's seed.
        rank, world: this process's rank of ``world``.
    """

    def __init__(
        self, n: int, size: int, seed: int, *, rank: int = 0, world: int = 1, start: int = 0, stop: int | None = None
    ) -> None:
        if n < 1 or size < 1 or size % world or not 0 <= rank < world:
            raise ValueError(f"GlobalBatches: n={n}, size={size}, rank {rank} of {world}: need n >= 1, world | size")
        super().__init__()
        self.orders, self.size, self.rank, self.world = Orders(seed, n), size, rank, world
        self.start, self.stop = start, stop

    def __iter__(self) -> Iterator[list[int]]:
        share = self.size // self.world
        steps = count(self.start) if self.stop is None else iter(range(self.start, self.stop))
        for step in steps:
            whole = global_batch(self.orders, step, self.size)
            yield whole[self.rank * share : (self.rank + 1) * share].tolist()

    def __len__(self) -> int:
        if self.stop is None:
            raise TypeError("GlobalBatches without a stop has no length")
        return max(0, self.stop - self.start)


class Sequential(Sampler[list[int]]):
    """The positions ``0 .. n - 1`` in order, ``size`` at a time; this rank's batches only (``rank``, ``rank +
    world``, ...) -- for a pass over a stream (statistics, evaluation)."""

    def __init__(self, n: int, size: int, *, rank: int = 0, world: int = 1) -> None:
        super().__init__()
        self.n, self.size, self.rank, self.world = n, size, rank, world

    def __iter__(self) -> Iterator[list[int]]:
        for start in range(self.rank * self.size, self.n, self.size * self.world):
            yield list(range(start, min(start + self.size, self.n)))

    def __len__(self) -> int:
        batches = -(-self.n // self.size)
        return max(0, -(-(batches - self.rank) // self.world))


def in_flight(stream: PairStream, rows: int, workers: int, prefetch: int, pinned: bool) -> int:
    """Bytes a loader holds resident: ``workers · prefetch`` batches of ``rows`` pairs being read ahead (one when
    reading in this process), the one in use, a pinned copy, and each process's readers (arrays held whole, chunk
    caches)."""
    ahead = workers * prefetch if workers else 1
    batches = ahead + 1 + int(pinned)
    return batches * rows * stream.sample_bytes + max(1, workers + 1) * stream.resident


def loader(
    stream: PairStream,
    sampler: Sampler[list[int]],
    rows: int,
    *,
    memory: int,
    workers: int = 2,
    prefetch: int = 2,
    pin_memory: bool = False,
) -> DataLoader[tuple]:  # type: ignore[type-arg]
    """A :class:`~torch.utils.data.DataLoader` of ``stream``'s batches as ``sampler`` draws them (``rows`` pairs
    each at most), read by ``workers`` processes that persist across epochs, ``prefetch`` batches ahead each;
    ``pin_memory`` for a CUDA device. Fewer workers or less read-ahead are used when the batches in flight
    (:func:`in_flight`) would pass ``memory``; a :class:`DataError` when even one batch read in this process does.
    """
    while workers and in_flight(stream, rows, workers, prefetch, pin_memory) > memory:
        if prefetch > 1:
            prefetch -= 1
        else:
            workers -= 1
    need = in_flight(stream, rows, workers, prefetch, pin_memory)
    if need > memory:
        raise DataError(
            f"{stream.where}: a batch of {rows} samples ({mib(rows * stream.sample_bytes)}) with the readers' "
            f"{mib(stream.resident)} needs {mib(need)} in flight, over the memory budget of {mib(memory)}; use a "
            "smaller batch or raise the memory budget"
        )
    stream.release()  # each worker opens the files itself
    return DataLoader(
        stream,
        batch_sampler=sampler,
        num_workers=workers,
        collate_fn=cast("Callable[[list[Any]], Any]", batch),  # the batch as __getitems__ read it
        pin_memory=pin_memory,
        persistent_workers=workers > 0,
        prefetch_factor=prefetch if workers else None,
    )
