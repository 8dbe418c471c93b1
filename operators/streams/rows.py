"""One array of a file, read a few samples (rows along its first axis) at a time: the readers (:mod:`.formats` opens).

A :class:`Rows` knows its shape and dtype from the file's header and reads the rows asked for, in the file's own
dtype, into a tensor ``(len(index), *row)``; nothing else of the file is held in memory. By format:

* ``.npy``, an ``.npz`` member stored without compression (``np.savez``), a ``.pt`` file's tensor (``torch.save``:
  its storages are stored, not compressed): the values are a C-ordered block at a known offset of the file, and a
  row is read by a positioned read (:class:`FlatRows`). A read is not a memory map: the pages a map touches count
  as the process's resident memory until the map is dropped, and a pass over a file larger than memory would
  fill it; a read leaves them to the kernel's page cache, which yields them to anything that needs the memory;
* HDF5 (``.h5``, ``.hdf5``, MATLAB v7.3 ``.mat``): through ``h5py``, consecutive rows as one hyperslab, the chunk
  cache sized from the memory budget (:class:`HDF5Rows`);
* what cannot be read by rows -- an ``.npz`` member compressed by ``np.savez_compressed``, a MATLAB v5 ``.mat``,
  an ``.npy`` in Fortran order, a ``.pt`` of the old (non-zip) format -- is read whole when it fits the memory
  budget (:class:`MemoryRows`), and refused in one line saying how to store it otherwise.

A file handle is opened on first use in each process, and opened again in a process forked from it (a data
loader's worker), so that workers never share one file position. Every problem is a
:class:`~operators.files.DataError`: the file, the key, what is wrong and the fix.
"""

from __future__ import annotations

import io
import math
import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from applicative import DataError

#: bytes of the chunk cache an HDF5 reader keeps at most (a chunk larger than this is read through)
HDF5_CACHE = 64 * 2**20


class Rows(ABC):
    """An array ``(N, *row)`` of one file read by rows (its first axis counts samples)."""

    #: the file and key, for messages (``"train.npz, key 'x'"``)
    where: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @abstractmethod
    def read(self, index: np.ndarray) -> Tensor:
        """The rows ``index`` (any order, repeats allowed) in the file's dtype: ``(len(index), *row)``."""

    @property
    def block(self) -> int:
        """Rows that the file stores together (an HDF5 chunk's extent along the samples); a pass reads multiples."""
        return 1

    @property
    def resident(self) -> int:
        """Bytes this reader holds in memory besides the rows it returns (a whole array, a chunk cache)."""
        return 0

    _handle: Any = None
    _pid: int | None = None
    _closer: weakref.finalize | None = None  # type: ignore[type-arg]

    def _connect(self) -> Any:
        """Open the file (a reader of one)."""
        raise NotImplementedError(f"{type(self).__name__} reads no file")

    def _file(self) -> Any:
        """The file, open in this process: opened on first use, and again in a process forked from the one that
        opened it (whose handle, a copy, is closed here: the two never share a file position)."""
        if self._handle is None or self._pid != os.getpid():
            self.release()
            self._handle, self._pid = self._connect(), os.getpid()
            self._closer = weakref.finalize(self, self._handle.close)
        return self._handle

    def release(self) -> None:
        """Close the file in this process (it opens again on the next read)."""
        if self._closer is not None:
            self._closer()
        self._handle = self._pid = self._closer = None

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def row_bytes(self) -> int:
        """Bytes of one row in the file's dtype."""
        return math.prod(self.shape[1:]) * self.dtype.itemsize

    def __getstate__(self) -> dict[str, Any]:
        """A reader sent to another process travels without its open file."""
        state = dict(self.__dict__)
        state["_handle"] = state["_pid"] = state["_closer"] = None
        return state


def mib(n: int) -> str:
    """Bytes in MiB, three figures: ``0.0477 MiB``, ``512 MiB``, ``3.4e+04 MiB``."""
    return f"{n / 2**20:.3g} MiB"


def runs(index: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """``(position, first, count)`` for each run of consecutive values of sorted ``index``: the rows
    ``first .. first + count - 1`` land at ``position ..`` of the output."""
    if len(index) == 0:
        return
    breaks = np.flatnonzero(np.diff(index) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(index)]))
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        yield s, int(index[s]), e - s


def _sorted(index: np.ndarray, shape: tuple[int, ...], where: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``index`` sorted and the order that sorts it (``None``: already sorted); rows outside the array refused."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if len(index) and (int(index.min()) < 0 or int(index.max()) >= shape[0]):
        raise IndexError(f"{where}: rows {int(index.min())}..{int(index.max())} asked of {shape[0]}")
    if len(index) < 2 or bool((np.diff(index) >= 0).all()):
        return index, None
    order = np.argsort(index, kind="stable")
    return index[order], order


def _unsorted(values: Tensor, order: np.ndarray | None) -> Tensor:
    if order is None:
        return values
    out = torch.empty_like(values)
    out[torch.from_numpy(order)] = values
    return out


def torch_dtype(dtype: np.dtype[Any] | torch.dtype, where: str) -> torch.dtype:
    """The tensor dtype of a file's values: real floats or integers, else a :class:`DataError` (one line)."""
    if isinstance(dtype, torch.dtype):
        t = dtype
    else:
        try:
            t = torch.from_numpy(np.empty(0, dtype=dtype.newbyteorder("="))).dtype
        except TypeError:
            t = torch.bool  # refused below
    if t == torch.bool or t.is_complex:
        raise DataError(f"{where}: values of dtype {dtype}, expected real numbers; convert them")
    return t


class FlatRows(Rows):
    """Rows of a C-ordered block of values at byte ``offset`` of a file, read by positioned reads."""

    def __init__(
        self,
        path: Path,
        offset: int,
        shape: tuple[int, ...],
        dtype: np.dtype[Any],
        where: str,
        tensor_dtype: torch.dtype | None = None,
    ) -> None:
        self.path, self.offset, self.shape, self.where = path, offset, shape, where
        self.file_dtype = dtype  # a torch-only dtype (bfloat16) is read as unsigned integers of its size
        self.dtype = tensor_dtype if tensor_dtype is not None else torch_dtype(dtype, where)
        end = offset + math.prod(shape) * dtype.itemsize
        size = path.stat().st_size
        if size < end:
            raise DataError(
                f"{where}: declares shape {shape} of {dtype} ({end - offset:,} bytes) but the file ends "
                f"{end - size:,} bytes short: it is truncated; write it again"
            )

    def _connect(self) -> io.FileIO:
        f = io.FileIO(self.path, "r")
        if hasattr(os, "posix_fadvise"):  # rows are read where they are: the kernel's read-ahead would be waste
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        return f

    def read(self, index: np.ndarray) -> Tensor:
        index, order = _sorted(index, self.shape, self.where)
        out = np.empty((len(index), *self.shape[1:]), dtype=self.file_dtype)
        flat = out.reshape(len(index), -1).view(np.uint8)  # (n, row_bytes)
        f, row = self._file(), self.row_bytes
        for position, first, count in runs(index):
            f.seek(self.offset + first * row)
            view = flat[position : position + count].data.cast("B")
            done = 0
            while done < len(view):
                got = f.readinto(view[done:])
                if not got:
                    raise DataError(f"{self.where}: the file ended while reading row {first}; it is truncated")
                done += got
        if not self.file_dtype.isnative:
            out = out.astype(self.file_dtype.newbyteorder("="))
        values = torch.from_numpy(out)
        return _unsorted(values if values.dtype == self.dtype else values.view(self.dtype), order)


class MemoryRows(Rows):
    """An array read whole into memory (a format that cannot be read by rows, within the budget)."""

    def __init__(self, values: Tensor, where: str) -> None:
        self.values, self.where = values, where
        self.shape, self.dtype = tuple(values.shape), values.dtype

    def read(self, index: np.ndarray) -> Tensor:
        index, order = _sorted(index, self.shape, self.where)
        return _unsorted(self.values[torch.from_numpy(index)], order)

    @property
    def resident(self) -> int:
        return self.values.numel() * self.values.element_size()


class HDF5Rows(Rows):
    """Rows of an HDF5 dataset: each run of consecutive rows one hyperslab; MATLAB v7.3 arrays (stored with their
    axes reversed) read back in MATLAB's order."""

    def __init__(self, path: Path, key: str, matlab: bool, cache: int, where: str) -> None:
        self.path, self.key, self.matlab, self.where = path, key, matlab, where
        self.cache = 2**20
        ds = self._dataset()
        stored = tuple(int(n) for n in ds.shape)
        self.shape = tuple(reversed(stored)) if matlab else stored
        self.dtype = torch_dtype(ds.dtype, where)
        chunks = ds.chunks
        self._block = int(chunks[-1] if matlab else chunks[0]) if chunks else 1
        self.chunk_bytes = math.prod(chunks) * ds.dtype.itemsize if chunks else 0
        self.cache = min(cache, HDF5_CACHE) if self.chunk_bytes <= cache else 0  # 0: each read decompresses its chunk
        self.release()

    def _connect(self) -> Any:
        import h5py

        return h5py.File(self.path, "r", rdcc_nbytes=max(self.cache, 1), rdcc_nslots=10007)

    def _dataset(self) -> Any:
        return self._file()[self.key]

    @property
    def block(self) -> int:
        return self._block

    @property
    def resident(self) -> int:
        return max(self.cache, self.chunk_bytes)  # a read holds at least the chunk it decompresses

    def read(self, index: np.ndarray) -> Tensor:
        index, order = _sorted(index, self.shape, self.where)
        ds = self._dataset()
        parts = []
        for _, first, count in runs(index):
            part = np.asarray(ds[..., first : first + count].T if self.matlab else ds[first : first + count])
            parts.append(part if part.dtype.isnative else part.astype(part.dtype.newbyteorder("=")))
        if not parts:
            return torch.empty((0, *self.shape[1:]), dtype=self.dtype)
        values = torch.from_numpy(np.ascontiguousarray(np.concatenate(parts)))
        return _unsorted(values, order)
