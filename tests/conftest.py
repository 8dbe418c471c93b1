"""Shared test settings: hypothesis profiles (CI runs fewer examples, never a deadline), the ``one_thread``
fixture (``pytestmark = pytest.mark.usefixtures("one_thread")``) for tests whose figures assume one thread, and
``benchmark``, which imports a script of ``benchmarks/`` by name."""

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Torch on one thread for the test, the previous count restored after it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def benchmark() -> Callable[[str], ModuleType]:
    """``benchmark(NAME)``: ``benchmarks/NAME.py`` imported as module ``NAME`` (the scripts are not a package)."""

    def load(name: str) -> ModuleType:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while they are built
        spec.loader.exec_module(module)
        return module

    return load
