"""Static typing: mypy --strict rejects each deliberately wrong line in ``tests/typing/`` and nothing else.

Every file ``tests/typing/bad_*.py`` marks each wrong line with a trailing
``# E: <why>`` comment; mypy must report an error on exactly those lines.
``tests/typing/ok_*.py`` must type-check cleanly. (The files are not named
``test_*.py``, so pytest does not collect them.)
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "tests" / "typing").glob("*.py"))
ERROR = re.compile(r"^(?P<file>[^:]+\.py):(?P<line>\d+): error: (?P<msg>.*)$")


def marked_lines(path: Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if "# E:" in line}


@cache
def mypy_errors() -> dict[str, dict[int, list[str]]]:
    """Run mypy --strict once over all the programs: ``{file name: {line: [messages]}}``."""
    if importlib.util.find_spec("mypy") is None:  # `python -m mypy` would exit 1, like a run that found errors
        raise RuntimeError(f"mypy is not installed in {sys.executable}: pip install -e '.[dev]'")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--no-error-summary", *map(str, PROGRAMS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode not in (0, 1):  # 2: mypy itself failed (crash, bad config)
        raise RuntimeError(f"mypy failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    found: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m and Path(m["file"]).parent.name == "typing":  # only errors in the programs themselves
            found[Path(m["file"]).name][int(m["line"])].append(m["msg"])
    return found


def test_programs_exist() -> None:
    names = [p.name for p in PROGRAMS]
    assert any(n.startswith("ok_") for n in names) and sum(n.startswith("bad_") for n in names) >= 3


@pytest.mark.parametrize("program", [p for p in PROGRAMS if p.name.startswith("bad_")], ids=lambda p: p.stem)
def test_each_wrong_line_is_rejected(program: Path) -> None:
    expected = marked_lines(program)
    assert expected, f"{program.name} marks no line with '# E:'"
    got = mypy_errors()[program.name]
    missed = sorted(expected - set(got))
    spurious = {line: got[line] for line in sorted(set(got) - expected)}
    assert not missed, f"{program.name}: mypy accepted wrong lines {missed}"
    assert not spurious, f"{program.name}: mypy rejected unmarked lines {spurious}"


@pytest.mark.parametrize("program", [p for p in PROGRAMS if p.name.startswith("ok_")], ids=lambda p: p.stem)
def test_correct_program_type_checks(program: Path) -> None:
    assert not marked_lines(program)
    assert not mypy_errors()[program.name], dict(mypy_errors()[program.name])
