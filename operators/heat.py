r"""The heat equation on the periodic square (or interval), solved exactly: operator data of any size, generated a
block at a time.

``u_t = ν Δu`` on ``[0, 1)^d`` (``d`` = 1 or 2), periodic, sampled at the nodes ``i / P`` of each axis. A function
sampled there is a trigonometric polynomial: its discrete Fourier coefficients ``û_k`` at wave numbers ``k`` with
``|k_j| ≤ P / 2``, and the solution at time ``t`` is exact, mode by mode,

.. math:: \hat u_k(t) = \hat u_k(0)\, e^{-4\pi^2 \nu |k|^2 t}

(the Nyquist mode of an even ``P`` taken as the cosine it is on the grid: :func:`evolve`). The initial functions
are random: ``û_k(0) = ξ_k (1 + |k|²)^(-α/2)`` for ``|k_j| ≤ P / 4`` (zero above), ``ξ_k`` standard complex normal,
seeded per block (:func:`field`), so that a file of any size is written a block at a time (:func:`write`) and the
same seed writes the same file.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .files import contents
from .layout import Axis
from .streams import PairStream, open_pairs

#: the diffusivity ``ν`` and the time ``t`` of the map ``u(0) -> u(t)``: the highest modes of a 64-point grid
#: decay by ``e^{-4π² ν 32² t} ≈ e^{-4}``, the lowest hardly at all
NU, TIME = 1e-3, 0.1
#: the initial spectrum's decay ``(1 + |k|²)^(-α/2)``
ALPHA = 2.0


def wave_numbers(points: int, dims: int) -> np.ndarray:
    """``|k|²`` on the grid of a real FFT over ``dims`` axes of ``points`` nodes: ``(P,)*(d-1) + (P//2 + 1,)``."""
    full = np.fft.fftfreq(points, 1.0 / points)
    half = np.fft.rfftfreq(points, 1.0 / points)
    axes = [full] * (dims - 1) + [half]
    grids = np.meshgrid(*axes, indexing="ij")
    return sum((g**2 for g in grids), np.zeros(grids[0].shape))


def evolve(u0: np.ndarray, dims: int, nu: float = NU, time: float = TIME) -> np.ndarray:
    """The exact solution at ``time`` from grid values ``u0`` ``(batch, *[P] * dims)`` (float64)."""
    axes = tuple(range(u0.ndim - dims, u0.ndim))
    points = u0.shape[-1]
    decay = np.exp(-4 * np.pi**2 * nu * wave_numbers(points, dims) * time)
    return np.fft.irfftn(np.fft.rfftn(u0, axes=axes) * decay, s=u0.shape[-dims:], axes=axes)


def field(seed: int, number: int, samples: int, points: int, dims: int, time: float) -> np.ndarray:
    """Block ``number`` of a seeded data set at ``time``: ``samples`` solutions ``(samples, *[points] * dims)``,
    float32, from initial functions spanning the wave numbers ``|k_j| <= P / 4`` (single-precision FFTs)."""
    top = points // 4
    kept = [np.r_[0 : top + 1, points - top : points]] * (dims - 1) + [np.arange(top + 1)]  # |k_j| <= P / 4
    every = wave_numbers(points, dims)
    k2 = every[np.ix_(*kept)]
    xi = np.random.default_rng([seed, number]).standard_normal((2, samples, *k2.shape), dtype=np.float32)
    factor = (1.0 + k2) ** (-ALPHA / 2) * points**dims * np.exp(-4 * np.pi**2 * NU * k2 * time)  # irfftn: 1/P^d
    spectrum = np.zeros((samples, *every.shape), dtype=np.complex64)
    where: tuple[Any, ...] = (slice(None), *np.ix_(*kept))
    spectrum[where] = (xi[0] + 1j * xi[1]) * factor.astype(np.float32)
    return np.fft.irfftn(spectrum, s=(points,) * dims, axes=tuple(range(1, dims + 1))).astype(np.float32)


def block(seed: int, number: int, samples: int, points: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Block ``number``'s pairs ``(u(0), u(TIME))`` (:func:`field`)."""
    return tuple(field(seed, number, samples, points, dims, t) for t in (0.0, TIME))  # type: ignore[return-value]


def write(
    path: Path,
    samples: int,
    points: int,
    dims: int,
    *,
    seed: int = 0,
    rows: int = 4096,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Write ``samples`` pairs to ``path`` a block of ``rows`` at a time, under the keys ``"u0"`` and ``"u"``
    (float32, ``(samples, *[points] * dims)``): an ``.npz`` of stored (uncompressed) members, or an HDF5 file of
    datasets chunked by 64 samples. ``progress`` is told the bytes written after each block."""
    shape = (samples, *[points] * dims)
    blocks = [(k, min(rows, samples - k * rows)) for k in range(-(-samples // rows))]
    if path.suffix == ".npz":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for key, time in (("u0", 0.0), ("u", TIME)):
                with z.open(f"{key}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
                    for k, n in blocks:
                        values = field(seed, k, n, points, dims, time)
                        f.write(values.data)
                        if progress is not None:
                            progress(values.nbytes)
        return
    import h5py

    with h5py.File(path, "w") as h:
        for key, time in (("u0", 0.0), ("u", TIME)):
            ds = h.create_dataset(key, shape, dtype="<f4", chunks=(min(64, samples), *shape[1:]))
            for k, n in blocks:
                ds[k * rows : k * rows + n] = field(seed, k, n, points, dims, time)
                if progress is not None:
                    progress(n * ds.dtype.itemsize * int(np.prod(shape[1:])))


def stream(path: Path, memory: int) -> PairStream:
    """The pairs ``u0 -> u`` of a file :func:`write` wrote, as a stream (every axis periodic, ``i / P``) holding at
    most ``memory`` bytes resident."""
    dims = len(contents(path)["u0"].shape) - 1
    axes = tuple(Axis("periodic") for _ in range(dims))
    return open_pairs(path, axes, input_key="u0", output_key="u", memory=memory)
