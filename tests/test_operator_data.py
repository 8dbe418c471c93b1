"""The data side of the operator task (``operators``): layouts and their quadrature, files read shapes-first,
checked samples, and the grid's symmetries -- against numpy, scipy and hand-written references."""

from __future__ import annotations

import math
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
    with pytest.raises(DataError, match=r"planted.pt: cannot read it as \.pt"):
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
