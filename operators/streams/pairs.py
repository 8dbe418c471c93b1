"""Input and output functions on a grid read from a file as they are needed: :class:`PairStream`, a
:class:`torch.utils.data.Dataset` of ``(input, output)`` pairs.

The streaming counterpart of :class:`operators.dataset.Samples`: the same pairs, channels last ``(*grid, C)`` per
sample, but read from the file (:mod:`.rows`) a batch at a time, in the file's dtype -- a batch becomes the
model's dtype where it is used. A stream covers a subset of the file's samples (``indices``): the training split,
the held-out tenth (:func:`held_out`). Only the arrays' headers are read to open one (:func:`open_pairs`); the
values are checked by one streaming pass (:mod:`.statistics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from torch import Tensor
from torch.utils.data import Dataset

from applicative import DataError
from operators.dataset import AXIS_NAMES, INPUT_KEYS, OUTPUT_KEYS, Channels, _channels_last, infer_dims, pick_key
from operators.files import contents
from operators.layout import Axis, LayoutError, check_layout

from .formats import open_rows
from .rows import Rows


class PairStream(Dataset[tuple[Tensor, Tensor]]):
    """The pairs ``indices`` of a file's ``inputs`` and ``outputs`` rows.

    Attributes:
        inputs, outputs: the two arrays' readers, ``(N, *grid)``, ``(N, *grid, C)`` or (``channels="first"``)
            ``(N, C, *grid)``.
        axes: one :class:`~operators.layout.Axis` per grid axis.
        indices: the file's samples this stream covers, in order (int64).
        where: the file, for messages; keys: the two arrays' keys.
    """

    def __init__(
        self,
        inputs: Rows,
        outputs: Rows,
        axes: Sequence[Axis],
        indices: np.ndarray,
        *,
        channels: Channels = "last",
        where: str = "arrays",
        keys: tuple[str, str] = ("inputs", "outputs"),
    ) -> None:
        self.inputs, self.outputs, self.axes = inputs, outputs, tuple(axes)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.channel_axis, self.where, self.keys = channels, where, keys
        dims = len(self.axes)
        x = _channels_last(np.empty((0, *inputs.shape[1:]), np.uint8), dims, channels, where, keys[0])
        y = _channels_last(np.empty((0, *outputs.shape[1:]), np.uint8), dims, channels, where, keys[1])
        self.input_shape, self.output_shape = tuple(x.shape[1:]), tuple(y.shape[1:])

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def grid(self) -> tuple[int, ...]:
        """Samples per axis."""
        return self.input_shape[:-1]

    @property
    def channels(self) -> tuple[int, int]:
        """``(C_in, C_out)``."""
        return self.input_shape[-1], self.output_shape[-1]

    @property
    def sample_bytes(self) -> int:
        """Bytes one pair takes in the file's dtypes."""
        return self.inputs.row_bytes + self.outputs.row_bytes

    @property
    def resident(self) -> int:
        """Bytes the readers hold in memory besides the batches (arrays read whole, chunk caches)."""
        return self.inputs.resident + self.outputs.resident

    def rows(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The file's sample numbers of the stream's ``positions``."""
        return self.indices[np.asarray(positions, dtype=np.int64)]

    def read(self, positions: Sequence[int] | np.ndarray) -> tuple[Tensor, Tensor]:
        """The pairs at ``positions``: inputs ``(b, *grid, C_in)`` and outputs ``(b, *grid, C_out)``, file dtypes."""
        rows = self.rows(positions)
        return self._last(self.inputs.read(rows)), self._last(self.outputs.read(rows))

    def _last(self, values: Tensor) -> Tensor:
        if values.ndim == len(self.axes) + 1:
            return values.unsqueeze(-1)
        return values.movedim(1, -1).contiguous() if self.channel_axis == "first" else values

    def __getitem__(self, position: int) -> tuple[Tensor, Tensor]:
        x, y = self.read([position])
        return x[0], y[0]

    def __getitems__(self, positions: list[int]) -> tuple[Tensor, Tensor]:
        """A batch at once (what a :class:`~torch.utils.data.DataLoader` asks for; collate with :func:`batch`)."""
        return self.read(positions)

    def subset(self, start: int, stop: int, where: str | None = None) -> PairStream:
        """The stream's samples ``start .. stop - 1``."""
        return PairStream(
            self.inputs,
            self.outputs,
            self.axes,
            self.indices[start:stop],
            channels=self.channel_axis,
            where=where if where is not None else self.where,
            keys=self.keys,
        )

    def release(self) -> None:
        """Close the files in this process (before worker processes start: each opens its own)."""
        self.inputs.release()
        self.outputs.release()


def batch(pairs: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """A :class:`~torch.utils.data.DataLoader`'s ``collate_fn`` for ``PairStream.__getitems__``: the batch as
    read."""
    return pairs


def held_out(stream: PairStream) -> tuple[PairStream, PairStream]:
    """``(training, held-out)``: the stream less its last tenth (at least one sample), and that tenth."""
    n = len(stream)
    if n < 2:
        raise DataError(f"{stream.where}: one sample, none to hold out; give a test file")
    cut = n - max(1, n // 10)
    return stream.subset(0, cut), stream.subset(cut, n, f"{stream.where} (last tenth)")


def open_pairs(
    path: str | Path,
    axes: Sequence[Axis] | None = None,
    *,
    input_key: str | None = None,
    output_key: str | None = None,
    dims: int | None = None,
    channels: Channels = "last",
    memory: int,
) -> PairStream:
    """A :class:`PairStream` over every sample of a file, keys named or the usual ones
    (:data:`~operators.dataset.INPUT_KEYS`, :data:`~operators.dataset.OUTPUT_KEYS`), holding at most ``memory``
    bytes of it resident (:func:`~.formats.open_rows`).

    Checked from the headers: the keys, a grid of one or two axes and one axis declared per grid axis, at least
    one sample, as many outputs as inputs, the same grid. The values are checked by
    :func:`~.statistics.summarise`.
    """
    p = Path(path)
    found = contents(p)
    kx = pick_key(list(found), input_key, INPUT_KEYS, p, "input")
    ky = pick_key(list(found), output_key, OUTPUT_KEYS, p, "output")
    if kx == ky:
        raise DataError(f"{p}: the input and the output are both key {kx!r}; name them apart")
    d = dims if dims is not None else (len(axes) if axes else infer_dims(found[kx].shape))
    if d not in (1, 2):
        raise DataError(f"{p}: a grid of {d} dimensions; the operator task takes 1 or 2")
    axes = tuple(axes) if axes else tuple(Axis() for _ in range(d))
    if len(axes) != d:
        raise DataError(f"{p}: {len(axes)} axes declared for a grid of {d} dimension(s); declare one per axis")
    x = open_rows(p, kx, memory)
    y = open_rows(p, ky, memory - x.resident)  # what the inputs hold resident is spent
    if len(x) == 0:
        raise DataError(f"{p}, key {kx!r}: no samples; the first axis counts samples")
    if len(x) != len(y):
        raise DataError(
            f"{p}: {len(x)} input samples (key {kx!r}) but {len(y)} outputs (key {ky!r}); every input needs its output"
        )
    stream = PairStream(x, y, axes, np.arange(len(x)), channels=channels, where=str(p), keys=(kx, ky))
    if stream.input_shape[:-1] != stream.output_shape[:-1]:
        raise DataError(
            f"{p}: inputs on a grid of {stream.grid} (key {kx!r}) but outputs on {stream.output_shape[:-1]} "
            f"(key {ky!r}); sample both on the same grid"
        )
    empty = np.empty((0, *stream.output_shape))
    for i, axis in enumerate(axes):  # the grid against the layouts (the values: summarise)
        try:
            check_layout(empty, axis, 1 + i, AXIS_NAMES[i], f"{p}, key {ky!r}")
        except LayoutError as e:
            raise DataError(str(e)) from None
    stream.release()
    return stream
