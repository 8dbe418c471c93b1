"""What `pip install .` installs: the library and `training`, never the `examples` programs."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_training_and_no_examples() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(where=str(ROOT), include=config["include"])
    tops = {p.split(".")[0] for p in packages}
    assert {"applicative", "instances", "models", "training"} <= tops
    assert "examples" not in tops and "tests" not in tops


def test_training_imports_nothing_from_examples() -> None:
    for path in (ROOT / "training").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
            assert not any(n.split(".")[0] == "examples" for n in names), f"{path.name} imports {names}"


def test_training_imports_from_another_directory(tmp_path: Path) -> None:
    code = "import training, sys; print(training.fit.__module__); print('examples' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["training.loop", "False"]
