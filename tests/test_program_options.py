"""Every training program offers the same run options, and a bad --device is one line before any work."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

SHARED = ("--device", "--threads", "--steps", "--out", "--config", "--preset", "--no-progress")
PROGRAMS = ("poisson", "darcy", "lm", "tree_listops")


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_shared_options(program: str, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"examples.{program}.__main__").main
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    missing = [o for o in SHARED if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)]
    assert not missing, f"examples.{program} lacks {missing}"


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_bad_device_is_one_line(program: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"examples.{program}.__main__").main
    code = main(["--preset", "tiny", "--device", "tpu", "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "tpu" in err, err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
