"""The figures of the main job.

* :func:`figure`: one sample's source, exact solution, prediction and pointwise error on a grid, the exact
  solution and the prediction on one colour scale, titled with the sample and its error;
* :func:`curves`: the training loss and the held-out relative L² error against the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from operators.poisson.solver import evaluate_2d

Array = npt.NDArray[np.float64]

#: the panels that share one colour scale (so that the eye compares the prediction with the exact solution)
SHARED = ("exact g", "Funcformer g")


@dataclass(frozen=True)
class Drawn:
    """What :func:`figure` drew, read back from the figure.

    ``panels``: the arrays the panels show, by title, as drawn (``(y, x)``); ``clim``: each panel's colour
    limits ``(vmin, vmax)``, by title, as its image (and so its colour bar) has them; ``title``: the figure's title
    (``""`` when it has none).
    """

    panels: dict[str, Array]
    clim: dict[str, tuple[float, float]]
    title: str


def title(sample: int | None = None, error: float | None = None) -> str:
    """The figure's title: ``"held-out sample 17: relative L² error 3.10e-02"``, or the part that is known."""
    parts = [] if sample is None else [f"held-out sample {sample}"]
    if error is not None:
        parts.append(f"relative L² error {error:.2e}")
    return ": ".join(parts)


def figure(
    f: Tensor,
    g: Tensor,
    pred: Tensor,
    path: Path,
    points: int = 101,
    *,
    sample: int | None = None,
    error: float | None = None,
) -> Drawn:
    """Write a 1 x 4 panel PNG for one sample (coefficient matrices of any sizes) to ``path``.

    Panels: source, exact solution, prediction, pointwise error, each with a colour bar; the exact solution
    and the prediction share one colour scale (their colour bars are the same). ``sample`` (its index) and
    ``error`` (its relative L² error) title the figure.

    Returns what was drawn (:class:`Drawn`): the panels' arrays on ``points`` equispaced values in
    ``[-1, 1]``, their colour limits and the title.
    """
    t = torch.linspace(-1, 1, points, dtype=torch.float64)
    fv, gv, pv = (evaluate_2d(c.double().cpu(), t, t).T.numpy() for c in (f, g, pred))
    panels = {"source f": fv, "exact g": gv, "Funcformer g": pv, "error |g - pred|": np.abs(pv - gv)}
    shared = (float(min(panels[k].min() for k in SHARED)), float(max(panels[k].max() for k in SHARED)))
    name = title(sample, error)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    drawn, clim = {}, {}
    for ax, (label, v) in zip(axes, panels.items(), strict=True):
        vmin, vmax = shared if label in SHARED else (None, None)
        im = ax.imshow(v, origin="lower", extent=(-1, 1, -1, 1), cmap="viridis", vmin=vmin, vmax=vmax)
        fig.colorbar(im, ax=ax, fraction=0.046)
        drawn[label] = np.array(im.get_array(), dtype=np.float64)
        lo, hi = im.get_clim()
        clim[label] = (float(lo), float(hi))
        ax.set_title(label)
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    if name:
        fig.suptitle(name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Drawn(drawn, clim, name)


#: the series :func:`curves` draws: history key -> legend label
SERIES = {"loss": "training loss", "held_out_rel_l2": "held-out relative L² error (mean)"}


def curves(history: list[dict[str, float]], path: Path) -> dict[str, list[float]]:
    """Write the training curves to ``path`` (PNG): the loss and the held-out relative L² error against the step.

    ``history``: the run's records, ``{"step": 250, "loss": 1e-3, "held_out_rel_l2": 5e-3, ...}``, in order.
    Log-scale y. Returns the series as plotted, read back from the lines: ``"step"``, ``"loss"`` and
    ``"held_out_rel_l2"``.
    """
    step = [float(r["step"]) for r in history]
    fig, ax = plt.subplots(figsize=(8, 5))
    out: dict[str, list[float]] = {}
    marker = "." if len(step) <= 60 else None  # mark the evaluations while they stand apart
    for key, label in SERIES.items():
        (line,) = ax.plot(step, [float(r[key]) for r in history], marker=marker, label=label)
        out.setdefault("step", np.asarray(line.get_xdata(), dtype=np.float64).tolist())
        out[key] = np.asarray(line.get_ydata(), dtype=np.float64).tolist()
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss / relative L² error")
    ax.grid(True, which="both", alpha=0.3)
    # above the axes, where it hides no part of a curve
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncols=2, borderaxespad=0, frameon=False)
    fig.suptitle("training curves")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return out
