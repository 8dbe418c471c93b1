"""The installed command ``applicative-transformers``: the wheel in a fresh environment, and ``train``, ``predict``
and ``inspect`` on files in the public formats (neuraloperator's ``.pt``, the FNO paper's ``.mat``, HDF5 with
coordinates), each output checked against :func:`predict` in Python and the figures against numpy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import torch

import training
from operators.darcy.data import sample
from operators.files import read
from training.tasks.operator import predict
from training.tasks.operator.command import main

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("applicative", "instances", "models", "operators", "training")


pytestmark = pytest.mark.usefixtures("one_thread")


def _sines(count: int, points: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Periodic inputs ``a`` at ``i/P`` and the antiderivative-free operator's outputs ``u = -∫∫ a`` (exact)."""
    rng = np.random.default_rng(seed)
    x = np.arange(points) / points
    k = np.arange(1, 4)
    c = rng.standard_normal((count, 3, 2))
    waves = np.cos(2 * np.pi * k[:, None] * x), np.sin(2 * np.pi * k[:, None] * x)
    a = c[..., 0] @ waves[0] + c[..., 1] @ waves[1]
    u = (c[..., 0] / (2 * np.pi * k) ** 2) @ waves[0] + (c[..., 1] / (2 * np.pi * k) ** 2) @ waves[1]
    return a, u


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_the_wheel_installs_a_command_that_runs_from_an_empty_directory(tmp_path: Path) -> None:
    """Build the wheel from a copy of the sources, install it in a fresh venv (its dependencies seen through a
    ``.pth``), and from an empty directory run ``inspect``, a tiny ``train`` and ``predict``: the file ``predict``
    writes equals :func:`predict` in Python on the run it trained."""
    source = tmp_path / "source"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip"]
    quiet = {"check": True, "capture_output": True, "text": True}
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", str(source), "-w", str(tmp_path)], **quiet
    )
    (wheel,) = tmp_path.glob("applicative_transformers-*.whl")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **quiet)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], **quiet
    ).stdout.strip()
    (Path(purelib) / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # torch, numpy, ...
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "-q", str(wheel)], **quiet)
    empty = tmp_path / "empty"
    empty.mkdir()
    a, u = _sines(40, 16, 0)
    np.savez(empty / "data.npz", a=a, u=u)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    command = str(venv / "bin" / "applicative-transformers")

    def run(*args: str) -> str:
        done = subprocess.run([command, *args], cwd=empty, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    said = run("inspect", "data.npz")
    assert "a: shape (40, 16)" in said and "axis x: 16 samples" in said
    run("train", "--train", "data.npz", "--preset", "tiny", "--steps", "3", "--layout", "periodic", "--no-progress")
    np.savez(empty / "new.npz", a=_sines(5, 32, 1)[0])
    run("predict", "runs/operator", "new.npz", "-o", "out.npz")
    where = subprocess.run(
        [python, "-c", "import training; print(training.__file__)"], cwd=empty, env=env, **quiet
    ).stdout
    assert where.startswith(purelib), where  # the installed package ran, not the checkout
    model = training.load(empty / "runs" / "operator")
    expected = predict(model, torch.from_numpy(_sines(5, 32, 1)[0]))[..., 0].numpy()
    np.testing.assert_array_equal(read(empty / "out.npz", ["u"])["u"], expected)
    bad = subprocess.run([command, "fly"], cwd=empty, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "train, predict and inspect" in bad.stderr


def _darcy_pt(path: Path, count: int, seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """neuraloperator's Darcy file: ``x`` a binary coefficient stored as bool, ``y`` float32 with noise ``noise``
    times the field's root-mean-square (ends included)."""
    d = sample("piecewise", count, 16, seed)
    x = (d.a.numpy() > 5).astype(bool)
    y = d.u.numpy()
    y = y + noise * np.sqrt((y**2).mean()) * np.random.default_rng(seed).standard_normal(y.shape)
    torch.save({"x": torch.from_numpy(x), "y": torch.from_numpy(y.astype(np.float32))}, path)
    return x, y


def test_neuraloperators_pt_trains_with_the_file_names_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bool coefficient is read as numbers (said in one line), the modes come from the 16x16 grid (said), and a
    zero boundary passes ends at the data's noise (1% of the field) but refuses ends well above it, naming the
    measured figure and the flag."""
    _darcy_pt(tmp_path / "train.pt", 24, 0, 0.01)
    out = tmp_path / "run"
    args = ["train", "--train", str(tmp_path / "train.pt"), "--steps", "2", "--out", str(out), "--no-progress"]
    assert main([*args, "--boundary", "zero", "--width", "8", "--hidden", "16", "--depth", "1"]) == 0
    said = capsys.readouterr().out
    assert "note: " in said and "key 'x': booleans, read as 0 and 1" in said
    assert "modes 14: the most a 16x16 grid determines" in said  # 14 + 2 (the factor 1 - t²) = 16 samples
    assert "held-out (16x16)" in said  # no --test: the last tenth
    model = training.load(out)
    assert model.modes == 14
    # ends at 20% of the field's rms are no noise: refused, with the figure and the flag
    d = sample("piecewise", 8, 16, 1)
    y = d.u.numpy() + 0.2 * np.sqrt((d.u.numpy() ** 2).mean())
    torch.save({"x": d.a, "y": torch.from_numpy(y)}, tmp_path / "offset.pt")
    bad = ["train", "--train", str(tmp_path / "offset.pt"), "--boundary", "zero", "--out", str(tmp_path / "r")]
    assert main(bad) == 2
    err = _one_line(capsys)
    ends = np.sqrt((y[:, 0] ** 2).mean() / (y**2).mean())  # the first end's rms over the field's, by numpy
    assert f"first {ends:.1e}" in err and "--zero-tolerance" in err


def test_the_fno_papers_mat_trains_and_predict_writes_a_mat_equal_to_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scipy.io import savemat

    a, u = _sines(30, 6, 0)  # six samples per axis: fewer than the tiny preset's eight modes
    savemat(tmp_path / "burgers.mat", {"a": a, "u": u})
    out = tmp_path / "run"
    assert main(["train", "--train", str(tmp_path / "burgers.mat"), "--preset", "tiny", "--steps", "3",
                 "--out", str(out), "--no-progress"]) == 0  # fmt: skip
    assert "modes 6: the most a 6 grid determines" in capsys.readouterr().out
    savemat(tmp_path / "new.mat", {"a": _sines(4, 11, 1)[0]})
    assert main(["predict", str(out), str(tmp_path / "new.mat"), "-o", str(tmp_path / "pred.mat")]) == 0
    model = training.load(out)
    expected = predict(model, torch.from_numpy(_sines(4, 11, 1)[0]))[..., 0].numpy()
    np.testing.assert_array_equal(read(tmp_path / "pred.mat", ["u"])["u"], expected)
    # at coordinates asked for: the tensor grid, with the coordinates beside the outputs
    target = tmp_path / "at.npz"
    assert main(["predict", str(out), str(tmp_path / "new.mat"), "-o", str(target), "--at", "0:1:7"]) == 0
    x = torch.linspace(0, 1, 7, dtype=torch.float64)
    got = read(target, ["u", "x-coordinate"])
    np.testing.assert_array_equal(got["x-coordinate"], x.numpy())
    np.testing.assert_array_equal(got["u"], predict(model, torch.from_numpy(_sines(4, 11, 1)[0]), at=(x,))[..., 0])
    # inputs checked as training checks them: a 2-D file to a 1-D model
    np.savez(tmp_path / "square.npz", a=np.ones((3, 9, 9)))
    assert main(["predict", str(out), str(tmp_path / "square.npz")]) == 2
    assert "wrong number of grid axes" in _one_line(capsys)


def test_refusals_are_one_line_naming_the_key_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.save({"x": np.zeros((4, 8)), "y": torch.zeros(4, 8)}, tmp_path / "pickled.pt")
    assert main(["train", "--train", str(tmp_path / "pickled.pt"), "--out", str(tmp_path / "r")]) == 2
    err = _one_line(capsys)
    assert "key 'x' holds a pickled numpy array" in err and "torch.as_tensor" in err
    # a 2-D test file beside a 1-D training file: the grid's axes, not its layout
    a, u = _sines(20, 16, 0)
    np.savez(tmp_path / "line.npz", a=a, u=u)
    np.savez(tmp_path / "square.npz", a=np.ones((4, 16, 16)), u=np.ones((4, 16, 16)))
    args = ["train", "--train", str(tmp_path / "line.npz"), "--test", str(tmp_path / "square.npz")]
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    assert "wrong number of grid axes" in _one_line(capsys)
    # options before files: a damaged training file is not read when an option is wrong
    (tmp_path / "damaged.npz").write_bytes(b"PK\x03\x04 not really")
    for option, value in (("--time", "tenmin"), ("--zero-tolerance", "2"), ("--budget", "3000")):
        assert main(["train", "--train", str(tmp_path / "damaged.npz"), option, value]) == 2
        err = _one_line(capsys)
        assert option in err and "damaged" not in err, err
    assert main(["train", "--train", str(tmp_path / "line.npz"), "--test", str(tmp_path / "absent.npz")]) == 2
    assert "absent.npz: no such file" in _one_line(capsys)  # every file found before any is read


def test_inspect_reports_the_evidence_for_each_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An HDF5 file as the large benchmark collections store one: the data and 1-D coordinate datasets (cell centres
    on [0, 1]); the report gives each layout's extent for them and the ends against zero, checked against numpy."""
    h5py = pytest.importorskip("h5py")
    p = 32
    x = (np.arange(p) + 0.5) / p
    u = np.sin(np.pi * x)[None, :] * np.arange(1, 5)[:, None]
    with h5py.File(tmp_path / "data.h5", "w") as f:
        f["u"] = u
        f["a"] = u**2
        f["x-coordinate"] = x.astype(np.float32)
    assert main(["inspect", str(tmp_path / "data.h5")]) == 0
    said = capsys.readouterr().out
    assert "inputs: key 'a'" in said and "outputs: key 'u'" in said
    assert "centres on [0, 1]" in said and "nodes on [0.015625, 0.984375]" in said
    assert "lobatto" not in said and "chebyshev" not in said
    first = np.sqrt((u[:, 0] ** 2).mean() / (u**2).mean())
    assert f"first {first:.2e}" in said


def test_coordinates_stored_in_an_hdf5_file_give_the_layout_and_extent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cell centres on [0, 2] stored as ``x-coordinate``: trained with the file name alone as centres on [0, 2]; a
    declared layout they are not the points of is refused in one line naming the candidates."""
    h5py = pytest.importorskip("h5py")
    p = 16
    x = 2 * (np.arange(p) + 0.5) / p
    a, u = _sines(24, p, 0)
    with h5py.File(tmp_path / "data.h5", "w") as f:
        f["a"], f["u"], f["x-coordinate"] = a, u, x
    out = tmp_path / "run"
    args = ["train", "--train", str(tmp_path / "data.h5"), "--out", str(out), "--no-progress"]
    assert main([*args, "--preset", "tiny", "--steps", "2"]) == 0
    assert "axis x: layout centres on [0, 2], from the coordinates in key 'x-coordinate'" in capsys.readouterr().out
    (axis,) = training.load(out).axes
    assert (axis.layout.name, axis.lo, axis.hi) == ("centres", 0.0, 2.0)
    assert main([*args, "--layout", "lobatto"]) == 2
    err = _one_line(capsys)
    assert "centres on [0, 2]" in err and "not of layout lobatto" in err
