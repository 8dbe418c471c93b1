"""The figure of the main job: source, exact solution, prediction and pointwise error on a grid."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from .solver import evaluate_2d


def figure(f: Tensor, g: Tensor, pred: Tensor, path: Path, points: int = 101) -> dict[str, npt.NDArray[np.float64]]:
    """Write a 1 x 4 panel PNG for one sample (coefficient matrices of any sizes) to ``path``.

    Returns the arrays the panels show, by title, as drawn: ``(y, x)`` on ``points`` equispaced values in ``[-1, 1]``.
    """
    t = torch.linspace(-1, 1, points, dtype=torch.float64)
    fv, gv, pv = (evaluate_2d(c.double().cpu(), t, t) for c in (f, g, pred))
    panels = [("source f", fv), ("exact g", gv), ("Funcformer g", pv), ("error |g - pred|", (pv - gv).abs())]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    drawn = {}
    for ax, (title, v) in zip(axes, panels, strict=True):
        im = ax.imshow(v.T.numpy(), origin="lower", extent=(-1, 1, -1, 1), cmap="viridis")
        drawn[title] = np.array(im.get_array(), dtype=np.float64)
        ax.set_title(title)
        ax.set_xlabel("x")
        fig.colorbar(im, ax=ax, fraction=0.046)
    axes[0].set_ylabel("y")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn
