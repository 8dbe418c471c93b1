"""Progress when stderr is a file or pipe: plain periodic lines, no carriage returns; history steps are integers."""

from __future__ import annotations

import io
import re
from pathlib import Path

import torch

from examples.poisson import data, train
from examples.poisson.config import PRESETS
from training.loop import Lines, fit, progress_bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_lines_a_terminal_gets_a_bar() -> None:
    pipe, tty = io.StringIO(), _Tty()
    assert isinstance(progress_bar(100, 0, enabled=True, stream=pipe), Lines)
    bar = progress_bar(100, 0, enabled=True, stream=tty)
    assert not isinstance(bar, Lines)
    bar.update(3)
    bar.close()
    assert "\r" in tty.getvalue()  # tqdm redraws in place on a terminal


def test_lines_every_twentieth_and_at_the_end_with_the_metrics() -> None:
    out = io.StringIO()
    bar = Lines(total=200, initial=0, stream=out)
    for step in range(1, 201):
        if step == 100:
            bar.set_postfix({"held_out_rel_l2": "5.00e-02"})
        bar.update(1)
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    steps = [int(m.group(1)) for m in (re.match(r"train (\d+)/200 ", line) for line in lines) if m]
    assert steps == list(range(10, 201, 10)) and len(lines) == 20
    assert "held_out_rel_l2 5.00e-02" in lines[-1] and "held_out" not in lines[0]


def test_a_fit_logged_to_a_file_and_its_history_steps(tmp_path: Path) -> None:
    import sys

    cfg = PRESETS["tiny"]
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, tmp_path / "cache", cfg.sources)
    task = train.build(cfg, splits, torch.device("cpu"))
    log = io.StringIO()
    saved, sys.stderr = sys.stderr, log
    try:
        run = fit(task, config={"steps": cfg.steps}, steps=cfg.steps, out=None, eval_every=cfg.eval_every,
                  checkpoint_every=cfg.checkpoint_every)
    finally:
        sys.stderr = saved
    assert "\r" not in log.getvalue() and f"train {cfg.steps}/{cfg.steps}" in log.getvalue()
    steps = [r["step"] for r in run.history]
    assert steps == list(range(cfg.eval_every, cfg.steps + 1, cfg.eval_every))
    assert all(type(s) is int for s in steps)


def test_threads_follow_the_free_cores_and_the_model_size() -> None:
    from training.cli import SMALL_MODEL, default_threads

    # an independent statement of the policy: free cores (rounded), at least one, at most two for a small model
    for cores in (1, 2, 4, 16):
        for load in (0.0, 0.4, 0.6, 1.0, 1.6, 3.0, 20.0):
            free = max(1, min(cores, round(cores - load + 1e-9)))
            small, line = default_threads(143_648, cores, load)
            big, _ = default_threads(SMALL_MODEL * 5, cores, load)
            assert small == min(free, 2) and big == free, (cores, load)
            assert line.startswith(f"threads: {small} (") and "--threads" in line
    assert default_threads(10, 2, 1.0)[0] == 1  # a shared 2-core machine: one thread, the measured winner


def test_the_poisson_program_says_its_threads(tmp_path: Path, capsys: object) -> None:
    import pytest

    from examples.poisson.__main__ import main

    assert isinstance(capsys, pytest.CaptureFixture)
    before = torch.get_num_threads()
    try:
        argv = ["--preset", "tiny", "--out", str(tmp_path / "run"), "--no-progress", "--cache", str(tmp_path)]
        assert main(argv) == 0
        out = capsys.readouterr().out
        line = next(line for line in out.splitlines() if line.startswith("threads: "))
        assert line.startswith(f"threads: {torch.get_num_threads()} ")
    finally:
        torch.set_num_threads(before)
