"""Runs that stop learning without a non-finite loss: a model whose predictions no longer depend on its input
(:class:`training.Collapsed`), and Adam's squared gradients overflowing under a finite loss (:class:`training.Diverged`
before anything non-finite is written). The collapse test is measured against a spread computed by hand, and the
operator task's collapse is a real one: a model with every weight zero, where only the output's biases get a gradient;
the streamed operator task watches the same way, on its stream's first pairs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from examples.operator.__main__ import main
from operators.dataset import samples
from tests.operator_cases import poisson
from training import Collapsed, Diverged, Watched, fit, load_checkpoint
from training.loop import Optimised
from training.schedule import OneCycle
from training.tasks.operator import PRESETS
from training.tasks.operator import task as operator_task
from training.tasks.operator.task import FLAT, OperatorTask, collapse

pytestmark = pytest.mark.usefixtures("one_thread")


def _spread(a: np.ndarray) -> float:
    """The root-mean-square deviation of the samples (axis 0) from their mean, written out."""
    mean = sum(a) / len(a)
    return float(np.sqrt(np.mean([(x - mean) ** 2 for x in a])))


def test_collapse_is_a_spread_below_a_millionth_of_the_data() -> None:
    gen = np.random.default_rng(0)
    exact = gen.normal(size=(8, 16, 1))
    same = np.broadcast_to(gen.normal(size=(1, 16, 1)), exact.shape)
    almost = same + 1e-3 * _spread(exact) * gen.normal(size=exact.shape)
    tiny = same + 0.1 * FLAT * _spread(exact) * gen.normal(size=exact.shape)
    t = torch.from_numpy
    assert collapse(t(exact + 1.0), t(exact)) is None
    assert collapse(t(almost), t(exact)) is None  # a thousandth of the data's spread still depends on the input
    said = collapse(t(np.ascontiguousarray(same)), t(exact))
    assert said is not None and "every one of 8 training inputs" in said
    said = collapse(t(tiny), t(exact))
    assert said is not None and f"{_spread(tiny) / _spread(exact):.1e}" in said
    assert collapse(t(exact), t(np.ones_like(exact))) is None  # outputs that are all the same: nothing to lose
    assert collapse(t(np.full_like(exact, np.nan)), t(exact)) is None  # a divergence, reported as one
    assert collapse(t(exact[:1]), t(exact[:1])) is None


class _Toy(Optimised):
    """A linear map fitted to fixed data; it reports a collapse from step ``at`` on (``None``: never)."""

    def __init__(self, at: int | None, scale: float = 1.0) -> None:
        torch.manual_seed(0)
        self.device = torch.device("cpu")
        self.model = nn.Linear(3, 2)
        self.optimiser = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        self.schedule = OneCycle(self.optimiser, 1e-2, 100, 0.1)
        self.sampler = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(16, 3), torch.randn(16, 2)
        self.at, self.scale, self.steps = at, scale, 0

    def train_step(self) -> Tensor:
        self.steps += 1
        loss = self.scale * (self.model(self.x) - self.y).pow(2).mean()
        self.optimise(loss)
        return loss.detach()

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        return {"held_out": float((self.model(self.x) - self.y).pow(2).mean())}

    def collapsed(self) -> str | None:
        return None if self.at is None or self.steps < self.at else "every prediction the same"


def _fit(task: Any, out: Path | None, steps: int = 10) -> None:
    fit(task, config={"steps": steps}, steps=steps, out=out, eval_every=2, checkpoint_every=2, progress=False)


def test_the_loop_stops_a_collapsed_run_at_the_evaluation_after_and_says_what_it_kept(tmp_path: Path) -> None:
    assert isinstance(_Toy(None), Watched)
    _fit(_Toy(None), tmp_path / "fine")  # a task that never collapses runs to the end
    assert load_checkpoint(tmp_path / "fine" / "checkpoint.pt")["step"] == 10
    with pytest.raises(Collapsed, match=r"collapsed at step 6: every prediction the same, so it has stopped") as e:
        _fit(_Toy(5), tmp_path / "run")
    assert "the last checkpoint (step 4, perhaps collapsed)" in str(e.value) and "--restart" in str(e.value)
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["step"] == 4
    with pytest.raises(Collapsed, match="nothing was saved"):
        _fit(_Toy(1), None)


def test_moments_that_overflow_under_a_finite_loss_are_a_divergence_and_never_written(tmp_path: Path) -> None:
    """A loss of about 1e30 is finite in float32; its gradient squared (1e60) is not, so Adam's second moment
    overflows to infinity while the loss and the weights stay finite."""
    task = _Toy(None, scale=1e30)
    with pytest.raises(Diverged, match=r"at step 2 \(task\.optimiser\.state\.\d\.exp_avg_sq not finite, the loss fin"):
        _fit(task, tmp_path / "run")
    assert all(bool(torch.isfinite(q).all()) for q in task.model.parameters())
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    with pytest.raises(Diverged, match="nothing was saved"):  # checked at the evaluation when nothing is saved
        _fit(_Toy(None, scale=1e30), None)


def _zeroed(build: Any) -> Any:
    def zeroed(config: Any, train: Any) -> Any:
        model = build(config, train)
        with torch.no_grad():
            for q in model.parameters():
                q.zero_()
        return model

    return zeroed


def _data(tmp_path: Path) -> Path:
    a, u = poisson("periodic").sample(64, 16, 0)
    np.savez(tmp_path / "train.npz", a=a, u=u)
    return tmp_path / "train.npz"


def test_the_operator_task_tells_a_dead_model_from_a_live_one(monkeypatch: pytest.MonkeyPatch) -> None:
    case = poisson("periodic")
    train = samples(*case.sample(64, 16, 0), case.axes)
    cfg = PRESETS["tiny"].replace(modes=6)
    assert OperatorTask(cfg, train, {}, torch.device("cpu")).collapsed() is None
    monkeypatch.setattr(operator_task, "build_model", _zeroed(operator_task.build_model))
    dead = OperatorTask(cfg, train, {}, torch.device("cpu"))
    for _ in range(20):  # only the output's biases learn: the predictions stay the same for every input
        dead.train_step()
    said = dead.collapsed()
    assert said is not None and "every one of 64 training inputs" in said


def test_a_collapsed_operator_run_is_one_line_at_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(operator_task, "build_model", _zeroed(operator_task.build_model))
    args = ["--train", str(_data(tmp_path)), "--preset", "tiny", "--config", "modes=6", "--no-progress"]
    assert main([*args, "--config", "eval_every=5", "--steps", "20", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "training collapsed at step 5" in err and "--config lr=" in err


def test_the_streamed_operator_task_watches_its_first_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from operators import heat
    from operators.layout import Axis
    from operators.streams import open_pairs
    from training.distributed import SINGLE
    from training.tasks import streamed_operator

    heat.write(tmp_path / "h.npz", 40, 16, 1, seed=2, rows=16)
    stream = open_pairs(tmp_path / "h.npz", (Axis("periodic"),), input_key="u0", output_key="u", memory=2**20)
    cfg = PRESETS["tiny"].replace(modes=6, batch=8)

    def run() -> Any:
        return streamed_operator.task(stream, cfg, memory=2**20, device=torch.device("cpu"), ranks=SINGLE, workers=0)

    live = run()
    assert isinstance(live, Watched) and live.collapsed() is None
    monkeypatch.setattr(streamed_operator, "build", _zeroed(streamed_operator.build))
    dead = run()
    try:
        for _ in range(20):
            dead.train_step()
        said = dead.collapsed()
    finally:
        live.close(), dead.close()
    assert said is not None and "every one of 40 training inputs" in said  # the stream holds 40: all are probed
