"""Time as an axis on the command line: trajectories stepped through windows and rolled out, and an initial
condition mapped to its trajectory. The data are exact solutions solved in Fourier space (the heat equation and
advection on the unit period); the reported errors per step and over the horizon are checked against numpy's own
computation from what ``predict`` writes, and the least-squares rollout against the exact solution."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import training
from operators.files import contents, read
from operators.layout import Axis
from training.tasks.operator import predict
from training.tasks.operator.command import main
from training.tasks.operator.shape import Shape, Time
from training.tasks.operator.time_axis import TimeOptions, keys_of

TINY = ["--preset", "tiny", "--no-progress", "--layout", "periodic"]


pytestmark = pytest.mark.usefixtures("one_thread")


def _fourier(count: int, points: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random real Fourier coefficients ``(count, K)`` of modes ``k = 1..4`` (cosine and sine), and the grid."""
    rng = np.random.default_rng(seed)
    k = np.arange(1, 5)
    return rng.standard_normal((count, 4)) / k, rng.standard_normal((count, 4)) / k, np.arange(points) / points


def heat(count: int, points: int, states: int, seed: int, nu: float = 0.01, dt: float = 0.02) -> np.ndarray:
    """``u_t = ν u_xx`` on the unit period, exactly: each mode ``k`` decays as ``exp(-4π²νk²t)``;
    ``(count, states, points)`` at ``t = 0, dt, ...``."""
    a, b, x = _fourier(count, points, seed)
    k = np.arange(1, 5)
    t = dt * np.arange(states)
    decay = np.exp(-4 * np.pi**2 * nu * k[None, :] ** 2 * t[:, None])  # (T, K)
    cos, sin = np.cos(2 * np.pi * k[:, None] * x), np.sin(2 * np.pi * k[:, None] * x)  # (K, X)
    return np.einsum("nk,tk,kx->ntx", a, decay, cos) + np.einsum("nk,tk,kx->ntx", b, decay, sin)


def advection(count: int, points: int, states: int, seed: int, c: float = 0.5, dt: float = 0.05) -> np.ndarray:
    """``u_t + c u_x = 0`` on the unit period, exactly: ``u(t, x) = u0(x - ct)``, each mode's phase turned by
    ``2πk c t``; ``(count, states, points)`` at ``t = dt, 2 dt, ...`` (the initial condition is ``t = 0``)."""
    a, b, x = _fourier(count, points, seed)
    k = np.arange(1, 5)
    t = dt * np.arange(1, states + 1)
    phase = 2 * np.pi * k[None, None, :] * (x[None, :, None] - c * t[:, None, None])  # (T, X, K)
    return np.einsum("nk,txk->ntx", a, np.cos(phase)) + np.einsum("nk,txk->ntx", b, np.sin(phase))


def _relative(pred: np.ndarray, exact: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy's relative L² errors of ``(N, T, X)`` states on a periodic grid (equal weights): per state
    ``(N, T)`` and over the whole horizon ``(N,)``."""
    num, den = ((pred - exact) ** 2).sum(-1), (exact**2).sum(-1)
    return np.sqrt(num / den), np.sqrt(num.sum(1) / den.sum(1))


def _lower_median(x: np.ndarray) -> float:
    """The median as torch takes it: the lower of the two middle values of an even count."""
    return float(np.sort(x)[(len(x) - 1) // 2])


def _horizon(out: Path) -> dict[str, object]:
    report = json.loads((out / "report.json").read_text())
    (h,) = report["horizon"].values()
    assert isinstance(h, dict)
    return h


def test_trajectories_train_by_windows_and_the_reported_rollout_is_what_predict_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.savez(tmp_path / "train.npz", u=heat(40, 24, 8, 0))
    test = heat(6, 24, 8, 1)
    np.savez(tmp_path / "test.npz", u=test)
    out = tmp_path / "run"
    args = ["train", "--train", str(tmp_path / "train.npz"), "--test", str(tmp_path / "test.npz"), "--out", str(out)]
    assert main([*args, *TINY, "--steps", "30", "--time-axis", "1", "--time-window", "2", "--horizon", "5"]) == 0
    said = capsys.readouterr().out
    assert "windows of 2 state(s) to the next, rolled out 5 steps" in said and "per step:" in said
    h = _horizon(out)
    # predict from the first two states: the rollout the report scored, written with time at axis 1
    np.savez(tmp_path / "start.npz", u=test[:, :2])
    assert main(["predict", str(out), str(tmp_path / "start.npz"), "-o", str(tmp_path / "rolled.npz")]) == 0
    rolled = read(tmp_path / "rolled.npz", ["u"])["u"]
    assert rolled.shape == (6, 5, 24)
    per_step, total = _relative(rolled, test[:, 2:7])
    np.testing.assert_allclose(h["per_step"], per_step.mean(0), rtol=1e-5)
    np.testing.assert_allclose(
        [h["mean"], h["median"], h["max"]], [total.mean(), _lower_median(total), total.max()], rtol=1e-5
    )
    # the heat equation's step is linear: the least-squares map rolled out the same way is exact to rounding
    assert h["least_squares_mean"] < 1e-9
    # the model's own step from Python, once: the first predicted state
    model = training.load(out)
    x = torch.from_numpy(test[:, :2]).movedim(1, -1)  # (N, X, 2): the window as channels, oldest first
    np.testing.assert_allclose(predict(model, x)[..., 0].numpy(), rolled[:, 0], rtol=1e-5, atol=1e-6)
    # a longer rollout asked of predict, from the last two states of whole trajectories
    assert (
        main(["predict", str(out), str(tmp_path / "test.npz"), "-o", str(tmp_path / "more.npz"), "--horizon", "3"]) == 0
    )
    more = read(tmp_path / "more.npz", ["u"])["u"]
    x = torch.from_numpy(test[:, -2:]).movedim(1, -1)
    np.testing.assert_allclose(more[:, 0], predict(model, x)[..., 0].numpy(), rtol=1e-5, atol=1e-6)
    assert more.shape == (6, 3, 24)


def test_an_initial_condition_maps_to_its_trajectory_stored_with_time_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Advection: ``a`` ``(N, X)`` and its states ``u`` stored ``(N, X, T)`` (time at axis 2); no held-out file:
    the last tenth is scored."""
    u0 = advection(44, 20, 6, 0, dt=0.0)[:, 0]
    u = advection(44, 20, 6, 0)
    np.savez(tmp_path / "train.npz", a=u0, u=np.moveaxis(u, 1, 2))
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--train",
                str(tmp_path / "train.npz"),
                "--out",
                str(out),
                *TINY,
                "--steps",
                "30",
                "--time-axis",
                "2",
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert "an initial condition to its 6 states" in said and "held-out" in said
    h = _horizon(out)
    assert h["samples"] == 4 and h["steps"] == 6  # 44 - 44 // 10 trained on
    np.savez(tmp_path / "new.npz", a=u0[40:])
    assert main(["predict", str(out), str(tmp_path / "new.npz"), "-o", str(tmp_path / "pred.npz")]) == 0
    got = read(tmp_path / "pred.npz", ["u"])["u"]
    assert got.shape == (4, 20, 6)  # time where the training file kept it
    model = training.load(out)
    expected = predict(model, torch.from_numpy(u0[40:]))  # (4, 20, 6): the six states as channels
    np.testing.assert_array_equal(got, expected.numpy())
    per_step, total = _relative(np.moveaxis(got, 2, 1), u[40:])
    np.testing.assert_allclose(h["per_step"], per_step.mean(0), rtol=1e-5)
    np.testing.assert_allclose(h["mean"], total.mean(), rtol=1e-5)
    # advection is linear too: least squares from the initial condition to the states is exact to rounding
    assert h["least_squares_mean"] < 1e-9


def test_time_options_are_checked_before_any_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nothing.npz")
    assert main(["train", "--train", missing, "--time-window", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--time-window" in err and "--time-axis" in err
    assert main(["train", "--train", missing, "--time-axis", "0"]) == 2
    assert "--time-axis" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arrays", "flags", "says"),
    [
        ({"u": np.zeros((4, 6, 8))}, ["--time-axis", "3"], "--time-axis 3, but shape (4, 6, 8) has axes 1..2"),
        ({"u": np.ones((4, 3, 8))}, ["--time-axis", "1", "--time-window", "3"], "give a shorter --time-window"),
        ({"u": np.ones((8, 6, 8))}, ["--time-axis", "1", "--horizon", "9"], "give --horizon 1..5"),
        ({"a": np.ones((4, 8)), "u": np.ones((4, 8))}, ["--time-axis", "1"], "one axis more than key 'a'"),
        ({"a": np.ones((4, 8)), "u": np.ones((4, 3, 8))}, ["--time-axis", "1", "--horizon", "2"], "drop --horizon"),
        ({"v": np.ones((4, 3, 8))}, ["--time-axis", "1"], "name them with --input-key"),
    ],
)
def test_time_refusals_are_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arrays: dict[str, np.ndarray], flags: list[str], says: str
) -> None:
    np.savez(tmp_path / "f.npz", **arrays)
    assert main(["train", "--train", str(tmp_path / "f.npz"), "--out", str(tmp_path / "r"), *TINY, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err, err


def test_the_form_follows_the_keys_and_a_window_asks_for_trajectories(tmp_path: Path) -> None:
    np.savez(tmp_path / "pair.npz", a=np.ones((3, 8)), u=np.ones((3, 4, 8)))
    found = contents(tmp_path / "pair.npz")
    assert keys_of(found, tmp_path, TimeOptions(1), None, None).form == "initial"
    named = keys_of(found, tmp_path, TimeOptions(1, window=1), "u", None)
    assert (named.form, named.states) == ("trajectory", "u")


def test_a_shape_records_time_and_reads_back_what_it_wrote() -> None:
    t = Time("trajectory", 1, 3, 10, 2)
    assert Time.from_record(t.record()) == t
    assert t.channels(99) == (6, 2) and Time("initial", 2, 0, 5, 3).channels(1) == (1, 15)
    shape = Shape((Axis("periodic"),), 6, 2, t)
    assert Shape.from_record(shape.record()) == shape
    assert "time" not in Shape((Axis("periodic"),), 6, 2).record()  # records without time read as before
    with pytest.raises(ValueError, match="does not give channels"):
        Shape.from_record({**shape.record(), "in_channels": 5})
    with pytest.raises(ValueError, match="window"):
        Time("initial", 1, 2, 5, 1)
    with pytest.raises(ValueError, match="form"):
        Time.from_record({**t.record(), "form": "loop"})


def test_a_pdebench_style_file_is_inspected_then_trained_with_the_flag_inspect_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PDEBench's one-dimensional layout: ``tensor`` ``(N, T, X)`` float32, ``x-coordinate`` at the cells' centres and
    ``t-coordinate`` with one more entry than the states (their edges), in HDF5."""
    h5py = pytest.importorskip("h5py")
    points, states = 16, 6
    with h5py.File(tmp_path / "burgers.hdf5", "w") as f:
        f["tensor"] = heat(30, points, states, 0).astype(np.float32)
        f["x-coordinate"] = ((np.arange(points) + 0.5) / points).astype(np.float32)
        f["t-coordinate"] = (0.02 * np.arange(states + 1)).astype(np.float32)
    assert main(["inspect", str(tmp_path / "burgers.hdf5")]) == 0
    said = capsys.readouterr().out
    assert "trajectories: key 'tensor'" in said and f"axis 1 ({states} states) of key 'tensor': --time-axis 1" in said
    assert "grid: 1 axis from key 'tensor''s shape (30, 16)" in said
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--train",
                str(tmp_path / "burgers.hdf5"),
                "--time-axis",
                "1",
                "--out",
                str(out),
                "--preset",
                "tiny",
                "--steps",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert "layout centres on [0, 1], from the coordinates in key 'x-coordinate'" in said
    assert _horizon(out)["steps"] == states - 1 and _horizon(out)["samples"] == 3


def test_the_time_window_leaves_the_attention_window_alone(tmp_path: Path) -> None:
    """``--time-window`` is the states a step reads; the config's ``window`` (the attention's) keeps its value."""
    np.savez(tmp_path / "train.npz", u=heat(20, 16, 6, 0))
    out = tmp_path / "run"
    args = ["train", "--train", str(tmp_path / "train.npz"), "--out", str(out), *TINY, "--steps", "2"]
    assert main([*args, "--time-axis", "1", "--time-window", "3"]) == 0
    model = training.load(out)
    assert model.in_channels == 3
    assert json.loads((out / "report.json").read_text())["config"]["window"] == 0.0
