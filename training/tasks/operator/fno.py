"""neuraloperator's FNO as the peer, trained by its authors' recipe on the same samples in the same run.

The model (neuraloperator 2.0's ``FNO``, as its Darcy config builds it): 4 Fourier layers with
``min(16, P/2)`` modes per axis, lifting and projection channel ratios 2, group norm, the grid as a positional
embedding; its hidden channels chosen so its parameter count is nearest the operator model's. The recipe: AdamW,
learning rate ``5e-3``, weight decay ``1e-4``, the rate halved five times over the run (theirs: every 60 of 300
epochs). It reads the inputs standardised as the operator model does (``log`` first where configured) and is
trained on the same batches -- the same draws and the same symmetries -- on the same loss (the squared relative
L² error), and evaluated on every test set at its own resolution (zero-shot off the training grid).

Needs the ``bench`` extra (``pip install -e ".[bench]"``); without it :func:`check_available` says so in one line.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from operators import symmetry
from operators.dataset import Samples
from training.errors import UserError

from .config import Config
from .train import relative_sq

MODES = 16


def check_available() -> None:
    """A :class:`~training.UserError` when neuraloperator is not installed."""
    if importlib.util.find_spec("neuralop") is None:
        raise UserError('--baseline fno needs neuraloperator: pip install -e ".[bench]" (neuraloperator==2.0.0)')


def fno(dims: int, c_in: int, c_out: int, hidden: int, modes: int) -> nn.Module:
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
        norm="group_norm",
    )
    return model


def count(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def width_for(params: int, dims: int, c_in: int, c_out: int, modes: int) -> int:
    """The hidden width (2..256) whose FNO's parameter count is nearest ``params`` (the count grows with the width:
    bisection, a handful of models built)."""

    def size(h: int) -> int:
        return count(fno(dims, c_in, c_out, h, modes))

    lo, hi = 2, 256
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= params else (lo, mid)
    return min((lo, hi), key=lambda h: abs(size(h) - params))


@dataclass
class Result:
    """The peer's run: its size, its held-out curve ``(step, seconds, error of the first test set)``, and errors."""

    hidden: int
    parameters: int
    steps: int
    seconds: float = 0.0
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    errors: dict[str, Tensor] = field(default_factory=dict)


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
        return ((self.read(inputs) - self.shift) / self.scale).movedim(-1, 1).float()


def train_fno(
    config: Config, train: Samples, tests: Mapping[str, Samples], params: int, device: torch.device, evals: int = 8
) -> Result:
    """The peer at about ``params`` parameters for ``config.steps`` steps of ``config.batch``, the same batches and
    symmetries as the operator model's run (its sampler seeded alike), evaluated on ``tests``."""
    check_available()
    dims, (c_in, c_out) = len(train.axes), train.channels
    modes = min([MODES, *(p // 2 for p in train.grid)])
    hidden = width_for(params, dims, c_in, c_out, modes)
    torch.manual_seed(config.seed)
    model = fno(dims, c_in, c_out, hidden, modes).to(device)
    result = Result(hidden, count(model), config.steps)
    prep = _Inputs(config, train)
    x, u = prep(train.inputs).to(device), train.outputs.float().to(device)
    scale = prep.out.float().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=1e-4)
    every = max(1, config.steps // 5)
    sampler = torch.Generator().manual_seed(config.seed + 1)
    weights = [a.weights(p, torch.float32, device) for a, p in zip(train.axes, train.grid, strict=True)]
    marks = {round(config.steps * (i + 1) / evals) for i in range(evals)}
    first = next(iter(tests), None)
    clock = 0.0
    for step in range(1, config.steps + 1):
        t0 = time.perf_counter()
        model.train()
        idx = torch.randint(0, len(x), (config.batch,), generator=sampler).to(device)
        xb, ub = x[idx].movedim(1, -1), u[idx]
        if config.augment != "none":
            which = symmetry.draw(config.augment, len(idx), train.axes, train.grid, sampler)
            xb, ub = (symmetry.move(t, which, config.augment, train.axes) for t in (xb, ub))
        pred = model(xb.movedim(-1, 1).contiguous()).movedim(1, -1) / scale
        loss = relative_sq(pred, ub, weights).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        if step % every == 0:
            for group in opt.param_groups:
                group["lr"] *= 0.5
        clock += time.perf_counter() - t0
        if step in marks and first is not None:
            err = float(evaluate(model, prep, scale, tests[first], device).mean())
            result.curve.append((step, clock, err))
    result.seconds = clock
    result.errors = {name: evaluate(model, prep, scale, s, device) for name, s in tests.items()}
    return result


@torch.no_grad()
def evaluate(model: nn.Module, prep: _Inputs, scale: Tensor, s: Samples, device: torch.device) -> Tensor:
    """Relative L² errors per sample of ``s`` at its own resolution (the FNO zero-shot off its training grid)."""
    model.eval()
    weights = [a.weights(p) for a, p in zip(s.axes, s.grid, strict=True)]
    out = []
    for i in range(0, len(s), 64):
        pred = (model(prep(s.inputs[i : i + 64]).to(device)).movedim(1, -1) / scale).double().cpu()
        out.append(relative_sq(pred, s.outputs[i : i + 64], weights).sqrt())
    return torch.cat(out)
