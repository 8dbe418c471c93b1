"""Operator data read as streams (:mod:`operators.streams`), each against the in-memory route or numpy.

* every format's rows equal numpy's (or torch's) array, in any order, in the file's dtype;
* a stream's pairs equal :func:`operators.dataset.from_file`'s samples, channels last or first;
* the batches: every sample once per epoch, a function of (seed, step), the ranks' slices make the global batch,
  and worker processes read what this one reads;
* one streaming pass gives the moments torch computes on the whole, whatever the block size, and raises what
  :func:`operators.dataset.check` raises, in the same words;
* evaluation per sample equals the metric on the whole.
"""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.io
import torch

from operators.dataset import from_file, samples
from operators.files import DataError
from operators.layout import Axis
from operators.streams import (
    Evaluation,
    GlobalBatches,
    global_batch,
    held_out,
    loader,
    open_pairs,
    open_rows,
    per_sample,
    summarise,
)
from operators.streams.batches import Orders
from operators.streams.statistics import Blocks, Ends, Moments, block_rows

MiB = 2**20
RNG = np.random.default_rng(0)
A = RNG.standard_normal((23, 6, 5)).astype(np.float32)
ORDER = np.array([5, 3, 4, 17, 18, 19, 3, 0, 22])


def _files(d: Path) -> list[tuple[Path, str, np.ndarray]]:
    np.save(d / "a.npy", A)
    np.save(d / "big.npy", A.astype(">f8"))
    np.save(d / "fortran.npy", np.asfortranarray(A))
    np.savez(d / "a.npz", x=A, y=2 * A)
    np.savez_compressed(d / "c.npz", x=A)
    torch.save(
        {"x": torch.from_numpy(A), "v": torch.from_numpy(A)[3:], "i": torch.arange(23 * 4).view(23, 4)}, d / "a.pt"
    )
    with h5py.File(d / "a.h5", "w") as f:
        f.create_dataset("g/x", data=A, chunks=(4, 6, 5), compression="gzip")
        f.create_dataset("flat", data=A)
    with h5py.File(d / "v73.mat", "w", userblock_size=512) as f:  # MATLAB v7.3: HDF5, the axes reversed
        f.create_dataset("x", data=A.T)
    scipy.io.savemat(d / "v5.mat", {"x": A})
    return [
        (d / "a.npy", "array", A),
        (d / "big.npy", "array", A.astype(np.float64)),
        (d / "fortran.npy", "array", A),
        (d / "a.npz", "y", 2 * A),
        (d / "c.npz", "x", A),
        (d / "a.pt", "x", A),
        (d / "a.pt", "v", A[3:]),
        (d / "a.pt", "i", np.arange(23 * 4).reshape(23, 4)),
        (d / "a.h5", "g/x", A),
        (d / "a.h5", "flat", A),
        (d / "v73.mat", "x", A),
        (d / "v5.mat", "x", A),
    ]


def test_rows_of_every_format_equal_the_array_in_its_dtype(tmp_path: Path) -> None:
    for path, key, want in _files(tmp_path):
        rows = open_rows(path, key, MiB)
        index = ORDER[ORDER < len(want)]
        got = rows.read(index)
        assert rows.shape == want.shape, (path, key)
        assert got.dtype == torch.from_numpy(want).dtype, (path, key)
        np.testing.assert_array_equal(got.numpy(), want[index], err_msg=f"{path} {key}")
    # which reader: by rows where the values lie in order, whole where they cannot be read alone
    kinds = {p.name + ":" + k: type(open_rows(p, k, MiB)).__name__ for p, k, _ in _files(tmp_path)}
    assert kinds["a.npz:y"] == kinds["a.pt:v"] == kinds["big.npy:array"] == "FlatRows"
    assert kinds["c.npz:x"] == kinds["fortran.npy:array"] == kinds["v5.mat:x"] == "MemoryRows"
    assert kinds["v73.mat:x"] == "HDF5Rows" and open_rows(tmp_path / "a.h5", "g/x", MiB).block == 4


def test_a_torch_only_dtype_stays_itself(tmp_path: Path) -> None:
    t = torch.from_numpy(A).to(torch.bfloat16)
    torch.save({"x": t}, tmp_path / "b.pt")
    rows = open_rows(tmp_path / "b.pt", "x", MiB)
    assert rows.dtype == torch.bfloat16 and torch.equal(rows.read(ORDER), t[torch.from_numpy(ORDER)])


def test_what_cannot_stream_past_the_budget_is_one_line(tmp_path: Path) -> None:
    _files(tmp_path)
    for name, words in (("c.npz", "compressed"), ("fortran.npy", "Fortran"), ("v5.mat", "MATLAB v5")):
        key = "array" if name.endswith(".npy") else "x"
        with pytest.raises(DataError, match=rf"{name}, key '{key}': .*{words}.*over the memory budget.*; .*") as e:
            open_rows(tmp_path / name, key, 1000)
        assert "\n" not in str(e.value)
    whole = tmp_path / "a.npy"
    (tmp_path / "cut.npy").write_bytes(whole.read_bytes()[:-7])
    with pytest.raises(DataError, match=r"cut.npy.*(truncated|greater than file size)"):  # files' check, or ours
        open_rows(tmp_path / "cut.npy", "array", MiB)
    np.save(tmp_path / "c.npy", A.astype(np.complex64))
    with pytest.raises(DataError, match=r"dtype complex64, expected real numbers"):
        open_rows(tmp_path / "c.npy", "array", MiB)


@pytest.mark.parametrize("channels", ["last", "first"])
@pytest.mark.parametrize("suffix", [".npz", ".h5", ".pt"])
def test_a_stream_holds_the_samples_from_file_reads(tmp_path: Path, channels: str, suffix: str) -> None:
    x = RNG.standard_normal((12, 2, 9, 7)).astype(np.float32)  # channels first: (N, C, *grid)
    y = RNG.standard_normal((12, 9, 7)).astype(np.float64)
    x = x if channels == "first" else np.moveaxis(x, 1, -1).copy()
    path = tmp_path / f"d{suffix}"
    if suffix == ".npz":
        np.savez(path, a=x, u=y)
    elif suffix == ".h5":
        with h5py.File(path, "w") as f:
            f["a"], f["u"] = x, y
    else:
        torch.save({"a": torch.from_numpy(x), "u": torch.from_numpy(y)}, path)
    axes = (Axis(), Axis("periodic"))
    ref = from_file(path, axes, channels=channels)  # type: ignore[arg-type]
    stream = open_pairs(path, axes, channels=channels, memory=MiB)  # type: ignore[arg-type]
    assert (len(stream), stream.grid, stream.channels, stream.keys) == (12, (9, 7), (2, 1), ("a", "u"))
    xs, ys = stream.read(np.arange(12))
    assert (xs.dtype, ys.dtype) == (torch.float32, torch.float64)  # the file's own
    torch.testing.assert_close(xs.double(), ref.inputs, rtol=0, atol=0)
    torch.testing.assert_close(ys, ref.outputs, rtol=0, atol=0)
    x3, y3 = stream[3]
    torch.testing.assert_close(x3.double(), ref.inputs[3], rtol=0, atol=0)
    torch.testing.assert_close(y3, ref.outputs[3], rtol=0, atol=0)
    train, tenth = held_out(stream)
    assert (len(train), len(tenth), tenth.rows([0]).tolist()) == (11, 1, [11])


def test_opening_checks_the_shapes_from_the_headers(tmp_path: Path) -> None:
    np.savez(tmp_path / "n.npz", x=A, y=A[:5])
    with pytest.raises(DataError, match=r"23 input samples \(key 'x'\) but 5 outputs \(key 'y'\)"):
        open_pairs(tmp_path / "n.npz", memory=MiB)
    np.savez(tmp_path / "g.npz", x=A, y=A[:, :4])
    with pytest.raises(DataError, match=r"inputs on a grid of \(6, 5\) .* outputs on \(4, 5\)"):
        open_pairs(tmp_path / "g.npz", memory=MiB)
    np.savez(tmp_path / "one.npz", x=A[:, :1], y=A[:, :1])
    with pytest.raises(DataError, match=r"axis x has 1 sample\(s\), too few for layout nodes"):
        open_pairs(tmp_path / "one.npz", memory=MiB)
    np.savez_compressed(tmp_path / "z.npz", x=A, y=A)
    with pytest.raises(DataError, match=r"z.npz, key 'y': is compressed .* over the memory budget of 9.54e-05 MiB"):
        open_pairs(tmp_path / "z.npz", memory=A.nbytes + 100)


# ---- batches ----------------------------------------------------------------------------------------------


def test_every_sample_once_an_epoch_and_a_batch_is_a_function_of_seed_and_step() -> None:
    n, size = 10, 4
    seq = np.concatenate([global_batch(Orders(7, n), s, size) for s in range(15)])  # 60 = 6 epochs
    for e in range(6):
        assert sorted(seq[e * n : (e + 1) * n].tolist()) == list(range(n))
    assert not np.array_equal(seq[:n], seq[n : 2 * n])  # each epoch its own order
    assert np.array_equal(global_batch(Orders(7, n), 9, size), seq[36:40])  # a fresh sampler, straight to step 9
    assert not np.array_equal(global_batch(Orders(8, n), 0, size), seq[:4])


def test_ranks_read_their_slices_of_the_same_global_batch() -> None:
    one = list(GlobalBatches(17, 6, seed=3, stop=8))
    parts = [list(GlobalBatches(17, 6, seed=3, rank=r, world=3, stop=8)) for r in range(3)]
    for s in range(8):
        assert [i for p in parts for i in p[s]] == one[s]
    resumed = list(GlobalBatches(17, 6, seed=3, start=5, stop=8))
    assert resumed == one[5:]
    with pytest.raises(ValueError, match=re.escape("world | size")):
        GlobalBatches(17, 5, seed=3, world=2)


def test_workers_read_what_this_process_reads(tmp_path: Path) -> None:
    x = RNG.standard_normal((40, 16)).astype(np.float32)
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(8, 16))
        f["y"] = 3 * x
    stream = open_pairs(tmp_path / "d.h5", memory=MiB)
    stream.read([0])  # a file opened in this process before the workers fork: each opens its own
    seen = []
    for workers in (0, 2):
        batches = loader(stream, GlobalBatches(40, 8, seed=1, stop=12), 8, memory=MiB, workers=workers)
        seen.append([(bx.clone(), by.clone()) for bx, by in batches])
    for (a, b), (c, d) in zip(*seen, strict=True):
        assert torch.equal(a, c) and torch.equal(b, d)
    assert torch.equal(seen[0][0][1], 3 * seen[0][0][0].squeeze(-1).unsqueeze(-1))


def test_the_batches_in_flight_fit_the_budget(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=A, y=A)
    stream = open_pairs(tmp_path / "d.npz", memory=MiB)
    row = stream.sample_bytes
    fewer = loader(stream, GlobalBatches(23, 4, seed=0), 4, memory=4 * row * 4, workers=2, prefetch=2)
    assert fewer.num_workers * (fewer.prefetch_factor or 1) + 2 <= 16
    with pytest.raises(DataError, match=r"a batch of 4 samples .* over the memory budget .*smaller batch"):
        loader(stream, GlobalBatches(23, 4, seed=0), 4, memory=4 * row, workers=2)


# ---- one streaming pass -----------------------------------------------------------------------------------


def test_moments_merge_to_the_whole() -> None:
    v = torch.from_numpy(RNG.standard_normal((101, 3)) * [1.0, 1e3, 1e-3] + [5.0, -1e4, 0.0])
    whole = Moments.of(v)
    merged = Moments.of(v[:7]) + Moments.of(v[7:60]) + Moments.of(v[60:]) + Moments.of(v[:0])
    torch.testing.assert_close(merged.mean, v.mean(0), rtol=1e-14, atol=0)
    torch.testing.assert_close(merged.std, v.std(0), rtol=1e-13, atol=0)
    torch.testing.assert_close(merged.rms(), v.pow(2).mean(0).sqrt(), rtol=1e-13, atol=0)
    torch.testing.assert_close(merged.m2, whole.m2, rtol=1e-12, atol=0)


def test_moments_travel_between_processes_as_numbers() -> None:
    """A loader's worker sends its block's moments to the main process: as tensors they would go through shared
    memory, whose bookkeeping grew each worker by about 15 MB a block (1.5 GB over a 35 GB file)."""
    m = Moments.of(torch.from_numpy(RNG.standard_normal((9, 2))))
    rebuild, fields = m.__reduce__()
    assert not any(isinstance(f, torch.Tensor) for f in fields)
    again = rebuild(*fields)
    assert again.count == 9 and torch.equal(again.mean, m.mean) and torch.equal(again.m2, m.m2)


@pytest.mark.parametrize("memory", [3000, 20000, MiB])
def test_one_pass_gives_the_whole_data_statistics(tmp_path: Path, memory: int) -> None:
    x = np.exp(RNG.standard_normal((37, 8, 6, 2))).astype(np.float32)
    y = RNG.standard_normal((37, 8, 6)) + 0.3
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(5, 8, 6, 2))
        f["y"] = y
    stream = open_pairs(tmp_path / "d.h5", memory=MiB)
    assert block_rows(stream, memory) < 37 or memory == MiB
    s = summarise(stream, memory=memory, log_input=True)
    logx = torch.from_numpy(np.log(x.astype(np.float64))).reshape(-1, 2)
    yy = torch.from_numpy(y).reshape(-1, 1)
    assert s.samples == 37 and s.inputs.count == 37 * 48
    torch.testing.assert_close(s.inputs.mean, logx.mean(0), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(s.inputs.std, logx.std(0), rtol=1e-12, atol=0)
    torch.testing.assert_close(s.outputs.mean, yy.mean(0), rtol=1e-12, atol=0)
    torch.testing.assert_close(s.outputs.rms(), yy.pow(2).mean(0).sqrt(), rtol=1e-12, atol=0)
    s.check(stream, log_input=True)
    # blocks start where the file's chunks do
    blocks = Blocks(stream.subset(3, 37), 10)
    assert blocks.starts == [0, 2, 12, 22, 32] and blocks.ends[-1] == 34  # file rows 5, 15, ...: chunk starts


def test_ranks_and_workers_summaries_add_up_to_the_whole(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=A, y=A**2)
    stream = open_pairs(tmp_path / "d.npz", memory=MiB)
    whole = summarise(stream, memory=4000)
    halves = summarise(stream, memory=4000, rank=0, world=2) + summarise(stream, memory=4000, rank=1, world=2)
    forked = summarise(stream, memory=8000, workers=2)
    for s in (halves, forked):
        assert s.samples == whole.samples == 23
        torch.testing.assert_close(s.outputs.mean, whole.outputs.mean, rtol=1e-13, atol=0)
        torch.testing.assert_close(s.inputs.m2, whole.inputs.m2, rtol=1e-12, atol=0)
        assert s.ends == whole.ends or all(
            abs(a.total - b.total) <= 1e-12 * b.total for a, b in zip(s.ends[1], whole.ends[1], strict=True)
        )


def _verdicts(tmp_path: Path, x: np.ndarray, y: np.ndarray, axes: tuple[Axis, ...], log_input: bool) -> list[str]:
    """What the in-memory check and the streamed one say of the same file (``"ok"`` where nothing)."""
    path = tmp_path / "v.npz"
    np.savez(path, x=x, y=y)
    said = []
    try:
        samples(x, y, axes, log_input=log_input, where=str(path), keys=("x", "y"))
        said.append("ok")
    except DataError as e:
        said.append(str(e))
    stream = open_pairs(path, axes, memory=MiB)
    try:
        summarise(stream, memory=2000, log_input=log_input).check(stream, log_input=log_input)
        said.append("ok")
    except DataError as e:
        said.append(str(e))
    return said


def test_the_streamed_checks_say_what_the_in_memory_ones_say(tmp_path: Path) -> None:
    n, p = 9, 16
    t = np.arange(p) / p
    smooth = np.sin(2 * np.pi * (t[None, :] + RNG.random((n, 1))))  # periodic, i/P
    bad = smooth.copy()
    bad[4, 3] = np.nan
    bad[6, 1] = np.inf
    repeated = np.concatenate([smooth, smooth[:, :1]], axis=1)  # the end stored twice
    nodes = np.linspace(0, 1, p)
    zero_ends = np.sin(np.pi * nodes)[None, :] * RNG.random((n, 1))
    open_end = np.sin(np.pi * nodes * (p - 1) / p)[None, :] * RNG.random((n, 1))  # i/P with u(1) absent
    periodic, zero = (Axis("periodic"),), (Axis("nodes", boundary="zero"),)
    cases = [
        (smooth, smooth, periodic, False),
        (smooth, bad, periodic, False),
        (repeated, repeated, periodic, False),
        (1 + smooth, zero_ends, zero, True),
        (smooth, zero_ends, zero, True),  # inputs <= 0 under log
        (1 + smooth, open_end, zero, False),
        (1 + smooth, 5 + open_end, zero, False),
        (smooth, np.where(np.arange(n)[:, None] == 3, 1e-17, 1.0) * smooth, periodic, False),  # a sample too small
        (1e17 * smooth, smooth, periodic, False),  # inputs too large
        (smooth, 0 * np.arange(n)[:, None] * smooth, periodic, False),  # outputs zero from sample 1 on
    ]
    for x, y, axes, log in cases:
        memory, streamed = _verdicts(tmp_path, x, y, axes, log)
        streamed = re.sub(r", in sample \d+\)", ")", streamed)  # the stream also names the sample
        assert streamed == memory
    assert _verdicts(tmp_path, smooth, bad, periodic, False)[1].endswith(
        "2 values are NaN or infinite (the first in sample 4); remove those samples or fix them"
    )


def test_an_output_zero_everywhere_is_named(tmp_path: Path) -> None:
    y = RNG.standard_normal((6, 10))
    y[4] = 0.0
    np.savez(tmp_path / "z.npz", x=y + 3, y=y)
    stream = open_pairs(tmp_path / "z.npz", memory=MiB)
    with pytest.raises(DataError, match=r"key 'y': sample 4 has outputs all zero: its relative error is 0/0"):
        summarise(stream, memory=MiB).check(stream)


def test_the_witness_keeps_the_sums() -> None:
    for _ in range(20):
        v = torch.from_numpy(RNG.standard_normal((3, int(RNG.integers(1, 7)), 2)) * RNG.random() ** 3)
        e = Ends.of(v, 1)
        w = torch.from_numpy(e.witness())
        f = Ends.of(w[..., None], 1)  # the witness has 2 of the data's 6 values per slice
        s = e.edge / f.edge
        for a, b in ((f.total, e.total), (f.first, e.first), (f.last, e.last), (f.difference, e.difference)):
            assert abs(a * s - b) <= 1e-12 * (e.total + 1e-300)


# ---- evaluation -------------------------------------------------------------------------------------------


def test_evaluation_per_sample_equals_the_metric_on_the_whole(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=A, y=A + 1)
    stream = open_pairs(tmp_path / "d.npz", memory=MiB)

    def metric(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (y.double() - x.double()).flatten(1).norm(dim=1) / y.double().flatten(1).norm(dim=1)

    x, y = stream.read(np.arange(23))
    want = metric(x, y)
    torch.testing.assert_close(per_sample(stream, metric, 5, memory=MiB), want, rtol=0, atol=0)
    parts = [Evaluation(stream, 4, memory=MiB, rank=r, world=2) for r in range(2)]
    got = torch.empty(23, dtype=torch.float64)
    for part in parts:
        got[torch.from_numpy(part.positions())] = part(metric)
    assert sorted(np.concatenate([p.positions() for p in parts]).tolist()) == list(range(23))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
