r"""One pass over a :class:`~.pairs.PairStream`: its normalisation statistics and the checks of its values.

:func:`summarise` reads the stream a block at a time (blocks sized from the memory budget, aligned with the file's
chunks) and reduces each block to a :class:`Summary`; summaries merge exactly, so blocks may be reduced by worker
processes, or ranks, in any grouping, and the merged result is the same whatever the block size (to rounding).
In float64:

* **moments per channel** (:class:`Moments`) of the inputs (after ``log`` where the model reads it, or any
  ``transform``) and of the outputs: the count ``n``, the mean ``μ`` and ``M₂ = Σ (v - μ)²``, a block's by two
  passes over it and two merged by Chan, Golub and LeVeque's rule (below),
  whence the standard deviation ``√(M₂ / (n - 1))`` and the root mean square about any ``c``,
  ``√(M₂ / n + (μ - c)²)``;
* **the checks** of :func:`operators.dataset.check`, accumulated: non-finite values (how many, and the first
  sample), each sample's size ``max |v|`` (:class:`Peaks`: an output zero everywhere, sizes a float32 model cannot
  square), inputs ``<= 0`` where the model reads ``log`` (how many, and the smallest), and the ends of each axis
  against its layout (:func:`operators.layout.check_layout`), from the sums of squares that check reads
  (:class:`Ends`).

The rule that merges the moments of two parts ``a`` and ``b`` of the values:

.. math:: n = n_a + n_b, \quad \delta = \mu_b - \mu_a, \quad \mu = \mu_a + \delta\, n_b / n, \quad
   M_2 = M_{2,a} + M_{2,b} + \delta^2\, n_a n_b / n.

:meth:`Summary.check` raises the first problem as a :class:`~operators.files.DataError`, in
:func:`~operators.dataset.check`'s order, naming the file's sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from applicative import DataError
from operators.dataset import AXIS_NAMES, Samples, _check_scales
from operators.layout import NOISE_FACTOR, ZERO_TOLERANCE, Axis, LayoutError, check_layout

from .pairs import PairStream

#: what a pass may do to a block's float64 inputs and outputs ``(b, *grid, C)`` before their moments are taken
Transform = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
#: bytes a pass holds per value of a block besides the file's own: a float64 copy and a few like it
PASS_BYTES_PER_VALUE = 32


@dataclass(frozen=True)
class Moments:
    """Per-channel moments of values: their ``count``, ``mean`` and ``m2 = Σ (v - mean)²`` (float64, ``(C,)``)."""

    count: int
    mean: Tensor
    m2: Tensor

    @classmethod
    def of(cls, values: Tensor) -> Moments:
        """The moments of ``values`` ``(n, C)`` (float64), by two passes."""
        mean = values.mean(0) if len(values) else torch.zeros(values.shape[1], dtype=torch.float64)
        return cls(len(values), mean, (values - mean).pow(2).sum(0))

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent between processes as numbers: a tensor sent by a loader's worker would go through shared memory,
        whose bookkeeping grows the worker by megabytes a block."""
        return _moments, (self.count, self.mean.tolist(), self.m2.tolist())

    def __add__(self, other: Moments) -> Moments:
        """Both sets' moments (Chan, Golub and LeVeque)."""
        n = self.count + other.count
        if self.count == 0 or other.count == 0:
            return other if self.count == 0 else self
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        m2 = self.m2 + other.m2 + delta.pow(2) * (self.count * other.count / n)
        return Moments(n, mean, m2)

    @property
    def std(self) -> Tensor:
        """The standard deviation (``n - 1`` in the denominator, as :meth:`torch.Tensor.std`)."""
        return (self.m2 / max(self.count - 1, 1)).sqrt()

    def rms(self, about: Tensor | float = 0.0) -> Tensor:
        """The root mean square of ``v - about``: ``√(M₂ / n + (μ - about)²)``."""
        return (self.m2 / max(self.count, 1) + (self.mean - about).pow(2)).sqrt()


def _moments(count: int, mean: list[float], m2: list[float]) -> Moments:
    return Moments(count, torch.tensor(mean, dtype=torch.float64), torch.tensor(m2, dtype=torch.float64))


@dataclass(frozen=True)
class Ends:
    """What :func:`~operators.layout.check_layout` reads of values along one axis of ``points`` samples, as sums of
    squares: of all the values, of the first and the last slice across the axis, and of their difference (``edge``
    values in a slice); and of the third differences along the axis (``rough``, :func:`~operators.layout.roughness`).
    """

    points: int
    edge: int = 0
    total: float = 0.0
    first: float = 0.0
    last: float = 0.0
    difference: float = 0.0
    rough: float = 0.0

    @classmethod
    def of(cls, values: Tensor, dim: int) -> Ends:
        """The sums of ``values`` (float64) along ``dim``."""
        first, last = values.select(dim, 0), values.select(dim, values.shape[dim] - 1)
        return cls(
            values.shape[dim],
            first.numel(),
            float(values.pow(2).sum()),
            float(first.pow(2).sum()),
            float(last.pow(2).sum()),
            float((last - first).pow(2).sum()),
            float(torch.diff(values, n=3, dim=dim).pow(2).sum()) if values.shape[dim] >= 4 else 0.0,
        )

    def __add__(self, other: Ends) -> Ends:
        return Ends(
            self.points,
            self.edge + other.edge,
            self.total + other.total,
            self.first + other.first,
            self.last + other.last,
            self.difference + other.difference,
            self.rough + other.rough,
        )

    def zero_tolerance(self) -> float:
        """:func:`operators.layout.zero_tolerance` of the values these sums are of."""
        if self.points < 4 or self.total == 0 or self.edge == 0:
            return ZERO_TOLERANCE
        rms = math.sqrt(self.total / (self.edge * self.points))
        rough = math.sqrt(self.rough / (self.edge * (self.points - 3))) / math.sqrt(20) / rms
        return max(ZERO_TOLERANCE, NOISE_FACTOR * rough)

    def witness(self) -> np.ndarray:
        """Values ``(2, points)`` with the same root mean squares over all, the first and last columns and their
        difference, so that :func:`~operators.layout.check_layout` along axis 1 says of them what it would of the
        whole data: the first column ``a``, the last ``b = a + d`` with ``|a|² = 2F²``, ``|d|² = 2D²``,
        ``|a + d|² = 2L²``, and the middle columns equal, making up the total."""
        p, e = self.points, max(self.edge, 1)
        f2, l2, d2 = self.first / e, self.last / e, self.difference / e
        s2 = self.total / (e * p)
        out = np.zeros((2, p))
        a = math.sqrt(2 * f2)
        if a > 0:
            dx = (l2 - f2 - d2) / a  # a·d = L² - F² - D², with a along the first row
            dy = math.sqrt(max(2 * d2 - dx * dx, 0.0))
        else:
            dx, dy = math.sqrt(2 * l2), 0.0
        out[:, 0] = (a, 0.0)
        out[:, -1] = (a + dx, dy) if p > 1 else (a, 0.0)
        if p > 2:
            out[:, 1:-1] = math.sqrt(max(p * s2 - f2 - l2, 0.0) / (p - 2))
        return out


@dataclass(frozen=True)
class Count:
    """How many values (or samples) broke a check, the first sample where one did, and the most extreme value."""

    count: int = 0
    first: int | None = None
    extreme: float = math.inf

    def __add__(self, other: Count) -> Count:
        firsts = [f for f in (self.first, other.first) if f is not None]
        return Count(self.count + other.count, min(firsts) if firsts else None, min(self.extreme, other.extreme))


def _count(bad: Tensor, rows: np.ndarray, values: Tensor | None = None) -> Count:
    """Values ``bad`` (``(b, ...)`` booleans) as a :class:`Count` naming the file's sample ``rows[i]``."""
    per = bad.flatten(1).any(1)
    if not bool(per.any()):
        return Count()
    first = int(rows[int(per.nonzero()[0])])
    extreme = float(values[bad].min()) if values is not None else math.inf
    return Count(int(bad.sum()), first, extreme)


@dataclass(frozen=True)
class Peaks:
    """Each sample's size ``max |v|`` by its number in the file (``rows``), in pieces that merge by joining."""

    rows: tuple[np.ndarray, ...] = ()
    sizes: tuple[np.ndarray, ...] = ()

    @classmethod
    def of(cls, values: Tensor, rows: np.ndarray) -> Peaks:
        """The sizes of ``values`` ``(b, ...)``, the file's samples ``rows``."""
        flat = values.flatten(1)
        return cls((np.asarray(rows, dtype=np.int64),), (torch.maximum(flat.amax(1), -flat.amin(1)).numpy(),))

    def __add__(self, other: Peaks) -> Peaks:
        return Peaks(self.rows + other.rows, self.sizes + other.sizes)

    def by_row(self) -> Tensor:
        """The sizes by file sample, ``(last + 1,)``: ``1`` (a size any check accepts) for a sample not here."""
        if not self.rows or not sum(len(r) for r in self.rows):
            return torch.zeros(0, dtype=torch.float64)
        rows = np.concatenate(self.rows)
        out = torch.ones(int(rows.max()) + 1, dtype=torch.float64)
        out[torch.from_numpy(rows)] = torch.from_numpy(np.concatenate(self.sizes))
        return out


@dataclass(frozen=True)
class Summary:
    """A stream's statistics and checks (:func:`summarise`); ``+`` merges two disjoint parts' summaries."""

    samples: int
    inputs: Moments
    outputs: Moments
    nonfinite: tuple[Count, Count]
    nonpositive: Count
    peaks: tuple[Peaks, Peaks]
    ends: tuple[tuple[Ends, ...], tuple[Ends, ...]]

    def __add__(self, other: Summary) -> Summary:
        return Summary(
            self.samples + other.samples,
            self.inputs + other.inputs,
            self.outputs + other.outputs,
            (self.nonfinite[0] + other.nonfinite[0], self.nonfinite[1] + other.nonfinite[1]),
            self.nonpositive + other.nonpositive,
            (self.peaks[0] + other.peaks[0], self.peaks[1] + other.peaks[1]),
            (_sums(self.ends[0], other.ends[0]), _sums(self.ends[1], other.ends[1])),
        )

    def check(self, stream: PairStream, *, log_input: bool = False) -> None:
        """Raise :class:`~operators.files.DataError` for the first assumption the stream's values break, in the
        order and the words of :func:`operators.dataset.check`: non-finite values, the samples' sizes (no output
        sample zero everywhere; sizes a float32 model can square), inputs ``<= 0`` under ``log``, each axis's
        layout. A sample is named by its number in the file."""
        where, keys = stream.where, stream.keys
        for bad, key in zip(self.nonfinite, keys, strict=True):
            if bad.count:
                raise DataError(
                    f"{where}, key {key!r}: {bad.count} values are NaN or infinite (the first in sample {bad.first}); "
                    "remove those samples or fix them"
                )
        inputs, outputs = (p.by_row()[:, None, None] for p in self.peaks)  # one value a sample: its size
        _check_scales(Samples(inputs, outputs, (Axis(),), where), keys, log_input)
        if log_input and self.nonpositive.count:
            raise DataError(
                f"{where}, key {keys[0]!r}: {self.nonpositive.count} input values are <= 0 (the smallest "
                f"{self.nonpositive.extreme:g}, in sample {self.nonpositive.first}), but the model reads log inputs "
                "(log_input=true); set log_input=false for data that are not positive"
            )
        for i, axis in enumerate(stream.axes):
            name = AXIS_NAMES[i]
            try:
                tolerance = self.ends[1][i].zero_tolerance()
                check_layout(
                    self.ends[1][i].witness(), axis, 1, name, f"{where}, key {keys[1]!r}", zero_tolerance=tolerance
                )
                check_layout(self.ends[0][i].witness(), axis, 1, name, f"{where}, key {keys[0]!r}", ends=False)
            except LayoutError as e:
                raise DataError(str(e)) from None


def _sums(a: tuple[Ends, ...], b: tuple[Ends, ...]) -> tuple[Ends, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def block_summary(
    stream: PairStream, positions: np.ndarray, *, log_input: bool = False, transform: Transform | None = None
) -> Summary:
    """The :class:`Summary` of the pairs at ``positions`` of ``stream``."""
    x_raw, y_raw = stream.read(positions)
    rows = stream.rows(positions)
    x, y = x_raw.double(), y_raw.double()
    nonfinite = (_count(~torch.isfinite(x), rows), _count(~torch.isfinite(y), rows))
    nonpositive = _count(x <= 0, rows, x) if log_input else Count()
    peaks = (Peaks.of(x, rows), Peaks.of(y, rows))
    dims = range(len(stream.axes))
    ends = (tuple(Ends.of(x, 1 + i) for i in dims), tuple(Ends.of(y, 1 + i) for i in dims))
    if transform is not None:
        x, y = transform(x, y)
    elif log_input:
        x = x.log()
    return Summary(
        len(positions),
        Moments.of(x.reshape(-1, x.shape[-1])),
        Moments.of(y.reshape(-1, y.shape[-1])),
        nonfinite,
        nonpositive,
        peaks,
        ends,
    )


def block_rows(stream: PairStream, memory: int, workers: int = 0) -> int:
    """Pairs per block of a pass within ``memory`` (split among ``workers`` processes, each reducing one block): a
    multiple of the file's chunk (:attr:`~.rows.Rows.block`) where one fits."""
    values = math.prod(stream.input_shape) + math.prod(stream.output_shape)
    per = stream.sample_bytes + PASS_BYTES_PER_VALUE * values
    rows = max(1, (memory - (workers + 1) * stream.resident) // (max(workers, 1) * per))
    align = max(stream.inputs.block, stream.outputs.block)
    return int(rows - rows % align if rows >= align else rows)


class Blocks(Dataset[Summary]):
    """A stream cut into blocks of ``rows`` positions, each item its block's :class:`Summary`. Blocks start where
    the file's chunks do (positions of consecutive file rows), so each reads whole chunks."""

    def __init__(
        self, stream: PairStream, rows: int, *, log_input: bool = False, transform: Transform | None = None
    ) -> None:
        self.stream, self.log_input, self.transform = stream, log_input, transform
        n, align = len(stream), max(stream.inputs.block, stream.outputs.block)
        first = (-int(stream.indices[0])) % align if n and align > 1 and rows % align == 0 else 0
        self.starts = sorted({0, *range(first or rows, n, rows)})
        self.ends = [*self.starts[1:], n]

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, k: int) -> Summary:
        positions = np.arange(self.starts[k], self.ends[k])
        return block_summary(self.stream, positions, log_input=self.log_input, transform=self.transform)


def _same(s: Summary) -> Summary:
    return s


def summarise(
    stream: PairStream,
    *,
    memory: int,
    log_input: bool = False,
    transform: Transform | None = None,
    workers: int = 0,
    rank: int = 0,
    world: int = 1,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """One pass over ``stream``: its :class:`Summary`, within ``memory`` bytes resident, reduced by ``workers``
    processes (``0``: this one). With ``world > 1``, this rank's blocks only (every ``world``-th from ``rank``);
    the ranks' summaries add up to the whole's.

    ``transform`` (float64 inputs and outputs ``(b, *grid, C)`` -> the values whose moments are taken) replaces
    the default, which takes ``log`` of the inputs when ``log_input``; the checks read the values as stored.
    ``progress`` is told the pairs summarised so far after each block.
    """
    blocks = Blocks(stream, block_rows(stream, memory, workers), log_input=log_input, transform=transform)
    mine = list(range(rank, len(blocks), world))
    stream.release()
    same = cast("Callable[[list[Any]], Any]", _same)
    parts = DataLoader(blocks, batch_size=None, sampler=mine, num_workers=workers, collate_fn=same)
    total = _empty(stream)
    for part in parts:
        total = total + part
        if progress is not None:
            progress(total.samples)
    return total


def _empty(stream: PairStream) -> Summary:
    c_in, c_out = stream.channels
    zero = Moments(0, torch.zeros(c_in, dtype=torch.float64), torch.zeros(c_in, dtype=torch.float64))
    zero_out = Moments(0, torch.zeros(c_out, dtype=torch.float64), torch.zeros(c_out, dtype=torch.float64))
    ends = tuple(Ends(p) for p in stream.grid)
    return Summary(0, zero, zero_out, (Count(), Count()), Count(), (Peaks(), Peaks()), (ends, ends))
