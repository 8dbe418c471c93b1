"""The FNO paper's FNO-1D (training.tasks.operator.paper_fno): the Fourier layer against numpy's FFT, the parameters
counted from the paper's description, the layer's independence of the resolution, the authors' epoch batches, and
that it learns an exact map (the heat equation's, solved per Fourier mode)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from operators.dataset import samples
from operators.layout import Axis
from tests.operator_cases import heat
from training.errors import UserError
from training.tasks.operator import Config
from training.tasks.operator.fno import count
from training.tasks.operator.paper_fno import PROJECTION, PaperFNO1d, PaperFNOTask, fourier_layer
from training.tasks.operator.peers import Plain

PERIODIC = (Axis("periodic"),)
pytestmark = pytest.mark.usefixtures("one_thread")


def _weight(c_in: int, c_out: int, m: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(c_in, c_out, m, generator=g), torch.randn(c_in, c_out, m, generator=g))


def test_the_fourier_layer_is_numpys_transform_truncated_and_mixed() -> None:
    v = torch.randn(3, 2, 20, dtype=torch.float64)
    w = _weight(2, 5, 7, 0).to(torch.complex128)
    f = np.fft.rfft(v.numpy(), axis=-1)
    kept = np.zeros((3, 5, 11), dtype=complex)
    for k in range(7):
        kept[:, :, k] = f[:, :, k] @ w[:, :, k].numpy()
    expected = np.fft.irfft(kept, n=20, axis=-1)
    np.testing.assert_allclose(fourier_layer(v, w).numpy(), expected, atol=1e-12)


def test_the_fourier_layer_does_not_depend_on_the_resolution() -> None:
    """On a band-limited input the layer gives the same function at 32 and at 96 points (its output holds only the
    kept frequencies): the shared points agree."""
    x = torch.arange(96, dtype=torch.float64) / 96
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(2, 4, 5, generator=g, dtype=torch.float64)
    k = torch.arange(5, dtype=torch.float64)[:, None]
    v = (a[..., None] * torch.cos(2 * math.pi * k * x) + b[..., None] * torch.sin(2 * math.pi * k * x)).sum(-2)
    w = _weight(4, 3, 6, 2).to(torch.complex128)
    fine, coarse = fourier_layer(v[None], w)[0], fourier_layer(v[None, :, ::3], w)[0]
    torch.testing.assert_close(coarse, fine[:, ::3], atol=1e-10, rtol=0)


def test_too_many_modes_for_the_points_is_refused() -> None:
    with pytest.raises(UserError, match="keeps 10 frequencies, but 16 points have only 9"):
        fourier_layer(torch.randn(1, 2, 16), _weight(2, 2, 10, 0))
    x = torch.randn(8, 16, 1, dtype=torch.float64)
    with pytest.raises(UserError, match="modes=12, but 16 points"):
        PaperFNOTask(Config(steps=1, batch=4), Plain(modes=12), samples(x, x, PERIODIC))


@pytest.mark.parametrize(("c_in", "c_out", "width", "modes", "layers"), [(1, 1, 64, 16, 4), (3, 2, 8, 5, 2)])
def test_the_parameters_are_the_papers_model(c_in: int, c_out: int, width: int, modes: int, layers: int) -> None:
    """The lift (input and coordinate to ``width``), per layer the complex ``R`` (two real numbers an element) and
    the pointwise ``W`` with its bias, the two-layer projection through 128: the paper's Burgers model has 549,569
    real weights."""
    lift = (c_in + 1) * width + width
    per_layer = 2 * width * width * modes + width * width + width
    project = width * PROJECTION + PROJECTION + PROJECTION * c_out + c_out
    net = PaperFNO1d(c_in, c_out, width=width, modes=modes, layers=layers)
    assert count(net) == lift + layers * per_layer + project
    assert net(torch.randn(2, c_in, 40)).shape == (2, c_out, 40)


def test_epoch_batches_visit_every_sample_once_per_epoch() -> None:
    x = torch.randn(10, 16, 1, dtype=torch.float64)
    task = PaperFNOTask(Config(steps=1, batch=4), Plain(width=4, modes=3, batches="epochs"), samples(x, x, PERIODIC))
    epochs = [[task._batch() for _ in range(3)] for _ in range(2)]
    for batches in epochs:
        assert [len(b) for b in batches] == [4, 4, 2]
        assert sorted(torch.cat(batches).tolist()) == list(range(10))
    assert not torch.equal(torch.cat(epochs[0]), torch.cat(epochs[1]))  # a fresh permutation each epoch


def test_it_learns_an_exact_map_by_epochs() -> None:
    train, test = samples(*heat(64, 32, 0), PERIODIC), samples(*heat(16, 32, 1), PERIODIC)
    cfg = Config(steps=200, batch=16)
    task = PaperFNOTask(cfg, Plain(width=16, modes=8, lr=3e-3, batches="epochs"), train)
    before = float(task.errors(test).mean())
    for _ in range(cfg.steps):
        task.train_step()
    after = float(task.errors(test).mean())
    assert after < before / 10 and after < 0.05, (before, after)


def test_two_axes_are_refused() -> None:
    x = torch.randn(4, 8, 8, 1, dtype=torch.float64)
    with pytest.raises(UserError, match="reads one axis; these samples have 2"):
        PaperFNOTask(Config(steps=1, batch=2), Plain(), samples(x, x, PERIODIC * 2))


def test_the_published_benchmark_runs_the_papers_model_without_the_extra() -> None:
    """``fno_published.py --quick --model paper`` reaches its result line with neuraloperator hidden (the paper's
    model needs no extra package); ``--first`` with it is a one-line error."""
    root = Path(__file__).resolve().parents[1]
    script = root / "benchmarks" / "fno_published.py"
    hide = "import sys; sys.modules['neuralop'] = None; sys.argv = sys.argv[1:]; import runpy; "
    run = f"{hide}runpy.run_path(sys.argv[0], run_name='__main__')"
    ok = subprocess.run(
        [sys.executable, "-c", run, str(script), "--quick", "--model", "paper"], capture_output=True, text=True
    )
    last = ok.stdout.strip().splitlines()[-1]
    assert ok.returncode == 0 and last.startswith("result: fno_published_burgers "), (ok.stdout, ok.stderr)
    assert math.isfinite(float(last.split()[2]))
    bad = subprocess.run(
        [sys.executable, str(script), "--quick", "--model", "paper", "--first"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "fno_published: error: --first is a reading of neuraloperator's FNO: drop it, or --model library"
    ]
