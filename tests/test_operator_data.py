"""The data side of the operator task (``operators``): layouts and their quadrature, files read shapes-first,
checked samples, and the grid's symmetries -- against numpy, scipy and hand-written references."""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
from numpy.polynomial import chebyshev as C

from operators import symmetry
from operators.dataset import from_file, samples
from operators.files import DataError, contents, read
from operators.layout import FREE, LAYOUTS, PERIODIC, ZERO, Axis, LayoutError, check_layout

F64 = torch.float64


# ---- layouts -------------------------------------------------------------------------------------------


def test_the_layouts_place_their_samples_where_the_table_says() -> None:
    p = 8
    i = np.arange(p)
    want = {
        "nodes": i / (p - 1),
        "periodic": i / p,
        "centres": (i + 0.5) / p,
        "chebyshev": (C.chebpts1(p) + 1) / 2,
        "lobatto": (C.chebpts2(p) + 1) / 2,
    }
    for layout in LAYOUTS:
        axis = Axis(layout, -2.0, 3.0)
        np.testing.assert_allclose(axis.coordinates(p).numpy(), -2 + 5 * want[layout], atol=1e-14)
        np.testing.assert_allclose(axis.t(p).numpy(), 2 * want[layout] - 1, atol=1e-14)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layouts_quadrature_integrates_what_it_should(layout: str) -> None:
    """Against scipy's adaptive quadrature: trapezoid O(h²), midpoint O(h²), the periodic trapezoid spectrally on a
    periodic function, Fejér and Clenshaw-Curtis exactly on polynomials of degree < P."""
    axis = Axis(layout)
    p = 40
    t = axis.t(p).numpy()
    w = axis.weights(p).numpy()
    assert w.sum() == pytest.approx(2.0, abs=1e-13) and (w > 0).all()
    if layout in ("chebyshev", "lobatto"):
        poly = C.Chebyshev(np.random.default_rng(0).standard_normal(p - 1))
        assert abs(w @ poly(t) - poly.integ(lbnd=-1)(1)) < 1e-12
    elif layout == "periodic":
        f = lambda s: np.exp(np.sin(math.pi * s))  # noqa: E731
        assert abs(w @ f(t) - scipy.integrate.quad(f, -1, 1)[0]) < 1e-12
    else:
        f = lambda s: np.exp(s)  # noqa: E731
        assert abs(w @ f(t) - (math.e - 1 / math.e)) < 2.0 / p**2


def test_a_line_is_a_structure_whose_measure_is_the_layouts_quadrature() -> None:
    for layout in LAYOUTS:
        axis = Axis(layout)
        s = axis.line(9)
        assert s.periodic == (layout == "periodic")
        lw = s.log_measure(F64, torch.device("cpu"))
        torch.testing.assert_close(lw.exp(), axis.weights(9))
        torch.testing.assert_close(s.coordinates(F64), axis.t(9))
        assert axis.line(9) == s and axis.line(10) != s  # one class per layout: equal by size


def test_axes_refuse_contradictions() -> None:
    with pytest.raises(LayoutError, match=r"boundary periodic with layout nodes"):
        Axis("nodes", boundary="periodic")
    with pytest.raises(LayoutError, match=r"need finite lo < hi"):
        Axis("nodes", 1.0, 0.0)
    assert Axis("periodic").boundary == PERIODIC and Axis("periodic", boundary="zero").boundary == ZERO
    assert Axis("centres").boundary == FREE  # never assumed zero
    with pytest.raises(LayoutError, match=r"layout 'uniform': must be one of nodes, periodic, centres"):
        Axis("uniform")
    for axis in (Axis("periodic", -1.0, 2.0, "zero"), Axis("lobatto"), Axis()):
        assert Axis.from_record(axis.record()) == axis
    with pytest.raises(LayoutError, match=r"boundary 'dirichlet': must be one of periodic, zero, free"):
        Axis.from_record({"layout": "nodes", "lo": 0.0, "hi": 1.0, "boundary": "dirichlet"})


def _dirichlet(p: int, layout: str) -> np.ndarray:
    """``sin(πx) sin(2πy)``-like samples vanishing at x = 0 and x = 1, at the layout's nodes along both axes."""
    x = Axis(layout).coordinates(p).numpy()
    return (np.sin(math.pi * x)[:, None] * np.sin(2 * math.pi * x + 0.3)[None, :])[None]


def test_a_dirichlet_grid_stored_periodic_style_is_caught_and_the_layout_named() -> None:
    u = _dirichlet(33, "periodic")  # nodes i/P: the x = 1 row is absent
    with pytest.raises(LayoutError, match=r"nodes are likely i/P.*declare layout periodic for axis x"):
        check_layout(u, Axis("nodes", boundary="zero"), 1, "x", "f.npz, key 'u'")
    check_layout(u, Axis("periodic", boundary="zero"), 1, "x", "f.npz")  # declared right: accepted
    axes = (Axis("periodic", boundary="zero"), Axis("periodic"))
    samples(np.exp(u) + 1, u, axes)  # the inputs need not vanish where the outputs do
    check_layout(_dirichlet(33, "nodes"), Axis("nodes", boundary="zero"), 1, "x", "f.npz")
    with pytest.raises(LayoutError, match=r"declare boundary free"):
        check_layout(u + 1, Axis("nodes", boundary="zero"), 1, "x", "f.npz")


def test_a_periodic_grid_that_stores_its_end_twice_is_caught() -> None:
    x = np.arange(17) / 16  # i/(P-1): 0 and 1 both stored
    u = np.cos(2 * math.pi * x)[None] * np.arange(1, 4)[:, None]
    with pytest.raises(LayoutError, match=r"stores the end twice; declare layout nodes"):
        check_layout(u, Axis("periodic"), 1, "x", "burgers.mat, key 'a'")
    check_layout(u[:, :-1], Axis("periodic"), 1, "x", "burgers.mat")


# ---- files --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".pt", ".npz", ".mat", ".npy"])
def test_files_give_their_shapes_first_then_their_values(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(0)
    arrays = {"coeff": rng.standard_normal((3, 5, 5)), "sol": rng.standard_normal((3, 5, 5)).astype(np.float32)}
    path = tmp_path / f"data{suffix}"
    if suffix == ".pt":
        torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, path)
    elif suffix == ".npz":
        np.savez(path, **arrays)
    elif suffix == ".mat":
        scipy.io.savemat(path, arrays)
    else:
        np.save(path, arrays["coeff"])
        arrays = {"array": arrays["coeff"]}
    info = contents(path)
    assert {k: (v.shape, v.nbytes) for k, v in info.items()} == {k: (a.shape, a.nbytes) for k, a in arrays.items()}
    got = read(path, list(arrays))
    for k, a in arrays.items():
        np.testing.assert_array_equal(got[k], a)


def test_a_planted_pickle_runs_nothing_and_damage_is_one_line(tmp_path: Path) -> None:
    class Planted:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (print, ("ran",))

    path = tmp_path / "planted.pt"
    torch.save({"x": torch.zeros(2), "y": Planted()}, path)
    with pytest.raises(DataError, match=r"planted.pt: key .y. holds a pickled __builtin__.print, not a tensor"):
        contents(path)
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(DataError, match=r"damaged.npz: cannot read it"):
        contents(damaged)
    with pytest.raises(DataError, match=r"unknown file type '\.csv'"):
        contents(tmp_path / "x.csv")
    with pytest.raises(DataError, match=r"no such file"):
        contents(tmp_path / "absent.npz")


def test_the_usual_keys_are_found_and_a_missing_one_named(tmp_path: Path) -> None:
    path = tmp_path / "burgers.npz"
    a = np.random.default_rng(1).standard_normal((4, 16))
    np.savez(path, a=a, u=2 * a)
    s = from_file(path, [Axis("periodic")])
    torch.testing.assert_close(s.outputs, 2 * s.inputs)
    with pytest.raises(DataError, match=r"no key 'sol'; the file holds a, u"):
        from_file(path, [Axis("periodic")], output_key="sol")
    np.savez(tmp_path / "odd.npz", first=a, second=a)
    with pytest.raises(DataError, match=r"none of the usual input keys.*name the input with --input-key"):
        from_file(tmp_path / "odd.npz")
    with pytest.raises(DataError, match=r"over the budget"):
        from_file(path, [Axis("periodic")], max_bytes=100)


# ---- samples ---------------------------------------------------------------------------------------------


def test_samples_take_channels_last_or_first_and_check_every_assumption() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 2, 9, 9))  # channels first
    s = samples(x, x[:, :1], channels="first")
    assert s.inputs.shape == (6, 9, 9, 2) and s.outputs.shape == (6, 9, 9, 1) and s.grid == (9, 9)
    torch.testing.assert_close(s.inputs[..., 1], torch.from_numpy(x[:, 1]))
    bad = x.copy()
    bad[3, 0, 2, 2] = np.nan
    with pytest.raises(DataError, match=r"1 values are NaN or infinite \(the first in sample 3\)"):
        samples(bad, x[:, :1], channels="first")
    with pytest.raises(DataError, match=r"6 input samples .* but 5 outputs"):
        samples(x, x[:5, :1], channels="first")
    with pytest.raises(DataError, match=r"inputs on a grid of \(9, 9\) .* but outputs on \(9, 8\)"):
        samples(x, x[:, :1, :, :8], channels="first")
    binary = (x[:, 0] > 0).astype(np.float64)  # a 0/1 field read through log: the misleading divergence, caught
    with pytest.raises(DataError, match=r"input values are <= 0 .* set log_input=false"):
        samples(binary, x[:, 0], log_input=True)
    with pytest.raises(DataError, match=r"values of dtype complex128"):
        samples(x.astype(np.complex128), x)


# ---- symmetries ----------------------------------------------------------------------------------------


def test_reflections_map_each_layouts_samples_onto_the_reflected_points() -> None:
    """``g·f = f ∘ g⁻¹`` computed by :func:`symmetry.move` equals the function sampled at the reflected points."""
    f = lambda x, y: np.exp(np.sin(2 * math.pi * x) + 0.3 * y) + x * y  # noqa: E731
    for layout, bc in (("nodes", "free"), ("centres", "zero"), ("chebyshev", "free"), ("periodic", "periodic")):
        axis = Axis(layout, boundary=bc)
        x = axis.coordinates(8).numpy()
        grid = torch.from_numpy(f(x[:, None], x[None, :]))[None, ..., None]  # (1, 8, 8, 1)
        which = torch.tensor([[True, True, False]])  # transpose, then reflect x
        moved = symmetry.move(grid, which, "square", (axis, axis))[0, ..., 0].numpy()
        mirror = (1 - x) % 1 if layout == "periodic" else 1 - x
        np.testing.assert_allclose(moved, f(x[None, :], mirror[:, None]), atol=1e-12)  # f(y, 1 - x)
    assert symmetry.problem("flips", (Axis("periodic", boundary="zero"),)) is not None
    assert symmetry.problem("square", (Axis("nodes"), Axis("centres"))) is not None
    assert symmetry.problem("shifts", (Axis("nodes"),)) is not None


def test_shifts_translate_periodic_axes_only() -> None:
    axes = (Axis("periodic"), Axis("nodes"))
    t = torch.arange(2 * 5 * 4, dtype=F64).reshape(2, 5, 4, 1)
    which = symmetry.draw("shifts", 2, axes, (5, 4), torch.Generator().manual_seed(0))
    assert (which[:, 1] == 0).all()
    moved = symmetry.move(t, which, "shifts", axes)
    for b in range(2):
        torch.testing.assert_close(moved[b], t[b].roll(-int(which[b, 0]), 0))


# ---- a data file is only itself -------------------------------------------------------------------------


def _pair(n: int = 4, p: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(0, 1, p)
    a = np.stack([np.sin((k + 1) * math.pi * x) for k in range(n)])
    return a, 2 * a


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "dangling"])
def test_only_a_regular_file_is_read(tmp_path: Path, kind: str) -> None:
    """A FIFO would block the reader for ever and ``/dev/zero`` never ends: each is refused as what it is, at once."""
    path = tmp_path / "data.npz"
    says = {"fifo": "is a FIFO", "directory": "is a directory", "device": "is a device", "dangling": "no such file"}
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero" if kind == "device" else tmp_path / "absent.npz")
    for call in (lambda: contents(path), lambda: from_file(path)):
        with pytest.raises(DataError, match=f"data.npz: {says[kind]}"):
            call()


def test_a_symlink_to_a_data_file_is_read(tmp_path: Path) -> None:
    a, u = _pair()
    np.savez(tmp_path / "real.npz", a=a, u=u)
    (tmp_path / "link.npz").symlink_to(tmp_path / "real.npz")
    s = from_file(tmp_path / "link.npz", dims=1)
    np.testing.assert_array_equal(s.inputs[..., 0].numpy(), a)


h5py = pytest.importorskip("h5py")


def test_hdf5_values_outside_the_file_are_refused(tmp_path: Path) -> None:
    """External storage (raw bytes of another file: /etc/passwd, /dev/urandom), a virtual dataset over another file,
    and an external link: each refused by name, before a value is read."""
    a, u = _pair()
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["u"] = u
    stolen = tmp_path / "secret.bin"
    stolen.write_bytes(np.arange(64, dtype=np.float64).tobytes())
    cases = {
        "external.h5": ("stores its values in other files", None),
        "virtual.h5": ("is a virtual dataset", None),
        "link.h5": ("is an external link to", None),
    }
    with h5py.File(tmp_path / "external.h5", "w") as f:
        f["a"] = a
        f.create_dataset("u", shape=(4, 16), dtype="f8", external=[(str(stolen), 0, 4 * 16 * 8)])
    with h5py.File(tmp_path / "virtual.h5", "w") as f:
        f["a"] = a
        layout = h5py.VirtualLayout(shape=(4, 16), dtype="f8")
        layout[:] = h5py.VirtualSource(str(other), "u", shape=(4, 16))
        f.create_virtual_dataset("u", layout)
    with h5py.File(tmp_path / "link.h5", "w") as f:
        f["a"] = a
        f["u"] = h5py.ExternalLink(str(other), "u")
    for name, (says, _) in cases.items():
        with pytest.raises(DataError, match=says):
            from_file(tmp_path / name, dims=1)
        with pytest.raises(DataError, match=says):
            contents(tmp_path / name)


def test_a_small_file_that_would_grow_past_the_budget_is_refused_before_reading(tmp_path: Path) -> None:
    """A few KB of HDF5 (chunks never written: the fill value) that would be 8 GB in memory: refused from its shape,
    with the estimate in the message, in well under a second."""
    path = tmp_path / "bomb.h5"
    with h5py.File(path, "w") as f:
        for key in ("a", "u"):
            f.create_dataset(key, shape=(500, 1000, 1000), dtype="f4", chunks=(1, 100, 1000), compression="gzip")
    assert path.stat().st_size < 100_000
    # each value: its 4 bytes as read, 8 as a float64 sample, 2 for the checks' masks
    estimate = 2 * 500 * 1000 * 1000 * (4 + 8 + 2) / 2**20
    start = time.perf_counter()
    with pytest.raises(
        DataError, match=rf"take about {estimate:,.0f} MiB in memory once read, over the budget of 8,192"
    ):
        from_file(path, max_bytes=8 * 2**30)
    assert time.perf_counter() - start < 1.0


def test_bfloat16_and_other_real_floats_are_numbers(tmp_path: Path) -> None:
    a, u = _pair()
    for dtype in (torch.bfloat16, torch.float16, torch.float8_e4m3fn):
        path = tmp_path / f"{dtype}.pt".replace("torch.", "")
        torch.save({"a": torch.from_numpy(a).to(dtype), "u": torch.from_numpy(u).to(dtype)}, path)
        assert contents(path)["a"].nbytes == 4 * 16 * dtype.itemsize
        s = from_file(path, dims=1)
        want = torch.from_numpy(u).to(dtype).double()  # the file's own numbers, exactly
        torch.testing.assert_close(s.outputs[..., 0], want, rtol=0, atol=0)


def test_an_output_sample_of_zeros_is_refused_by_name() -> None:
    a, u = _pair()
    u[2] = 0
    u[3] = 0
    with pytest.raises(DataError, match=r"sample 2 \(and 1 more\) has outputs all zero: its relative error is 0/0"):
        samples(a, u)
    ints = np.ones((3, 16), dtype=np.uint8)
    ints[1] = 0
    with pytest.raises(DataError, match="sample 1 has outputs all zero"):
        samples(ints, ints)


@pytest.mark.parametrize("scale", [1e300, 1e-310])
def test_data_a_float32_model_cannot_square_are_refused_with_the_remedy(scale: float) -> None:
    """Around 1e300 (squares overflow) or 1e-310 (subnormal: flushed to zero in training): refused, naming the sample
    past the bound and the remedy, rather than training into 'diverged'."""
    a, u = _pair()
    peaks = np.abs(u * scale).max(axis=1)
    bad = int(peaks.argmax() if scale > 1 else peaks.argmin())
    size = re.escape(f"{peaks[bad]:.3g}")
    says = rf"sample {bad}'s outputs reach {size}, outside \[1e-15, 1e\+15\].*divide the outputs by a scale"
    with pytest.raises(DataError, match=says):
        samples(a, u * scale)
    with pytest.raises(DataError, match=r"key 'inputs': sample \d's inputs reach"):
        samples(a * 2e300, u)
    samples(np.abs(a) * 1e300 + 1, u, log_input=True)  # a log is taken of the inputs: any positive size will do
