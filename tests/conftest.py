"""Shared test settings: hypothesis profiles (CI runs fewer examples, never a deadline), and the ``one_thread``
fixture (``pytestmark = pytest.mark.usefixtures("one_thread")``) for tests whose figures assume one thread."""

import os
from collections.abc import Iterator

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
