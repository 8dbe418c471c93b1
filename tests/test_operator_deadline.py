"""The FNO peer of ``python -m examples.operator --baseline fno``: on the thread count given, on a deadline of its
own, with progress, after the model's report is on disk.

The threads are read inside the peer's own training steps (``torch.get_num_threads()``), and its deadline is
driven by a simulated clock (no test here is timed); an interrupt is raised from inside its steps, as Ctrl-C
would raise it there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from examples.operator.__main__ import main
from operators.dataset import samples
from tests.operator_cases import antiderivative, poisson
from training.deadline import Clock
from training.tasks.operator import PRESETS

pytest.importorskip("neuralop")
from training.tasks.operator import fno

TINY = PRESETS["tiny"]


class Time:
    """Simulated seconds."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_peer_trains_on_the_threads_given_and_an_interrupt_keeps_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, u = antiderivative("nodes").sample(40, 12, 0)
    np.savez(tmp_path / "train.npz", a=a, u=u)
    seen: list[int] = []
    step = fno.FNOTask.train_step

    def counted(self: fno.FNOTask) -> torch.Tensor:
        seen.append(torch.get_num_threads())
        if len(seen) == 3:
            raise KeyboardInterrupt  # Ctrl-C while the peer trains
        return step(self)

    monkeypatch.setattr(fno.FNOTask, "train_step", counted)
    torch.set_num_threads(2)
    out = tmp_path / "run"
    args = ["--train", str(tmp_path / "train.npz"), "--preset", "tiny", "--config", "modes=6", "--steps", "4"]
    assert main([*args, "--threads", "1", "--baseline", "fno", "--out", str(out)]) == 130
    assert seen == [1] * 3 and torch.get_num_threads() == 2  # the count given, inside the peer; restored after
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 4 and "fno" not in report  # the model's report, written before the peer trained
    err = capsys.readouterr().err
    assert "train: step 0/4 on FNO peer, 1 thread (--threads)" in err  # the peer's progress, as the model's


def test_the_peer_trains_to_a_deadline_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    case = poisson("nodes")
    tr = samples(*case.sample(24, 17, 0), case.axes)
    te = samples(*case.sample(6, 17, 1), case.axes)
    time = Time()
    step = fno.FNOTask.train_step
    lrs: list[float] = []

    def timed(self: fno.FNOTask) -> torch.Tensor:
        lrs.append(self.optimiser.param_groups[0]["lr"])
        time.t += 1.0
        return step(self)

    monkeypatch.setattr(fno.FNOTask, "train_step", timed)
    clock = Clock(40.0, time)
    peer = fno.train_fno(TINY.replace(steps=10**6), tr, {"t": te}, 20000, torch.device("cpu"), clock=clock)
    assert peer.steps == len(lrs) and 35 <= peer.steps < 40 and clock.spent <= 40.0
    assert len(peer.curve) == 8 and peer.curve[-1][0] == peer.steps  # each eighth, the last step included
    recipe = fno.DARCY
    assert lrs[0] == recipe.lr and lrs[-1] == recipe.lr * 0.5**4  # the fifth halving: at the end of the run
    # step k's rate: halved by the progress read when step k - 1 updated, (k - 1) / 40 of the time
    expect = [recipe.lr * 0.5 ** int(max(k - 1, 0) / 40 * 5) for k in range(len(lrs))]
    assert lrs == pytest.approx(expect)
