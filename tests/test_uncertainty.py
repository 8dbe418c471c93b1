"""The uncertainty demo: parameter matching, its metrics against independent computations, and a tiny run.

References: the metrics recomputed by hand (scipy-free closed forms: the Gaussian CDF through erf,
Monte Carlo for the mixture mean), the synthetic task's true density against its histogram, and
the command line's one-line errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import distributions as td

from examples.uncertainty.__main__ import main
from training.tasks.uncertainty import data
from training.tasks.uncertainty.config import PRESETS
from training.tasks.uncertainty.model import GaussianMLP, MixtureTransformer, count
from training.tasks.uncertainty.program import compare
from training.tasks.uncertainty.train import metrics


def test_baseline_matches_the_transformer_within_five_percent() -> None:
    for c in PRESETS.values():
        mixture = MixtureTransformer(c.components, c.width, c.hidden, c.heads, c.depth)
        baseline = GaussianMLP.matching(count(mixture))
        assert count(baseline) == GaussianMLP.parameters_for(baseline.hid.size)
        assert abs(count(baseline) - count(mixture)) <= 0.05 * count(mixture)


def test_mixture_output_is_a_distribution_per_query() -> None:
    torch.manual_seed(0)
    model = MixtureTransformer(4, 8, 16, 2, 1)
    x = torch.linspace(-1, 1, 5)
    with torch.no_grad():
        dist = model(x)
    assert dist.batch_shape == (5,) and dist.mixture_distribution.probs.shape == (5, 4)
    y = torch.linspace(-40, 40, 80001)  # wide and fine: an untrained model's components are anywhere
    density = dist.log_prob(y[:, None]).exp()  # (80001, 5): integrates to 1 per query
    np.testing.assert_allclose(torch.trapezoid(density, y, dim=0).numpy(), 1.0, atol=1e-3)


def test_true_density_of_the_task() -> None:
    """The stated true NLL is the log-density of the drawn y: check it integrates to 1 and fits a histogram."""
    s = data.split(20000, torch.Generator().manual_seed(0))
    assert abs(float(s.y.mean() - data.mean(s.x).mean())) < 0.02  # noise has mean 0
    resid = (s.y - data.mean(s.x)) / data.scale(s.x)
    assert abs(float(resid.std()) - 1.0) < 0.03  # unit variance after dividing by s(x)
    e = resid + 1
    assert float(e.min()) >= 0
    np.testing.assert_allclose(s.true_nll.numpy(), (e + torch.log(data.scale(s.x))).numpy(), atol=1e-5)
    hist, edges = np.histogram(e.numpy(), bins=20, range=(0, 4))
    centres = (edges[1:] + edges[:-1]) / 2
    np.testing.assert_allclose(hist / len(e) / 0.2, np.exp(-centres) * (np.exp(0.1) - np.exp(-0.1)) / 0.2, atol=0.03)


class _Fixed(torch.nn.Module):
    """A model that predicts N(0, 1) everywhere."""

    def forward(self, x: torch.Tensor) -> td.Normal:
        return td.Normal(torch.zeros_like(x), torch.ones_like(x))


def test_metrics_against_hand_computation() -> None:
    s = data.split(3000, torch.Generator().manual_seed(1))
    got = metrics(_Fixed(), s, points=4, chunk=700)
    y = s.y.double().numpy()
    nll = np.mean(0.5 * y**2 + 0.5 * math.log(2 * math.pi))
    u = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in y])
    assert got["nll"] == pytest.approx(nll, rel=1e-5)
    assert got["coverage90"] == pytest.approx(np.mean((u >= 0.05) & (u <= 0.95)))
    assert got["coverage50"] == pytest.approx(np.mean((u >= 0.25) & (u <= 0.75)))
    assert got["mean_rmse"] == pytest.approx(float(np.sqrt(np.mean(np.sin(3 * s.x.double().numpy()) ** 2))), rel=1e-5)


def test_tiny_run_trains_and_reports() -> None:
    report = compare(PRESETS["tiny"], progress=False)
    for m in report["models"].values():
        first, last = m["history"][0], m["history"][-1]
        assert math.isfinite(m["nll"]) and 0 <= m["coverage90"] <= 1
        assert last["loss"] < first["loss"] + 1.0  # trained, not diverged
    p = [m["parameters"] for m in report["models"].values()]
    assert abs(p[0] - p[1]) <= 0.05 * p[0]


def test_command_line_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", "width=7", "--config", "heads=2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "heads must divide width" in err
    assert main(["--preset", "nope"]) == 2
