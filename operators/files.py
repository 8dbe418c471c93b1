"""Arrays from a researcher's files: their keys, shapes and dtypes read first, the values only when asked for.

Formats, by suffix:

* ``.pt`` / ``.pth``: a dict of tensors (``torch.save``), read with ``weights_only=True`` (a planted pickle runs
  nothing) and ``mmap=True`` (the shapes are known before any value is read into memory);
* ``.npz``: numpy's archive, read with ``allow_pickle=False``; each member's header gives its shape first;
* ``.npy``: one array, under the key ``"array"``;
* ``.mat``: MATLAB up to v7 (scipy's ``loadmat``; ``whosmat`` lists the shapes first). A v7.3 file is HDF5;
* ``.h5`` / ``.hdf5`` (and v7.3 ``.mat``): HDF5, read with ``h5py`` if it is installed (``pip install h5py``).

Every problem is a :class:`~applicative.DataError` (the library's one, a :class:`~applicative.UserError`): one
line naming the file (and key) and what to do.
"""

from __future__ import annotations

import math
import pickle
import pickletools
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from applicative import DataError

SUFFIXES = (".pt", ".pth", ".npz", ".npy", ".mat", ".h5", ".hdf5")


@dataclass(frozen=True)
class ArrayInfo:
    """What a file says of one array before it is read: its key, shape and dtype."""

    key: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        """Bytes the array takes in memory (as a float64 copy if its own itemsize is unknown)."""
        return math.prod(self.shape) * itemsize(self.dtype)


def itemsize(dtype: str) -> int:
    """Bytes per value of a dtype named by numpy or torch (``"float32"``, ``"bfloat16"``); 8 if neither knows it."""
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        kind = getattr(torch, dtype, None)
        return kind.itemsize if isinstance(kind, torch.dtype) else 8


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DataError(f"{path}: unknown file type {suffix or '(none)'!r}; use one of {', '.join(SUFFIXES)}")
    return suffix


def _exists(path: Path) -> None:
    """A regular file (or a link to one): a FIFO would block the reader, a device never ends, a directory is none."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"{path}: no such file; check the path") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror}); check the path") from None
    if not stat.S_ISREG(mode):
        kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (a named pipe)"), (stat.S_ISCHR, "a device"))
        kind = next((name for test, name in kinds if test(mode)), "not a regular file")
        raise DataError(f"{path}: is {kind}, not a data file; give the path of a file of arrays")


def contents(path: str | Path) -> dict[str, ArrayInfo]:
    """The arrays in ``path`` by key, with shapes and dtypes, reading no values (where the format allows)."""
    path = Path(path)
    suffix = _suffix(path)
    _exists(path)
    try:
        if suffix in (".pt", ".pth"):
            return {
                k: ArrayInfo(k, tuple(v.shape), str(v.dtype).removeprefix("torch.")) for k, v in _torch(path).items()
            }
        if suffix == ".npz":
            return _npz_contents(path)
        if suffix == ".npy":
            a = np.load(path, mmap_mode="r", allow_pickle=False)
            return {"array": ArrayInfo("array", tuple(a.shape), str(a.dtype))}
        if suffix == ".mat" and not _is_hdf5(path):
            from scipy.io import whosmat

            return {name: ArrayInfo(name, tuple(shape), kind) for name, shape, kind in whosmat(str(path))}
        return _hdf5(path, None)
    except DataError:
        raise
    except Exception as e:  # a damaged or foreign file: whatever the reader raised, in one line
        raise DataError(
            f"{path}: cannot read it as {suffix} ({type(e).__name__}: {_first(e)}); check the file"
        ) from None


def read(path: str | Path, keys: list[str]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of ``path`` as numpy arrays (a :class:`DataError` naming a missing key and those there)."""
    path = Path(path)
    found = contents(path)
    missing = [k for k in keys if k not in found]
    if missing:
        raise DataError(f"{path}: no key {missing[0]!r}; the file holds {', '.join(sorted(found)) or 'nothing'}")
    suffix = _suffix(path)
    try:
        if suffix in (".pt", ".pth"):
            tensors = _torch(path)
            return {k: _numbers(tensors[k]) for k in keys}
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return {k: np.asarray(z[k]) for k in keys}
        if suffix == ".npy":
            return {"array": np.load(path, allow_pickle=False)}
        if suffix == ".mat" and not _is_hdf5(path):
            from scipy.io import loadmat

            mat = loadmat(str(path), variable_names=keys)
            return {k: np.asarray(mat[k]) for k in keys}
        return {k: np.asarray(v) for k, v in _hdf5(path, keys).items()}
    except DataError:
        raise
    except Exception as e:
        raise DataError(
            f"{path}: cannot read it as {suffix} ({type(e).__name__}: {_first(e)}); check the file"
        ) from None


def write(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` by key to ``path`` in the format its suffix names (as :func:`read` reads it back): a dict of
    tensors (``.pt``), numpy's archive, one array (``.npy``: the only key), MATLAB v5 (``.mat``) or HDF5."""
    path = Path(path)
    suffix = _suffix(path)
    if suffix == ".npy" and len(arrays) != 1:
        raise DataError(f"{path}: a .npy file holds one array, but {len(arrays)} are written; use .npz")
    if suffix in (".pt", ".pth"):
        torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}, path)
    elif suffix == ".npz":
        np.savez(path, **arrays)  # type: ignore[arg-type]
    elif suffix == ".npy":
        np.save(path, next(iter(arrays.values())), allow_pickle=False)
    elif suffix == ".mat":
        from scipy.io import savemat

        savemat(str(path), arrays, do_compression=True)
    else:
        try:
            import h5py
        except ImportError:
            raise DataError(f"{path}: writing HDF5 needs h5py; pip install h5py, or write .npz") from None
        with h5py.File(path, "w") as f:
            for k, v in arrays.items():
                f.create_dataset(k, data=v)


def _torch(path: Path) -> dict[str, torch.Tensor]:
    try:
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # an old (non-zip) serialisation cannot be mapped: read it whole
            blob = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise DataError(_pickled(path)) from None
    if not isinstance(blob, dict) or not all(isinstance(k, str) for k in blob):
        raise DataError(f"{path}: expected a dict of tensors by name (torch.save({{'x': x, 'y': y}}, path))")
    tensors = {k: v for k, v in blob.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise DataError(f"{path}: holds no tensors (keys {', '.join(blob)}); save a dict of tensors")
    return tensors


#: the modules whose objects a ``weights_only`` load builds from a dict of tensors
_TENSOR_MODULES = ("torch", "collections")


def _pickled(path: Path) -> str:
    """Why ``torch.load(weights_only=True)`` refused ``path``, in one line: the key whose value is a pickled object
    (found by reading the pickle's opcodes, running none of them) and the fix."""
    key, kind = None, None
    try:
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if n.endswith("data.pkl"))
            strings: list[str] = []
            for op, arg, _ in pickletools.genops(z.read(name)):
                if isinstance(arg, str) and op.name.endswith("UNICODE"):
                    strings.append(arg)
                elif op.name in ("GLOBAL", "STACK_GLOBAL"):
                    named = str(arg).split(" ") if op.name == "GLOBAL" else strings[-2:]
                    before = strings if op.name == "GLOBAL" else strings[:-2]
                    if named and named[0].split(".")[0] not in _TENSOR_MODULES:
                        key = before[-1] if before else None
                        kind = "numpy array" if named[0].startswith("numpy") else ".".join(named)
                        break
    except (zipfile.BadZipFile, StopIteration, ValueError, IndexError, OSError):
        pass  # an old serialisation or a damaged file: the key is not known
    what = f"key {key!r} holds a pickled {kind}" if key is not None else f"it holds a pickled {kind or 'object'}"
    return (
        f"{path}: {what}, not a tensor, and a pickle is never loaded (it could run code); save tensors instead: "
        "torch.save({k: torch.as_tensor(v) for k, v in data.items()}, path), or numpy.savez(path, **data)"
    )


def _numbers(t: torch.Tensor) -> np.ndarray:
    """A tensor as a numpy array; real floats numpy has no dtype for (``bfloat16``, the float8 kinds) as float32."""
    if t.is_floating_point() and t.dtype not in (torch.float16, torch.float32, torch.float64):
        t = t.float()
    return t.detach().cpu().numpy()


def _npz_contents(path: Path) -> dict[str, ArrayInfo]:
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            if not member.endswith(".npy"):
                continue
            with z.open(member) as f:
                version = np.lib.format.read_magic(f)
                header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = header(f)
            key = member.removesuffix(".npy")
            out[key] = ArrayInfo(key, tuple(shape), str(dtype))
    return out


def _is_hdf5(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(8)
        if head == b"\x89HDF\r\n\x1a\n":
            return True
        f.seek(512)  # a MATLAB v7.3 file: a 512-byte header, then HDF5
        return f.read(8) == b"\x89HDF\r\n\x1a\n"


def _hdf5(path: Path, keys: list[str] | None) -> dict[str, Any]:
    try:
        import h5py
    except ImportError:
        raise DataError(
            f"{path}: an HDF5 file (or MATLAB v7.3), and h5py is not installed; pip install h5py, or save the arrays "
            "with numpy (.npz) or torch (.pt)"
        ) from None
    out: dict[str, Any] = {}
    with h5py.File(path, "r") as f:
        _inside(path, f, f, "/")

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group):
                _inside(path, f, obj, name)
            if isinstance(obj, h5py.Dataset):
                _own_values(path, obj, name)
            if isinstance(obj, h5py.Dataset) and (keys is None or name in keys):
                # MATLAB v7.3 stores arrays transposed (column-major): read back in MATLAB's axis order
                matlab = path.suffix.lower() == ".mat"
                if keys is None:
                    shape = tuple(reversed(obj.shape)) if matlab else tuple(obj.shape)
                    out[name] = ArrayInfo(name, shape, str(obj.dtype))
                else:
                    a = np.asarray(obj[()])
                    out[name] = a.T if matlab else a

        f.visititems(visit)
    return out


def _inside(path: Path, f: Any, group: Any, name: str) -> None:
    """Refuse a link of ``group`` that leaves the file: an external link names another file (any file on the
    machine), so reading through it would read that file as data."""
    import h5py

    for member in group:
        link = group.get(member, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            where = f"{name.rstrip('/')}/{member}".lstrip("/")
            raise DataError(
                f"{path}: key {where!r} is an external link to {link.filename!r}; a data file must hold its own values "
                "(copy them in: h5py's copy, or h5repack)"
            )


def _own_values(path: Path, ds: Any, name: str) -> None:
    """Refuse a dataset whose values live outside the file: external storage (raw bytes of other files, such as
    ``/dev/urandom``) or a virtual dataset (a view of other datasets, possibly in other files)."""
    if ds.external:
        shown = ", ".join(repr(str(e[0])[:60]) for e in ds.external[:2])
        raise DataError(
            f"{path}: key {name!r} stores its values in other files ({shown}); a data file must hold its own "
            "values (copy them in with h5repack, or save the arrays with numpy or torch)"
        )
    if ds.is_virtual:
        raise DataError(
            f"{path}: key {name!r} is a virtual dataset (a view of other datasets, possibly in other files); a data "
            "file must hold its own values (copy them in with h5repack, or save the arrays with numpy or torch)"
        )


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:160]
