"""Training on streams (:mod:`training.streamed`): resumable batches, bf16 only where it belongs, and torchrun.

* a run stopped and resumed takes the steps of an uninterrupted one, bit for bit, with or without loader workers;
* ``amp`` is refused on the CPU in one line; its construction (the forward pass in bf16, the loss in the model's
  dtype) is checked with the CPU's bf16 autocast standing in for CUDA's;
* two processes (torchrun, gloo) with half the batch each take the loss curve of one process with the whole batch,
  and a checkpoint of one process resumes under two (``benchmarks/torchrun_speed.py --worker``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from operators import heat
from operators.layout import Axis
from operators.streams import open_pairs
from training import UserError, fit
from training.checkpoint import StateError
from training.streamed import Batches, StreamTask

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def _stream(tmp_path: Path) -> Any:
    heat.write(tmp_path / "h.npz", 40, 16, 1, seed=2, rows=16)
    return open_pairs(tmp_path / "h.npz", (Axis("periodic"),), input_key="u0", output_key="u", memory=MiB)


def _mse(forward: Any, x: Tensor, y: Tensor) -> Tensor:
    return (forward(x.flatten(1)) - y.flatten(1)).pow(2).mean()


def _task(stream: Any, workers: int = 0, amp: bool = False, dtype: torch.dtype = torch.float64) -> StreamTask:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16)).to(dtype)
    batches = Batches(stream, 6, seed=5, device=torch.device("cpu"), memory=MiB, workers=workers)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, 1e-2, total_steps=8)
    return StreamTask(model, _mse, batches, optimiser, schedule, amp=amp)


def _fit(task: StreamTask, out: Path | None, stop_after: int | None = None) -> Any:
    try:
        return fit(task, config={}, steps=8, out=out, eval_every=2, checkpoint_every=4, progress=False,
                   stop_after=stop_after)  # fmt: skip
    finally:
        task.close()


def test_a_resumed_streamed_run_takes_the_steps_of_an_uninterrupted_one(tmp_path: Path) -> None:
    stream = _stream(tmp_path)
    whole = _task(stream)
    run = _fit(whole, None)
    resumed = _task(stream, workers=2)
    _fit(resumed, tmp_path / "run", stop_after=3)
    assert resumed.batches.step == 3
    again = _task(stream, workers=2)
    _fit(again, tmp_path / "run")
    assert again.batches.step == 8
    for a, b in zip(whole.model.state_dict().values(), again.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert [r["loss"] for r in run.history][-1] < run.history[0]["loss"]
    fewer = Batches(stream, 4, 5, device=torch.device("cpu"), memory=MiB)
    other = StreamTask(again.model, _mse, fewer, again.optimiser, again.schedule)
    with pytest.raises(StateError, match=r"task.batches: drawn with seed 5 and batch 6, not 5 and 4"):
        other.load_state_dict(again.state_dict())


def test_bf16_is_refused_on_the_cpu_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match=r"^--amp \(bf16 autocast\) needs a CUDA device, not cpu; drop --amp on the CPU$"
    ):
        _task(_stream(tmp_path), amp=True)


def test_the_bf16_forward_returns_to_the_model_dtype(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA's bf16 autocast played by the CPU's: the network runs in bf16, the loss and the update do not."""
    from training import streamed

    task = _task(_stream(tmp_path), dtype=torch.float32)  # autocast lowers float32 (float64 it leaves alone)
    task.amp = True
    seen: list[torch.dtype] = []
    task.model[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))

    def cpu_bf16(amp: bool, device: torch.device) -> contextlib.AbstractContextManager[Any]:
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp)

    monkeypatch.setattr(streamed, "autocast", cpu_bf16)
    x, y = task.batches.next()  # float32, the file's
    exact = _mse(task.model, x, y)
    half = _mse(task.forward, x, y)
    assert seen[-1] == torch.bfloat16 and half.dtype == torch.float32
    assert abs(float((half - exact).detach())) <= 3e-2 * float(exact.detach())  # bf16: 8 bits of mantissa
    loss = task.train_step()
    assert loss.dtype == torch.float32 and all(p.dtype == torch.float32 for p in task.model.parameters())
    assert all(torch.isfinite(p).all() for p in task.model.parameters())


def _worker(out: Path, data: Path, processes: int, *extra: str) -> dict[str, Any]:
    argv = ["--worker", "--data", str(data), "--out", str(out), "--steps", "4", "--batch", "8", "--warm", "0"]
    argv += ["--dtype", "float64", "--every", "1", "--workers", "0", *extra]
    head = [sys.executable]
    if processes > 1:
        head += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    script = str(ROOT / "benchmarks" / "torchrun_speed.py")
    done = subprocess.run([*head, script, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads((out / "speed.json").read_text())
    return report


def _weights(out: Path) -> dict[str, Tensor]:
    blob = torch.load(out / "checkpoint.pt", weights_only=True)
    return blob["task"]["model"]  # type: ignore[no-any-return]


def _heat(tmp_path: Path) -> Path:
    data = tmp_path / "heat.npz"
    heat.write(data, 48, 16, 1, seed=3)
    return data


def test_two_processes_take_the_loss_curve_of_one(tmp_path: Path) -> None:
    """The operator model on a streamed heat map, float64: 2 processes x 4 pairs = 1 process x 8, step for step
    (each rank reads only its slice of the seeded global batch; DDP averages the gradients)."""
    data = _heat(tmp_path)
    one = _worker(tmp_path / "one", data, 1)
    two = _worker(tmp_path / "two", data, 2)
    assert len(one["losses"]) == len(two["losses"]) == 4 and two["world"] == 2
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-10, atol=0)
    assert len(set(one["losses"])) == 4  # each step moved the model
    assert len(one["held_out_rel_l2"]) == 4  # 48 // 10 pairs held out: each rank evaluated its share
    np.testing.assert_allclose(two["held_out_rel_l2"], one["held_out_rel_l2"], rtol=1e-9, atol=0)
    a, b = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=1e-10, atol=1e-12, msg=k)


@pytest.mark.slow
def test_a_checkpoint_of_one_process_resumes_under_two(tmp_path: Path) -> None:
    """One process to step 2, then two to step 4: the weights of one process throughout."""
    data = _heat(tmp_path)
    one = _worker(tmp_path / "one", data, 1)
    _worker(tmp_path / "mixed", data, 1, "--stop-after", "2")
    mixed = _worker(tmp_path / "mixed", data, 2)
    np.testing.assert_allclose(mixed["losses"], one["losses"], rtol=1e-10, atol=0)
    a, c = _weights(tmp_path / "one"), _weights(tmp_path / "mixed")
    for k in a:
        torch.testing.assert_close(c[k], a[k], rtol=1e-10, atol=1e-12, msg=k)


@pytest.mark.parametrize("boundary", ["periodic", "zero"])
def test_stream_scales_are_the_in_memory_scales(tmp_path: Path, boundary: str) -> None:
    """The operator model's scales from one streaming pass's moments equal those it fits on the samples in memory
    (:meth:`models.operator.OperatorModel.fit_scales`), the outputs' mean kept at zero on a vanishing boundary."""
    from operators.streams import summarise
    from training.tasks import streamed_operator
    from training.tasks.operator.config import Config
    from training.tasks.operator.model import build
    from training.tasks.operator.shape import Shape

    heat.write(tmp_path / "h.npz", 40, 16, 1, seed=2, rows=16)
    axes = (Axis(boundary),) if boundary == "periodic" else (Axis("chebyshev", boundary="zero"),)
    stream = open_pairs(tmp_path / "h.npz", axes, input_key="u0", output_key="u", memory=MiB)
    shape = Shape(stream.axes, *stream.channels)
    config = Config(modes=8, width=8, hidden=8, reader_width=8, depth=1)
    streamed, memory = build(config, shape), build(config, shape)
    streamed_operator.fit_scales(streamed, summarise(stream, memory=MiB))
    x, y = stream.read(np.arange(len(stream)))
    memory.fit_scales(x, y)
    for name, value in memory.state_dict().items():
        if "shift" in name or "scale" in name:
            torch.testing.assert_close(streamed.state_dict()[name], value, rtol=1e-9, atol=1e-12, msg=name)
