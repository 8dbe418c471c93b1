"""Training the operator model on checked samples: a :class:`~training.Task` for the shared loop.

The loss is the batch mean of the squared relative L² error of the predicted series at the training samples (or the
relative error itself: ``loss="relative"``), integrated by the layouts' quadrature (on a uniform grid with zero ends,
the plain sums of the FNO paper's metric), plus ``smooth`` times the series' :func:`~models.operator.roughness` per
unit mean square of the data where some axis is bounded (:func:`smoothing`). Evaluation reports the mean relative
L² error on each held-out set, at its own resolution. Checkpoints, resumption, signals and divergence are the shared
loop's (:func:`training.fit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Unpack

import torch
from torch import Tensor

from instances.axes import Axis
from models.operator import OperatorModel, roughness, sizes
from models.transformer import EncoderLayer
from operators import symmetry
from operators.dataset import Samples
from operators.streams import PairStream
from training import Trained, UserError, fit
from training.loop import FitOptions, Optimised
from training.muon import for_model, hidden_matrices
from training.schedule import OneCycle

from .config import Config
from .model import SPEC, build, record, recorded
from .shape import Shape


def check_fit(config: Config, s: Samples | PairStream) -> None:
    """A :class:`~training.UserError` when the samples cannot determine the configured model: fewer samples on an
    axis than the output series has coefficients, or a symmetry that does not map the grid onto itself."""
    for i, (p, m) in enumerate(zip(s.grid, sizes(s.axes, config.modes), strict=True)):
        if p < m:
            raise UserError(
                f"{s.where}: axis {'xy'[i]} has {p} samples, fewer than the {m} coefficients of the model's series "
                f"there; lower --config modes= (at most {config.modes - (m - p)}) or give finer data"
            )
    if config.reader == "fourier" and not all(a.boundary.periodic for a in s.axes):
        raise UserError(
            f"{s.where}: config field reader=fourier needs every axis periodic (--layout periodic); "
            "set reader=attention for other layouts"
        )
    why = symmetry.problem(config.augment, s.axes)
    if why is not None:
        raise UserError(f"config field augment={config.augment}: {why.split(': ', 1)[-1]}")


def relative_sq(pred: Tensor, exact: Tensor, weights: Sequence[Tensor]) -> Tensor:
    """Per-sample ``‖pred - exact‖² / ‖exact‖²`` for ``(batch, *grid, C)`` values, integrated by ``weights`` (one
    quadrature per axis)."""
    w = weights[0] if len(weights) == 1 else weights[0][:, None] * weights[1][None, :]
    w = w[..., None]  # the channels
    num = (w * (pred - exact).pow(2)).flatten(1).sum(-1)
    den = (w * exact.pow(2)).flatten(1).sum(-1)
    return num / den.clamp_min(torch.finfo(den.dtype).tiny)


def smoothing(smooth: float, axes: Sequence[Axis]) -> float:
    """The smoothing penalty's weight on a domain of ``axes``: ``smooth``, or ``0`` when every axis is periodic.

    The penalty is there because samples alone leave a Chebyshev series free between uniform nodes (Runge); equally
    spaced samples of a period determine a Fourier series of no more terms exactly, so on periodic axes it would
    only damp what the data hold (steep fronts: measured 3.3 times worse on a low-viscosity Burgers set)."""
    return 0.0 if all(a.boundary.periodic for a in axes) else smooth


def objective(model: OperatorModel, x: Tensor, exact: Tensor, smooth: float, *, relative: bool = False) -> Tensor:
    """The training loss on inputs ``x`` and outputs ``exact`` ``(batch, *grid, C)``: the batch mean of
    ``‖u - exact‖² / ‖exact‖² + λ roughness(u) / mean(exact²)`` (``λ``: :func:`smoothing` of ``smooth``), or of
    ``‖u - exact‖ / ‖exact‖ + ...`` with ``relative``."""
    return losses(model, x, exact, smooth, relative=relative)[0].mean()


def losses(
    model: OperatorModel, x: Tensor, exact: Tensor, smooth: float, *, relative: bool = False
) -> tuple[Tensor, Tensor]:
    """:func:`objective` per sample ``(batch,)``, and the prediction at ``exact``'s grid ``(batch, *grid, C)``.

    ``relative``: the relative error, not its square. The square weighs each sample's steps by its own error, so a
    batch's worst samples drive them; the relative error weighs them alike, as the FNO's authors train."""
    return scored(model, model(x), exact, smooth, relative=relative)


def scored(
    model: OperatorModel, u: Tensor, exact: Tensor, smooth: float, *, relative: bool = False
) -> tuple[Tensor, Tensor]:
    """:func:`losses` of the model's output coefficients ``u`` ``(batch, C, *sizes)`` (from its forward pass, or a
    wrapper's such as DDP's): the loss per sample and the prediction at ``exact``'s grid."""
    grid = exact.shape[1:-1]
    weights = [a.weights(p, exact.dtype, exact.device) for a, p in zip(model.axes, grid, strict=True)]
    pred = model.values(u, grid)
    loss = relative_sq(pred, exact, weights)
    if relative:
        loss = loss.clamp_min(torch.finfo(pred.dtype).tiny).sqrt()
    weight = smoothing(smooth, model.axes)
    if weight > 0:
        boundaries = [a.boundary for a in model.axes]
        loss = loss + weight * roughness(u, boundaries) / exact.pow(2).flatten(1).mean(-1)
    return loss, pred


@torch.no_grad()
def errors(model: OperatorModel, s: Samples, chunk: int = 256) -> Tensor:
    """Relative L² errors per sample of ``s`` (at its own resolution), float64 on the CPU."""
    device = next(iter(model.parameters())).device
    grid = s.grid
    weights = [a.weights(p) for a, p in zip(s.axes, grid, strict=True)]
    out = []
    for i in range(0, len(s), chunk):
        u = model.values(model(s.inputs[i : i + chunk].to(device)), grid).double().cpu()
        out.append(relative_sq(u, s.outputs[i : i + chunk], weights).sqrt())
    return torch.cat(out)


#: the samples :meth:`OperatorTask.collapsed` predicts, and the spread below which their predictions are "the same"
PROBE, FLAT = 64, 1e-6


def collapse(pred: Tensor, exact: Tensor) -> str | None:
    """Why ``pred`` no longer depends on its input, or ``None``: ``(batch, *grid, C)`` predictions of ``batch``
    different inputs whose root-mean-square spread about their mean is under ``FLAT`` of the exact outputs'
    (which must spread: targets that are all the same are not a collapse)."""
    spread = (exact - exact.mean(0)).pow(2).mean().sqrt()
    flat = (pred - pred.mean(0)).pow(2).mean().sqrt()
    if len(pred) < 2 or not spread > 0 or not flat < FLAT * spread:  # NaN is a divergence, not a collapse
        return None
    return (
        f"the model predicts the same output for every one of {len(pred)} training inputs (their spread is "
        f"{float(flat / spread):.1e} of the data's)"
    )


def build_model(config: Config, train: Samples) -> OperatorModel:
    """A seeded model for ``train``'s shape, its scales fitted on ``train``."""
    torch.manual_seed(config.seed)
    model = build(config, Shape.of(train))
    model.fit_scales(train.inputs, train.outputs)
    return model


def optimiser(config: Config, model: torch.nn.Module) -> tuple[torch.optim.Optimizer, OneCycle]:
    """The run's optimiser on ``model`` and its one-cycle schedule (:attr:`Config.optimiser`): Muon on the hidden
    matrices of the Funcformers' layers (:func:`training.muon.hidden_matrices`) and Adam (``β₂ = beta2``) on every
    other weight, or Adam on all of them (:meth:`Config.adam`)."""
    if config.optimiser == "adam":
        return config.adam(model.parameters())
    matrices = hidden_matrices(model, (EncoderLayer,))
    muon = for_model(model, matrices, lr=config.lr, betas=(0.9, config.beta2), weight_decay=config.weight_decay)
    return muon, OneCycle(muon, config.lr, config.steps, config.warmup)


class OperatorTask(Optimised):
    """One seeded training run: model, its optimiser on a one-cycle schedule (:func:`optimiser`), and the batch
    sampler."""

    model: OperatorModel

    def __init__(self, config: Config, train: Samples, tests: Mapping[str, Samples], device: torch.device) -> None:
        self.config, self.device = config, device
        self.model = build_model(config, train).to(device)
        self.optimiser, self.schedule = optimiser(config, self.model)
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        self.axes, self.grid = train.axes, train.grid
        self.x = train.inputs.to(device)
        self.u = train.outputs.to(device, self.model.dtype)
        self.tests = dict(tests)

    def train_step(self) -> Tensor:
        idx = torch.randint(0, len(self.x), (self.config.batch,), generator=self.sampler).to(self.device)
        x, u = self.x[idx], self.u[idx]
        if self.config.augment != "none":  # drawn from the sampler: checkpointed, so a resume repeats it
            which = symmetry.draw(self.config.augment, len(idx), self.axes, self.grid, self.sampler)
            x = symmetry.move(x, which, self.config.augment, self.axes)
            u = symmetry.move(u, which, self.config.augment, self.axes)
        loss = objective(self.model, x, u, self.config.smooth, relative=self.config.loss == "relative")
        self.optimise(loss, clip=self.config.clip)
        return loss

    @torch.no_grad()
    def collapsed(self) -> str | None:
        """Whether the model stopped depending on its input (:func:`collapse`, on the first ``PROBE`` training
        samples); the loop stops such a run (:class:`~training.Collapsed`)."""
        x, u = self.x[:PROBE], self.u[:PROBE]
        return collapse(self.model.values(self.model(x), self.grid), u)

    def errors(self) -> dict[str, Tensor]:
        """Held-out relative L² errors per sample, per test set."""
        return {name: errors(self.model, s) for name, s in self.tests.items()}

    def evaluate(self) -> dict[str, float]:
        return {f"{name}_rel_l2": float(e.mean()) for name, e in self.errors().items()}


@dataclass(frozen=True)
class Run:
    """What :func:`train` returns: the trained model, the loop's record, and the task (for its test sets)."""

    trained: Trained[OperatorModel]
    task: OperatorTask


def train(
    config: Config,
    train_set: Samples,
    tests: Mapping[str, Samples],
    out: Path | None,
    device: torch.device | str = "cpu",
    *,
    shape: Shape | None = None,
    **options: Unpack[FitOptions],
) -> Run:
    """Train (or resume from ``out/checkpoint.pt``) until ``config.steps`` or ``stop_after`` steps. ``shape``: what
    the checkpoint records of the data (default ``Shape.of(train_set)``; a time-dependent run's says how time
    enters)."""
    check_fit(config, train_set)
    task = OperatorTask(config, train_set, tests, torch.device(device))
    fix = "try a smaller --config lr= or a --config clip= (gradient-norm clipping)"
    progress = fit(
        task,
        config=record(config, shape if shape is not None else Shape.of(train_set)),
        steps=config.steps,
        out=out,
        eval_every=config.eval_every,
        checkpoint_every=config.checkpoint_every,
        fix=fix,
        meta=SPEC.meta(),
        reads=recorded,
        **options,
    )
    return Run(Trained.of(task.model, progress), task)
