"""The peer at its best: neuraloperator's FNO configured the ordinary way, and a small sweep of its settings.

:mod:`.fno` trains the FNO by each problem's published recipe, but inside this project's habits: inputs standardised
as the operator model reads them, the outputs' scale divided out, the squared relative L² loss, the rate halved
five times. A user who takes the FNO off the shelf does none of that. :class:`PlainFNOTask` trains it as its
authors' code and documentation do (:class:`Plain`):

* the model: neuraloperator 2.0's ``FNO`` with its defaults (4 Fourier layers, channel MLPs, soft-gated skips,
  lifting and projection ratio 2, the grid as a positional embedding, no norm), ``width`` hidden channels (from the
  parameter budget when not given: :func:`~training.tasks.operator.fno.width_for`), ``modes`` per axis;
* the data: raw values (as FNO's 1D and time-dependent scripts read them), or pointwise Gaussian normalisation --
  each grid point's mean and standard deviation over the training samples, inputs and outputs, the outputs decoded
  before the loss (as FNO's 2D scripts and neuraloperator's Darcy config do); several time states or steps are
  channels;
* the loss: the relative L² error ``‖u - v‖ / ‖v‖`` (neuraloperator's ``LpLoss``, not squared), batch mean, with
  the layouts' quadrature;
* the optimiser: Adam or AdamW at ``lr`` with weight decay ``1e-4``, on a cosine schedule over the run (or the rate
  halved ``halvings`` times); or Muon on the FNO's channel mixers and spectral weights and Adam on the rest
  (:class:`training.muon.Muon`), as the operator model is trained by default, so that the comparison is not of
  optimisers;
* the batches: the operator model's draws from the same seed (:class:`~training.tasks.operator.task.OperatorTask`'s
  sampler, the same samples step by step), moved by the configured symmetry only with ``shifts=True``.

:data:`SWEEP` is the settings tried per row, as many as the operator model gets. Needs the ``bench`` extra
(``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from operators import symmetry
from operators.dataset import Samples
from training import UserError
from training.muon import for_model, hidden_matrices

from .config import Config
from .fno import check_available, count, fno, width_for
from .task import relative_sq


@dataclass(frozen=True)
class Plain:
    """An FNO's settings as its authors' code takes them (the width aside: from the parameter budget when ``None``).

    Attributes:
        width, modes: hidden channels and Fourier modes per axis, as neuraloperator counts them (``n_modes``: the
            signed frequencies, so the real FFT's last axis keeps ``modes // 2 + 1`` of them; the FNO paper's code
            keeps ``modes`` there, its ``16`` being ``31`` here).
        optimiser, lr, weight_decay: Adam or AdamW, its rate and weight decay; or ``"muon"``: Muon on the hidden
            matrices -- the FNO's skips and channel MLPs (its ``1 × 1`` convolutions: ``fno_blocks``' ``Conv1d``
            weights) and its spectral weights, one complex ``(in, out)`` matrix per kept frequency -- and Adam (L2
            decay) on the rest, its lifting and projection among them.
        schedule: ``"cosine"`` annealing to zero over the run, or ``"halvings"`` (the rate halved ``halvings`` times,
            evenly: the FNO paper's ``StepLR``).
        loss: ``"relative"`` (``‖u - v‖ / ‖v‖``, the authors') or ``"squared"`` (its square, the operator model's).
        data: ``"raw"`` values, ``"gaussian"`` (pointwise Gaussian normalisation of inputs and outputs), or
            ``"standardised"`` (the operator model's: inputs to mean 0 and deviation 1 per channel, outputs divided
            by their root-mean-square per channel).
        shifts: train on batches moved by the run's symmetry (``Config.augment``), as the operator model does.
        batches: ``"draws"`` (the operator model's: each batch drawn afresh, with replacement, from the run's seed)
            or ``"epochs"`` (the authors' loaders: a fresh permutation of the training set every epoch, cut into
            batches, the last one short when the batch does not divide it).
    """

    width: int | None = None
    modes: int = 16
    optimiser: Literal["adam", "adamw", "muon"] = "adamw"
    lr: float = 1e-3
    weight_decay: float = 1e-4
    schedule: Literal["cosine", "halvings"] = "cosine"
    halvings: int = 5
    loss: Literal["relative", "squared"] = "relative"
    data: Literal["raw", "gaussian", "standardised"] = "raw"
    shifts: bool = False
    batches: Literal["draws", "epochs"] = "draws"

    def label(self) -> str:
        """A short name: the settings that differ from the default."""
        base = Plain()
        diff = [f"{k}={v}" for k, v in self.__dict__.items() if v != getattr(base, k)]
        return ", ".join(diff) or "plain"


#: the settings tried per row (as many as the operator model gets): the ordinary configuration, its rate doubled
#: and halved, and the paper's step schedule
SWEEP = (Plain(), Plain(lr=2e-3), Plain(lr=5e-4), Plain(schedule="halvings"))


class _Scales:
    """What the model reads and what it is scored on: the data transform of :attr:`Plain.data`, channels first."""

    def __init__(self, kind: str, train: Samples) -> None:
        self.kind = kind
        x, y = train.inputs.double(), train.outputs.double()
        if kind == "gaussian":  # per grid point and channel, over the samples
            self.x = (x.mean(0), x.std(0).clamp_min(1e-12))
            self.y = (y.mean(0), y.std(0).clamp_min(1e-12))
        elif kind == "standardised":
            flat = x.reshape(-1, x.shape[-1])
            self.x = (flat.mean(0), flat.std(0).clamp_min(1e-12))
            self.y = (torch.zeros(y.shape[-1], dtype=y.dtype), y.reshape(-1, y.shape[-1]).pow(2).mean(0).sqrt())
        else:
            self.x = (torch.zeros(x.shape[-1], dtype=x.dtype), torch.ones(x.shape[-1], dtype=x.dtype))
            self.y = (torch.zeros(y.shape[-1], dtype=y.dtype), torch.ones(y.shape[-1], dtype=y.dtype))

    def _at(self, pair: tuple[Tensor, Tensor], like: Tensor) -> tuple[Tensor, Tensor]:
        """The pair on ``like``'s grid ``(batch, *grid, C)``: pointwise statistics resampled (linearly) to another
        resolution, per-channel ones broadcast."""
        shift, scale = pair
        if self.kind == "gaussian" and shift.shape[:-1] != like.shape[1:-1]:
            grid = tuple(like.shape[1:-1])
            mode = "linear" if len(grid) == 1 else "bilinear"

            def resample(t: Tensor) -> Tensor:
                f = nn.functional.interpolate(t.movedim(-1, 0)[None], grid, mode=mode, align_corners=True)
                return f[0].movedim(0, -1)

            shift, scale = resample(shift), resample(scale)
        return shift.to(like.device, like.dtype), scale.to(like.device, like.dtype)

    def encode(self, x: Tensor) -> Tensor:
        """Raw inputs ``(batch, *grid, C_in)`` -> the model's ``(batch, C_in, *grid)``, float32."""
        shift, scale = self._at(self.x, x)
        return ((x - shift) / scale).movedim(-1, 1).float()

    def decode(self, out: Tensor) -> Tensor:
        """The model's ``(batch, C_out, *grid)`` -> outputs ``(batch, *grid, C_out)`` in the data's units."""
        v = out.movedim(1, -1)
        shift, scale = self._at(self.y, v)
        return v * scale + shift


class PlainTask:
    """One seeded training run of a peer ``model`` (reading and giving channels first, ``(batch, C, *grid)``) the
    ordinary way (:class:`Plain`): its optimiser and schedule, its data transform, and the operator model's sampler
    (the same draws as :class:`~training.tasks.operator.task.OperatorTask` from ``config.seed``)."""

    def __init__(
        self, config: Config, plain: Plain, train: Samples, model: nn.Module, device: torch.device | str = "cpu"
    ) -> None:
        self.config, self.plain, self.device = config, plain, torch.device(device)
        self.axes, self.grid = train.axes, train.grid
        self.model = model.to(self.device)
        self.scales = _Scales(plain.data, train)
        self.x, self.u = train.inputs.to(self.device), train.outputs.float().to(self.device)
        self.optimiser = _optimiser(self.model, plain)
        self.schedule = _schedule(self.optimiser, plain, config.steps)
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        self.order = torch.zeros(0, dtype=torch.long)  # what is left of this epoch's permutation ("epochs")
        self.weights = [a.weights(p, torch.float32, self.device) for a, p in zip(train.axes, train.grid, strict=True)]

    @property
    def parameters(self) -> int:
        return count(self.model)

    def train_step(self) -> Tensor:
        """One step on the next batch (:attr:`Plain.batches`: by default drawn as the operator model draws it);
        returns the loss."""
        self.model.train()
        c = self.config
        idx = self._batch().to(self.device)
        x, u = self.x[idx], self.u[idx]
        if c.augment != "none":  # drawn either way: the sampler stays in step with the operator model's
            which = symmetry.draw(c.augment, len(idx), self.axes, self.grid, self.sampler)
            if self.plain.shifts:
                x, u = (symmetry.move(t, which, c.augment, self.axes) for t in (x, u))
        pred = self.scales.decode(self.model(self.scales.encode(x)))
        loss = plain_loss(pred, u, self.weights, self.plain.loss)
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        self.optimiser.step()
        self.schedule.step()
        return loss.detach()

    def _batch(self) -> Tensor:
        """The next batch's sample indices, as :attr:`Plain.batches` says."""
        if self.plain.batches == "draws":
            return torch.randint(0, len(self.x), (self.config.batch,), generator=self.sampler)
        if len(self.order) == 0:
            self.order = torch.randperm(len(self.x), generator=self.sampler)
        idx, self.order = self.order[: self.config.batch], self.order[self.config.batch :]
        return idx

    @torch.no_grad()
    def predict(self, inputs: Tensor) -> Tensor:
        """Outputs ``(batch, *grid, C_out)`` at the inputs' own grid (float64, CPU)."""
        self.model.eval()
        outs = []
        for i in range(0, len(inputs), 64):
            x = inputs[i : i + 64].to(self.device)
            outs.append(self.scales.decode(self.model(self.scales.encode(x))).double().cpu())
        return torch.cat(outs)

    def errors(self, s: Samples) -> Tensor:
        """Relative L² errors per sample of ``s`` at its own resolution (zero-shot off the training grid)."""
        weights = [a.weights(p) for a, p in zip(s.axes, s.grid, strict=True)]
        err: Tensor = relative_sq(self.predict(s.inputs), s.outputs, weights).sqrt()
        return err


class PlainFNOTask(PlainTask):
    """One seeded training run of the plain FNO (neuraloperator's, its defaults), ``width`` from the parameter
    budget ``params`` when :attr:`Plain.width` is not given, at most half the grid's samples in modes."""

    def __init__(
        self, config: Config, plain: Plain, train: Samples, params: int, device: torch.device | str = "cpu"
    ) -> None:
        check_available()
        dims, (c_in, c_out) = len(train.axes), train.channels
        self.modes = min([plain.modes, *(p // 2 for p in train.grid)])
        self.hidden = plain.width if plain.width is not None else width_for(params, dims, c_in, c_out, self.modes, None)
        torch.manual_seed(config.seed)
        super().__init__(config, plain, train, fno(dims, c_in, c_out, self.hidden, self.modes, None), device)


def plain_loss(pred: Tensor, exact: Tensor, weights: Sequence[Tensor], kind: str) -> Tensor:
    """The batch mean of ``‖pred - exact‖ / ‖exact‖`` (``kind="relative"``) or of its square (``"squared"``)."""
    sq = relative_sq(pred, exact, weights)
    loss: Tensor = (sq if kind == "squared" else sq.clamp_min(1e-30).sqrt()).mean()
    return loss


def _optimiser(model: nn.Module, plain: Plain) -> torch.optim.Optimizer:
    lr, wd = plain.lr, plain.weight_decay
    if plain.optimiser != "muon":
        kind = torch.optim.AdamW if plain.optimiser == "adamw" else torch.optim.Adam
        return kind(model.parameters(), lr=lr, weight_decay=wd)
    blocks = getattr(model, "fno_blocks", None)
    if not isinstance(blocks, nn.Module):
        raise UserError(f"optimiser='muon' takes an FNO's channel mixers; {type(model).__name__} has none: use 'adamw'")
    spectral = [p for p in blocks.parameters() if p.is_complex()]
    return for_model(model, hidden_matrices(blocks, (nn.Conv1d,)), spectral, lr=lr, weight_decay=wd)


def _schedule(optimiser: torch.optim.Optimizer, plain: Plain, steps: int) -> torch.optim.lr_scheduler.LRScheduler:
    if plain.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps)
    every = max(1, math.ceil(steps / plain.halvings)) if plain.halvings else steps + 1
    return torch.optim.lr_scheduler.StepLR(optimiser, step_size=every, gamma=0.5)
