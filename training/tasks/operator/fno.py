"""neuraloperator's FNO as the peer, trained by its authors' recipe on the same samples in the same run.

The model is neuraloperator 2.0's ``FNO`` with 4 Fourier layers, lifting and projection channel ratios 2 and the
grid as a positional embedding; a :class:`Recipe` gives what its authors recommend for a problem -- the modes per
axis, the norm, the optimiser and its schedule:

* :data:`DARCY` (neuraloperator's ``config/darcy_config.py``): ``16`` modes, group norm; AdamW at ``5e-3``, weight
  decay ``1e-4``, the rate halved five times over the run (theirs: every 60 of 300 epochs);
* :data:`BURGERS` (the FNO paper, 1D): ``16`` modes, no norm; Adam at ``1e-3``, weight decay ``1e-4``, halved every
  100 of 500 epochs -- five times over the run;
* :data:`NAVIER_STOKES` (the FNO paper's FNO-2D, ten states in, the next out): ``12`` modes, no norm; Adam at
  ``1e-3``, weight decay ``1e-4``, halved five times over the run.

The hidden width is chosen so the parameter count (real numbers: :func:`count`) is nearest the operator model's
(:func:`width_for`). The peer reads the inputs standardised as the operator model does (``log`` first where
configured), trains on the same batches -- the same draws and the same symmetries -- on the same loss (the squared
relative L² error), and is evaluated on every test set at its own resolution (zero-shot off the training grid). On
trajectories, :class:`UnrolledFNOTask` trains it on a loss unrolled through its own predictions, as the FNO paper
trains FNO-2D and as :class:`~training.tasks.operator.rollout.UnrolledTask` trains the operator model.

On a time budget (:func:`train_fno` given a :class:`~training.deadline.Clock`), the peer trains to the deadline as
the operator model does: the rate halved as the clock's progress passes each fifth, the held-out curve taken as it
passes each eighth, and the run stopped before a step that would not end in time.

Needs the ``bench`` extra (``pip install -e ".[bench]"``); without it :func:`check_available` says so in one line.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

from operators import symmetry
from operators.dataset import Samples
from operators.layout import Axis
from training.deadline import Clock
from training.denormals import flush_denormals
from training.errors import UserError
from training.progress import progress_bar
from training.threads import use_threads

from .config import Config
from .rollout import draw_sequences, unrollable, unrolled_loss, windows
from .task import relative_sq


@dataclass(frozen=True)
class Recipe:
    """An FNO configured as its authors recommend for a problem (the width aside: from the parameter budget)."""

    modes: int = 16
    norm: Literal["group_norm"] | None = "group_norm"
    optimiser: Literal["adam", "adamw"] = "adamw"
    lr: float = 5e-3
    weight_decay: float = 1e-4
    halvings: int = 5  # the rate halved every 1/halvings of the run (theirs: every 60 of 300 epochs, 100 of 500)


DARCY = Recipe()
BURGERS = Recipe(modes=16, norm=None, optimiser="adam", lr=1e-3)
NAVIER_STOKES = Recipe(modes=12, norm=None, optimiser="adam", lr=1e-3)


def check_available() -> None:
    """A :class:`~training.UserError` when neuraloperator is not installed."""
    if importlib.util.find_spec("neuralop") is None:
        raise UserError("--baseline fno needs neuraloperator: pip install -e '.[bench]' (neuraloperator==2.0.0)")


def fno(dims: int, c_in: int, c_out: int, hidden: int, modes: int, norm: str | None = "group_norm") -> nn.Module:
    """neuraloperator's FNO of ``hidden`` channels for a grid of ``dims`` axes."""
    from neuralop.models import FNO

    model: nn.Module = FNO(
        n_modes=(modes,) * dims,
        in_channels=c_in,
        out_channels=c_out,
        hidden_channels=hidden,
        n_layers=4,
        lifting_channel_ratio=2,
        projection_channel_ratio=2,
        norm=norm,
    )
    return model


def count(m: nn.Module) -> int:
    """The real numbers a model learns: a complex weight counts twice (its real and imaginary parts), as
    neuraloperator's ``count_model_params`` counts it. Summing ``numel()`` counts an FNO's spectral weights once and
    gives it nearly twice the real weights of a real-valued model of the same "size"."""
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in m.parameters())


def width_for(params: int, dims: int, c_in: int, c_out: int, modes: int, norm: str | None = "group_norm") -> int:
    """The hidden width (2..256) whose FNO's parameter count is nearest ``params`` (the count grows with the width:
    bisection, a handful of models built)."""

    def size(h: int) -> int:
        return count(fno(dims, c_in, c_out, h, modes, norm))

    lo, hi = 2, 256
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= params else (lo, mid)
    return min((lo, hi), key=lambda h: abs(size(h) - params))


class _Inputs:
    """The standardisation the operator model applies, channels first for the FNO."""

    def __init__(self, config: Config, train: Samples) -> None:
        self.log = config.log_input
        x = self.read(train.inputs)
        dims = tuple(range(x.ndim - 1))
        self.shift, self.scale = x.mean(dims), x.std(dims).clamp_min(1e-12)
        self.out = train.outputs.pow(2).mean(tuple(range(train.outputs.ndim - 1))).rsqrt()

    def read(self, inputs: Tensor) -> Tensor:
        return inputs.log() if self.log else inputs

    def __call__(self, inputs: Tensor) -> Tensor:
        """``(batch, *grid, C)`` raw -> ``(batch, C, *grid)`` standardised, float32."""
        shift, scale = self.shift.to(inputs.device), self.scale.to(inputs.device)
        return ((self.read(inputs) - shift) / scale).movedim(-1, 1).float()


class FNOTask:
    """The peer's training run: the FNO, its recipe's optimiser, and a sampler drawing what the operator task draws
    (seeded alike: the same batches and symmetries, step by step)."""

    def __init__(
        self,
        config: Config,
        recipe: Recipe,
        train: Samples,
        params: int,
        device: torch.device,
        hidden: int | None = None,
    ) -> None:
        check_available()
        self.config, self.recipe, self.device = config, recipe, device
        self.axes, self.grid = train.axes, train.grid
        dims, (c_in, c_out) = len(train.axes), train.channels
        self.modes = min([recipe.modes, *(p // 2 for p in train.grid)])
        self.hidden = hidden if hidden is not None else width_for(params, dims, c_in, c_out, self.modes, recipe.norm)
        torch.manual_seed(config.seed)
        self.model = fno(dims, c_in, c_out, self.hidden, self.modes, recipe.norm).to(device)
        self.prep = _Inputs(config, train)
        self.x, self.u = self.prep(train.inputs).to(device), train.outputs.float().to(device)
        self.scale = self.prep.out.float().to(device)
        kind = torch.optim.AdamW if recipe.optimiser == "adamw" else torch.optim.Adam
        self.optimiser = kind(self.model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
        self.every = max(1, config.steps // recipe.halvings) if recipe.halvings else config.steps + 1
        self.sampler = torch.Generator().manual_seed(config.seed + 1)
        self.weights = [a.weights(p, torch.float32, device) for a, p in zip(train.axes, train.grid, strict=True)]
        self.step = 0
        self.clock: Clock | None = None  # halvings by its progress, where given

    @property
    def parameters(self) -> int:
        return count(self.model)

    def train_step(self) -> Tensor:
        self.model.train()
        c = self.config
        idx = torch.randint(0, len(self.x), (c.batch,), generator=self.sampler).to(self.device)
        xb, ub = self.x[idx].movedim(1, -1), self.u[idx]
        if c.augment != "none":
            which = symmetry.draw(c.augment, len(idx), self.axes, self.grid, self.sampler)
            xb, ub = (symmetry.move(t, which, c.augment, self.axes) for t in (xb, ub))
        pred = self.model(xb.movedim(-1, 1).contiguous()).movedim(1, -1) / self.scale
        loss = relative_sq(pred, ub, self.weights).mean()
        self.optimise(loss)
        return loss

    def optimise(self, loss: Tensor) -> None:
        """One step of the recipe's optimiser on ``loss``, the rate halved on its schedule: every ``steps /
        halvings`` steps, or, following a :attr:`clock`, each time its progress passes another ``1 / halvings``."""
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        self.optimiser.step()
        self.step += 1
        if self.clock is None:
            halved = self.step // self.every
        else:
            halved = min(int(self.clock.progress * self.recipe.halvings), self.recipe.halvings)
        for group in self.optimiser.param_groups:
            group["lr"] = self.recipe.lr * 0.5**halved

    @torch.no_grad()
    def predict(self, inputs: Tensor) -> Tensor:
        """Outputs ``(batch, *grid, C_out)`` at the inputs' own grid (float64, CPU)."""
        self.model.eval()
        outs = [
            (self.model(self.prep(inputs[i : i + 64]).to(self.device)).movedim(1, -1) / self.scale).double().cpu()
            for i in range(0, len(inputs), 64)
        ]
        return torch.cat(outs)

    def errors(self, s: Samples) -> Tensor:
        """Relative L² errors per sample of ``s`` at its own resolution (zero-shot off the training grid)."""
        weights = [a.weights(p) for a, p in zip(s.axes, s.grid, strict=True)]
        return relative_sq(self.predict(s.inputs), s.outputs, weights).sqrt()


class UnrolledFNOTask(FNOTask):
    """The peer on trajectories ``(N, T, *grid[, C])`` with a loss unrolled over ``unroll`` steps from exact windows
    of ``window`` states, as :class:`~training.tasks.operator.rollout.UnrolledTask` trains the operator model (the
    same draws from the same seed): the FNO paper trains its 2D model on its own rollouts."""

    def __init__(
        self,
        config: Config,
        recipe: Recipe,
        trajectories: Tensor,
        axes: Sequence[Axis],
        window: int,
        unroll: int,
        params: int,
        device: torch.device,
        hidden: int | None = None,
    ) -> None:
        t = unrollable(trajectories, len(axes), window, unroll, "UnrolledFNOTask")
        super().__init__(config, recipe, windows(t, window, axes), params, device, hidden)
        self.trajectories = t.float().to(device)
        self.window, self.unroll = window, unroll

    def _step(self, x: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        pred = self.model(self.prep(x)).movedim(1, -1) / self.scale
        return relative_sq(pred, target, self.weights), pred

    def train_step(self) -> Tensor:
        self.model.train()
        c = self.config
        length = self.window + self.unroll
        seq = draw_sequences(self.trajectories, length, c.batch, c.augment, self.axes, self.sampler)
        loss = unrolled_loss(self._step, seq, self.window, self.unroll)
        self.optimise(loss)
        return loss


@dataclass
class Result:
    """The peer's run: its size, its held-out curve ``(step, seconds, error of the first test set)``, and errors."""

    hidden: int
    parameters: int
    steps: int
    seconds: float = 0.0
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    errors: dict[str, Tensor] = field(default_factory=dict)


def train_fno(
    config: Config,
    train: Samples,
    tests: Mapping[str, Samples],
    params: int,
    device: torch.device,
    recipe: Recipe = DARCY,
    evals: int = 8,
    *,
    clock: Clock | None = None,
    threads: int | None = None,
    progress: bool = False,
) -> Result:
    """The peer at about ``params`` parameters for ``config.steps`` steps of ``config.batch`` -- or, given a
    ``clock``, until its deadline (the steps a cap) -- on the operator model's batches and symmetries, evaluated on
    ``tests`` (``seconds`` counts the steps, not the evaluations; the clock counts both).

    It trains on ``threads`` torch threads (default: by its size, :func:`~training.threads.default_threads`), the
    previous count restored after, with subnormals flushed as :func:`training.fit` flushes them; ``progress`` shows
    a progress bar (steps, or the clock's seconds).
    """
    task = FNOTask(config, recipe, train, params, device)
    task.clock = clock
    result = Result(task.hidden, task.parameters, config.steps)
    marks = {round(config.steps * (i + 1) / evals) for i in range(evals)}
    first = next(iter(tests), None)
    before = torch.get_num_threads()
    chosen = use_threads(threads, task.parameters)
    restore = flush_denormals()
    who = f"FNO peer, {chosen}"
    if clock is None:
        bar = progress_bar(config.steps, 0, progress, who)
    else:
        if not clock.started:
            clock.start()
        bar = progress_bar(math.ceil(clock.seconds), int(clock.spent), progress, who, unit="s")
    try:
        step = 0
        while step < config.steps and not (clock is not None and clock.over()):
            seen = 0 if clock is None else int(clock.spent)
            t0 = time.perf_counter()
            task.train_step()
            result.seconds += time.perf_counter() - t0
            step += 1
            if clock is None:
                due = step in marks
            else:
                clock.tick()
                due = clock.over() or clock.progress * evals >= len(result.curve) + 1
            if due and first is not None:
                result.curve.append((step, result.seconds, float(task.errors(tests[first]).mean())))
                if clock is not None:
                    clock.tick(end="evaluation")
            bar.update(1 if clock is None else min(int(clock.spent), math.ceil(clock.seconds)) - seen)
        result.steps = step
        result.errors = {name: task.errors(s) for name, s in tests.items()}
    finally:
        bar.close()
        restore()
        torch.set_num_threads(before)
    return result
