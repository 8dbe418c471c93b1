"""The data program (examples/pde_data.py): it generates, reports against the exact statistics, and caches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from examples import pde_data


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_program_reports_both_problems_and_reuses_its_cache(tmp_path: Path) -> None:
    argv = ["--burgers-counts", "1", "1", "--ns-counts", "1", "1", "--cache", str(tmp_path)]
    first = pde_data.run(argv)
    assert first[0].startswith("burgers: 1 + 1 pairs at 256 points")
    assert any(line.startswith("navier-stokes: 1 + 1 trajectories (21, 64, 64)") for line in first)
    assert any("GRF exact" in line for line in first) and any("steady laminar" in line for line in first)
    assert len(list(tmp_path.glob("*.pt"))) == 4  # two splits of each problem
    again = pde_data.run(argv)
    assert [line for line in again if " in " not in line] == [line for line in first if " in " not in line]


def test_bad_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("")
    for argv, says in [
        (["--cache", str(tmp_path / "f")], "is a file"),
        (["--burgers-counts", "0", "1"], "out of range"),
        (["--device", "nowhere"], "not a device"),
    ]:
        assert pde_data.main(argv) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, err
