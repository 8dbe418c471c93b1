"""Which reader a file's array gets (:func:`open_rows`): by rows where its values lie in the file as one C-ordered
block, through ``h5py`` for HDF5, whole (within the memory budget) where neither can be.

* ``.npy``: the header (numpy's format) gives the block's offset, shape, dtype and order;
* ``.npz``: a member stored without compression is an ``.npy`` at its data's offset (after its local header);
* ``.pt``: a load onto the meta device reads only the archive's index, and gives each tensor's storage offset in
  the file (where torch's own memory-mapped load would map it), its dtype and its strides;
* HDF5 and MATLAB v7.3 (HDF5 after a 512-byte header, its arrays stored with the axes reversed);
* MATLAB v5, a compressed member, a Fortran-ordered array, a non-contiguous tensor or a ``.pt`` of the old format:
  whole if it fits the budget, else refused saying how to store it to stream.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch

from applicative import DataError
from operators import files

from .rows import FlatRows, HDF5Rows, MemoryRows, Rows, mib, torch_dtype


def kind(path: Path) -> str:
    """The file's format: ``"torch"``, ``"npz"``, ``"npy"``, ``"mat5"`` (MATLAB up to v7) or ``"hdf5"`` (with
    MATLAB v7.3), from its suffix and, for ``.mat``, its header (:mod:`operators.files`' rules)."""
    suffix = files._suffix(path)
    if suffix in (".pt", ".pth"):
        return "torch"
    if suffix in (".npz", ".npy"):
        return suffix[1:]
    if suffix == ".mat" and not files._is_hdf5(path):
        return "mat5"
    return "hdf5"


def open_rows(path: str | Path, key: str, memory: int) -> Rows:
    """A reader of array ``key`` of ``path``, holding at most ``memory`` bytes resident.

    The file passes :func:`operators.files.contents`'s checks first (the key there, a file that reads). An array
    that cannot be read by rows is read whole if it fits ``memory``, else refused (:class:`DataError`).
    """
    p = Path(path)
    found = files.contents(p)
    if key not in found:
        raise DataError(f"{p}: no key {key!r}; the file holds {', '.join(sorted(found)) or 'nothing'}")
    where = f"{p}, key {key!r}"
    if len(found[key].shape) < 1:
        raise DataError(f"{where}: a single number, not samples; the first axis counts samples")
    k = kind(p)
    if k == "hdf5":
        return HDF5Rows(p, key, p.suffix.lower() == ".mat", memory // 4, where)
    flat = _flat(p, key, k, where)
    if flat is not None:
        return flat
    return _whole(p, key, k, found[key], memory, where)


def _whole(p: Path, key: str, k: str, info: files.ArrayInfo, memory: int, where: str) -> MemoryRows:
    why = {
        "npz": "is compressed (np.savez_compressed), so its rows cannot be read alone",
        "npy": "is stored in Fortran order, so a sample's values are spread over the file",
        "torch": "is a tensor whose rows are not stored one after another (or a .pt of the old, non-zip format)",
        "mat5": "is a MATLAB v5 file, which is read whole",
    }[k]
    fix = {
        "npz": "save it with np.savez (uncompressed), or as .npy or HDF5",
        "npy": "save np.ascontiguousarray(a)",
        "torch": "save t.contiguous() with torch.save's default format",
        "mat5": "save it with -v7.3 (HDF5) in MATLAB, or as .npy",
    }[k]
    if info.nbytes > memory:
        raise DataError(
            f"{where}: {why}; it takes {mib(info.nbytes)}, over the memory budget of {mib(memory)}; {fix} to "
            "stream it, or raise the memory budget"
        )
    values = files.read(p, [key])[key]
    return MemoryRows(torch.from_numpy(np.ascontiguousarray(values)), where)


def _flat(p: Path, key: str, k: str, where: str) -> FlatRows | None:
    """A positioned reader when the values lie in the file as one C-ordered block, else ``None``."""
    if k == "npy":
        return _npy_at(p, 0, where)
    if k == "npz":
        with zipfile.ZipFile(p) as z:
            info = z.getinfo(key + ".npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        return _npy_at(p, _member_data(p, info), where)
    if k == "torch":
        return _torch_at(p, key, where)
    return None


def _member_data(p: Path, info: zipfile.ZipInfo) -> int:
    """Where a zip member's bytes begin: after its local header (whose extra field may differ from the central
    directory's)."""
    with p.open("rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise DataError(f"{p}: member {info.filename!r} has no local header where the archive says; check the file")
    name, extra = struct.unpack("<HH", head[26:30])
    return int(info.header_offset + 30 + name + extra)


def _npy_at(p: Path, offset: int, where: str) -> FlatRows | None:
    with p.open("rb") as f:
        f.seek(offset)
        try:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
        except ValueError as e:
            raise DataError(f"{where}: cannot read its array header ({files._first(e)}); check the file") from None
        start = f.tell()
    if fortran and len(shape) > 1:
        return None
    if dtype.hasobject or dtype.fields is not None:
        raise DataError(f"{where}: values of dtype {dtype}, expected real numbers; save plain numeric arrays")
    return FlatRows(p, start, tuple(int(n) for n in shape), dtype, where)


def _torch_at(p: Path, key: str, where: str) -> FlatRows | None:
    """A ``.pt`` tensor's rows in the file: the storage's offset from a load onto the meta device (which reads
    only the archive's index), the tensor's view of it C-ordered."""
    try:
        t = torch.load(p, map_location="meta", weights_only=True)[key]
    except RuntimeError:  # the old, non-zip serialisation: nothing to read by rows
        return None
    dtype = torch_dtype(t.dtype, where)
    start = getattr(t.untyped_storage(), "_checkpoint_offset", None)  # where torch's own reader would map it
    if not isinstance(start, int) or not t.is_contiguous() or _byteorder(p) != sys.byteorder:
        return None
    itemsize = t.element_size()
    try:
        raw = torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:  # bfloat16 and the float8 kinds: numpy has no such dtype
        raw = np.dtype(f"u{itemsize}")
    return FlatRows(p, start + t.storage_offset() * itemsize, tuple(t.shape), raw, where, dtype)


def _byteorder(p: Path) -> str:
    with zipfile.ZipFile(p) as z:
        names = [n for n in z.namelist() if n.endswith("/byteorder")]
        return z.read(names[0]).decode().strip() if names else "little"
