"""What `pip install .` installs: the library's four packages, never the `examples` folder.

The wheel is built from a copy of the checkout (so no `build/` or `*.egg-info` is left in it), its
file list read back, and `import training` tried from outside the checkout with the wheel alone on
the path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = {"applicative", "instances", "models", "training"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("setuptools")
    src = tmp_path_factory.mktemp("src")
    for name in [*LIBRARY, "examples"]:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ["pyproject.toml", "README.md"]:
        shutil.copy(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {done.stderr.strip().splitlines()[-1:]}")
    (built,) = out.glob("*.whl")
    return built


def top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name.split("/")[0] for name in archive.namelist() if not name.split("/")[0].endswith(".dist-info")}


def test_the_wheel_holds_the_library_and_no_examples(wheel: Path) -> None:
    assert top_level(wheel) == LIBRARY
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    # every package of the checkout's library is in the wheel, with its type marker
    for package in LIBRARY:
        assert f"{package}/py.typed" in names
        for source in (ROOT / package).rglob("*.py"):
            assert source.relative_to(ROOT).as_posix() in names


def test_training_imports_from_elsewhere_without_examples(wheel: Path, tmp_path: Path) -> None:
    # the wheel is a zip of pure Python: on sys.path it behaves as the installed packages
    code = ("import importlib.util, training; spec = importlib.util.find_spec('examples');"
            " print(training.__file__, spec.origin if spec else None)")
    env = {**os.environ, "PYTHONPATH": str(wheel), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    where, examples = done.stdout.split()
    assert where.startswith(str(wheel))
    # another install (an editable checkout) may provide `examples`; the wheel never does
    assert not examples.startswith(str(wheel))


def test_the_library_imports_nothing_from_examples() -> None:
    import ast

    for package in LIBRARY:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.append(node.module)
                assert not any(n.split(".")[0] == "examples" for n in names), f"{path} imports {names}"


def test_every_benchmark_starts_from_outside_the_checkout(tmp_path: Path) -> None:
    """``python benchmarks/NAME.py --help`` from another directory: a benchmark that imports ``examples``
    (a checkout folder, not installed) puts the checkout on its path itself."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    runs = {
        s.name: subprocess.Popen(
            [sys.executable, str(s), "--help"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        for s in scripts
    }
    failed = {}
    for name, run in runs.items():
        out, err = run.communicate(timeout=120)
        if run.returncode != 0 or "usage:" not in out:
            failed[name] = (err.strip().splitlines() or ["(no stderr)"])[-1]
    assert not failed, f"benchmarks that do not start: {failed}"
