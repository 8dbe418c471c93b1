"""What every training program shares: one set of options, the default thread count, progress lines.

* every program built on :mod:`training.options` accepts the same options, and ``--FIELD VALUE`` for
  each config field means ``--config FIELD=VALUE``;
* :func:`training.default_threads`: the free cores by the load average, at most two for a small model;
* progress on a stderr that is no terminal is plain periodic lines, no carriage returns;
* a run's history records steps as integers;
* :func:`training.fit` flushes subnormal floats to zero on the CPU for its run, and restores the mode after.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from training import UserError, default_threads, denormals_flushed, fit, flush_denormals, options
from training import threads as threads_module
from training.loop import Optimised
from training.progress import Lines, progress_bar
from training.threads import MOST, SMALL, use_threads

PROGRAMS = [
    *("poisson", "darcy", "lm", "tree_listops", "cross_modal", "uncertainty"),
    *("circuits", "graph_hops", "observer"),
]
SHARED = ["--preset", "--config", "--steps", "--out", "--device", "--threads", "--no-progress"]


@pytest.fixture(autouse=True)
def _keep_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _keep_denormals() -> Iterator[None]:
    restore = flush_denormals(denormals_flushed())
    yield
    restore()


def _parser(name: str) -> Any:
    """The parser a program builds (captured as :func:`training.options.program` returns it)."""
    built: list[Any] = []
    real = options.program

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(real(*args, **kwargs))
        raise _Built

    package = importlib.util.find_spec(f"examples.{name}").submodule_search_locations is not None  # type: ignore[union-attr]
    main = importlib.import_module(f"examples.{name}.__main__" if package else f"examples.{name}")
    options.program = spy  # type: ignore[assignment]
    try:
        with pytest.raises(_Built):
            main.main([])
    finally:
        options.program = real  # type: ignore[assignment]
    return built[0]


class _Built(Exception):
    pass


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_program_has_the_shared_options(name: str) -> None:
    parser = _parser(name)
    have = {s for action in parser._actions for s in action.option_strings}
    assert set(SHARED) <= have, sorted(set(SHARED) - have)


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_field_shorthand_is_the_config_item(name: str) -> None:
    parser = _parser(name)
    presets = parser.get_default("_presets")
    config, _ = options.parse(parser, ["--preset", "tiny", "--seed", "7", "--steps", "3"])
    assert config == presets["tiny"].replace(seed=7, steps=3)
    # and the same field given both ways is the same config
    again, _ = options.parse(_parser(name), ["--preset", "tiny", "--config", "seed=7", "--config", "steps=3"])
    assert again == config


def test_shared_option_errors_are_one_line() -> None:
    from training.tasks.darcy import PRESETS

    for argv, says in [
        (["--threads", "0"], "argument --threads"),
        (["--steps", "-5"], "steps"),
        (["--lr", "nan"], "lr"),
        (["--family", "bogus"], "argument --family"),
        (["--preset", "nope"], "argument --preset"),
    ]:
        p = options.program("prog", "d", PRESETS)
        from operators.darcy import data

        p.add_argument("--family", choices=data.FAMILIES, default=None)
        with pytest.raises(UserError) as caught:
            options.parse(p, argv)
        assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_misspelt_option_is_answered_with_the_closest_one() -> None:
    import difflib

    from training.tasks.darcy import PRESETS

    p = options.program("prog", "d", PRESETS)
    with pytest.raises(UserError) as caught:
        options.parse(p, ["--widht", "3"])
    # the independent reference: difflib over the parser's own long options
    known = [o for a in p._actions for o in a.option_strings if o.startswith("--")]
    assert difflib.get_close_matches("--widht", known, n=1)[0] == "--width"
    assert str(caught.value).endswith("did you mean --width?")
    with pytest.raises(UserError, match="see --help for the options"):
        options.parse(p, ["--zzzzzz"])


def test_a_programs_own_option_of_a_fields_name_sets_the_field() -> None:
    from operators.darcy import data
    from training.tasks.darcy import PRESETS

    p = options.program("prog", "d", PRESETS)
    p.add_argument("--family", choices=data.FAMILIES, default=None)
    other = next(f for f in data.FAMILIES if f != PRESETS["default"].family)
    config, _ = options.parse(p, ["--family", other])
    assert config.family == other


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_bad_device_is_one_line_before_any_work(name: str) -> None:
    parser = _parser(name)
    with pytest.raises(UserError) as caught:
        options.parse(parser, ["--device", "bogus"])
    message = str(caught.value)
    assert "--device" in message and "bogus" in message and "\n" not in message


def test_a_cpu_only_program_refuses_cuda_in_one_line() -> None:
    from training.tasks.uncertainty.config import PRESETS

    p = options.program("prog", "d", PRESETS, cuda=False)
    with pytest.raises(UserError, match="argument --device: invalid choice: 'cuda'"):
        options.parse(p, ["--device", "cuda"])


# ---- threads -------------------------------------------------------------------------------------


def test_threads_follow_the_free_cores_and_the_model_size() -> None:
    # an independent statement of the policy: free cores (rounded), at least one; at most two for a small model
    for cores in (1, 2, 4, 16, 128):
        for load in (0.0, 0.4, 0.6, 1.0, 1.6, 3.0, 20.0):
            free = max(1, min(cores, round(cores - load + 1e-9)))
            assert default_threads(0, cores, load) == min(free, 2), (cores, load)
            assert default_threads(143_648, cores, load) == min(free, 2)  # the Poisson main job
            assert default_threads(SMALL - 1, cores, load) == min(free, 2)
            assert default_threads(SMALL, cores, load) == min(free, MOST)
    assert default_threads(143_648, 2, 1.0) == 1  # a shared 2-core machine: one thread, the measured winner
    assert default_threads(143_648, 2, 0.0) == 2  # the same machine idle: two
    with pytest.raises(ValueError, match="parameters must be >= 0"):
        default_threads(-1, 2)


def test_an_explicit_thread_count_wins_and_is_said() -> None:
    said = use_threads(3, 10)
    assert torch.get_num_threads() == 3 and said.startswith("3 threads (--threads)")
    said = use_threads(None, 10)
    n = torch.get_num_threads()
    assert n in (1, 2) and f"{n} thread" in said and "small model, 10 parameters" in said and "load " in said


class _Tiny(Optimised):
    """A least-squares fit of a line, as a task."""

    def __init__(self, width: int) -> None:
        self.device = torch.device("cpu")
        self.model = nn.Linear(width, 1)
        self.optimiser = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimiser, lambda step: 1.0)
        self.sampler = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, width, generator=self.sampler)
        self.y = self.x.sum(-1, keepdim=True)
        self.threads_seen: list[int] = []
        self.flushed_seen: list[bool] = []

    def train_step(self) -> Tensor:
        self.threads_seen.append(torch.get_num_threads())
        self.flushed_seen.append(denormals_flushed())
        loss = (self.model(self.x) - self.y).pow(2).mean()
        self.optimiser.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        self.optimiser.step()
        return loss.detach()

    def evaluate(self) -> dict[str, float]:
        with torch.no_grad():
            return {"mse": float((self.model(self.x) - self.y).pow(2).mean())}


def _two_busy_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine seen as 2 cores under a load of 1 (the thread defaults follow the machine: pinned here)."""
    monkeypatch.setattr(threads_module, "_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "_load", lambda: 1.0)


def test_the_loop_trains_on_the_chosen_threads_and_restores_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_busy_cores(monkeypatch)
    torch.set_num_threads(2)
    task = _Tiny(4)
    run = fit(task, config={}, steps=5, out=tmp_path, eval_every=2, checkpoint_every=5, progress=False)
    assert set(task.threads_seen) == {1}  # 5 parameters: a small model
    assert torch.get_num_threads() == 2
    task = _Tiny(4)
    fit(task, config={}, steps=2, out=None, eval_every=2, checkpoint_every=2, progress=False, threads=2)
    assert set(task.threads_seen) == {2}
    # the history's steps are integers, in memory and in the checkpoint
    assert [r["step"] for r in run.history] == [2, 4, 5]
    assert all(type(r["step"]) is int for r in run.history)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["history"]
    assert [type(r["step"]) for r in saved] == [int, int, int]


def test_the_loop_flushes_subnormals_for_its_run_and_restores_the_mode() -> None:
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    # the probe's premise, against Python's own float arithmetic: 2e-38 · 0.25 is a subnormal float32, kept
    assert float((torch.tensor([2e-38]) * 0.25).item()) == pytest.approx(float(torch.tensor(2e-38).item()) * 0.25)
    assert not denormals_flushed()
    for before in (False, True):
        torch.set_flush_denormal(before)
        task = _Tiny(4)
        fit(task, config={}, steps=3, out=None, eval_every=3, checkpoint_every=3, progress=False, threads=1)
        assert set(task.flushed_seen) == {True}
        assert denormals_flushed() is before


def test_flushing_changes_only_what_is_below_the_smallest_normal_float() -> None:
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormal floats")
    # a steep attention window's probabilities (the Darcy reader's: -β (t - s)², β up to 160 per unit scale)
    t = torch.linspace(-1, 1, 33, dtype=torch.float64)
    scores = -160 * 5.7 * (t[:, None] - t[None, :]) ** 2
    exact = torch.softmax(scores, -1)  # float64: nothing here is subnormal
    flushed = torch.softmax(scores.float(), -1).double()
    tiny = torch.finfo(torch.float32).tiny
    assert ((exact > 0) & (exact < tiny)).any()  # the window makes float32 subnormals ...
    assert ((flushed > 0) & (flushed < tiny)).sum() == 0  # ... which are zero when flushed
    torch.testing.assert_close(flushed, exact, rtol=1e-5, atol=tiny)
    torch.set_flush_denormal(False)
    kept = torch.softmax(scores.float(), -1).double()
    assert ((kept > 0) & (kept < tiny)).any()


# ---- progress ------------------------------------------------------------------------------------


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_to_a_pipe_is_plain_lines() -> None:
    stream = _Pipe()
    bar = progress_bar(100, 0, True, "1 thread (small model)", stream)
    assert isinstance(bar, Lines)
    for step in range(1, 101):
        if step == 50:
            bar.set_postfix({"err": "1.0e-02"})
        bar.update(1)
    bar.close()
    text = stream.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "train: step 0/100 on 1 thread (small model)"
    steps = [int(line.split()[2].split("/")[0]) for line in lines[1:]]
    assert steps == list(range(5, 101, 5))  # every 5% of the run, the last step included
    assert lines[-1].startswith("train: step 100/100 (100%)") and lines[-1].endswith("err=1.0e-02")


def test_a_resumed_run_counts_from_where_it_stood() -> None:
    stream = _Pipe()
    bar = progress_bar(40, 30, True, "1 thread", stream)
    for _ in range(10):
        bar.update(1)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "train: step 30/40 on 1 thread"
    assert [line.split()[2] for line in lines[1:]] == ["32/40", "34/40", "36/40", "38/40", "40/40"]


def test_progress_on_a_terminal_is_a_bar_and_off_is_silent() -> None:
    stream = _Terminal()
    bar = progress_bar(10, 0, True, "2 threads (--threads)", stream)
    assert not isinstance(bar, Lines)
    bar.update(10)
    bar.close()
    assert "\r" in stream.getvalue() and "train [2 threads]" in stream.getvalue()
    quiet = _Pipe()
    bar = progress_bar(10, 0, False, "1 thread", quiet)
    bar.update(10)
    bar.close()
    assert quiet.getvalue() == ""


def test_fit_to_a_pipe_writes_lines(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest's captured stderr is no terminal, as a redirected one is
    _two_busy_cores(monkeypatch)
    fit(_Tiny(3), config={}, steps=40, out=None, eval_every=20, checkpoint_every=40)
    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.splitlines()[0].startswith("train: step 0/40 on 1 thread (small model, 4 parameters")
    assert err.splitlines()[-1].startswith("train: step 40/40 (100%)")


def test_config_boilerplate_is_shared() -> None:
    from training.config import Checked
    from training.tasks.lm import PRESETS

    config = PRESETS["tiny"]
    assert isinstance(config, Checked)
    assert dataclasses.replace(config, seed=3) == config.replace(seed=3)
    with pytest.raises(UserError, match="width=16, heads=3: heads must divide width"):
        config.replace(heads=3)
