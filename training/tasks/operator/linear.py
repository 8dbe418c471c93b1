r"""The best linear map on the same samples: the baseline a learned operator's figure is read beside.

:func:`least_squares` fits ``y = W x + b`` from the training samples' input values to their output values by ridge
least squares, and the fitted :class:`LinearMap` predicts on the same grid. Which linear maps it searches follows
the data's axes:

* **all axes periodic**: the maps that commute with translations (the symmetry the models are given there, as
  ``augment="shifts"``). Such a map is diagonal in the grid's Fourier modes: at each mode ``k``,
  ``ŷ_k = ŵ_k x̂_k`` with ``ŵ_k`` a ``(C_in + 1) × C_out`` complex matrix, fitted independently per mode -- a
  convolution with a kernel as wide as the domain (the FNO's spectral layer with every mode and no nonlinearity).
  The ``+ 1`` is a constant input channel: the bias, which lives in mode ``0``;
* **otherwise**: every linear map of the grid's values, dense: ``W`` is ``(|grid| C_in + 1) × |grid| C_out``.

The ridge ``λ`` (relative to each block's mean Gram eigenvalue) is the one of :data:`RIDGES` with the smallest
relative L² error on the last fifth of the training samples, fitted on the rest; the map is then refitted on all
of them with it. Errors are measured as the models' are: relative L² with the layouts' quadrature.

    >>> fit = least_squares(train)                          # doctest: +SKIP
    >>> errors = fit.errors(test)                           # (N,) relative L² errors   # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from operators.dataset import Samples
from training.errors import InputError

from .task import relative_sq

#: the ridge ladder, relative to each block's mean Gram eigenvalue
RIDGES = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)
#: a dense map's inputs at most (its Gram matrix is this squared)
MAX_DENSE = 8192


@dataclass(frozen=True)
class LinearMap:
    """A fitted linear map from input to output values on one grid.

    Attributes:
        weights: per block ``(blocks, C_in + 1, C_out)`` for a map per Fourier mode (``blocks`` the modes of
            ``rfftn`` over the grid, complex), or ``(1, |grid| C_in + 1, |grid| C_out)`` for a dense one (real).
        grid: the samples per axis it was fitted on (and predicts on).
        modes: whether it acts per Fourier mode (every axis periodic).
        ridge: the chosen ridge, relative to each block's mean Gram eigenvalue.
    """

    weights: Tensor
    grid: tuple[int, ...]
    modes: bool
    ridge: float

    def __call__(self, inputs: Tensor) -> Tensor:
        """Inputs ``(N, *grid, C_in)`` -> predicted outputs ``(N, *grid, C_out)``, float64."""
        if tuple(inputs.shape[1:-1]) != self.grid:
            raise InputError(
                f"a linear map fitted on a grid of {self.grid} samples, given inputs of shape {tuple(inputs.shape)}; "
                f"a least-squares map predicts on its own grid only: fit it again on {tuple(inputs.shape[1:-1])}"
            )
        x = _features(inputs.double(), self.modes)
        y = x @ self.weights
        return _values(y, inputs.shape[0], self.grid, self.modes)

    def errors(self, s: Samples) -> Tensor:
        """Relative L² errors per sample of ``s`` ``(N,)``, with the layouts' quadrature."""
        weights = [a.weights(p) for a, p in zip(s.axes, s.grid, strict=True)]
        return relative_sq(self(s.inputs), s.outputs.double(), weights).sqrt()


def _features(x: Tensor, modes: bool) -> Tensor:
    """Inputs ``(N, *grid, C)`` with a constant channel, as :func:`_blocks`."""
    return _blocks(torch.cat([x, torch.ones_like(x[..., :1])], -1), modes)


def _blocks(y: Tensor, modes: bool) -> Tensor:
    """Values ``(N, *grid, C)`` as least-squares blocks: per Fourier mode ``(M, N, C)`` complex, or dense
    ``(1, N, |grid| C)``."""
    if not modes:
        return y.flatten(1)[None]
    out: Tensor = torch.fft.rfftn(y, dim=tuple(range(1, y.ndim - 1)))  # (N, *modes, C)
    return out.flatten(1, -2).transpose(0, 1)


def _values(y: Tensor, n: int, grid: tuple[int, ...], modes: bool) -> Tensor:
    """Blocks of predictions back to values ``(N, *grid, C_out)``."""
    c = y.shape[-1]
    if not modes:
        return y[0].reshape(n, *grid, -1)
    half = (*grid[:-1], grid[-1] // 2 + 1)
    yh = y.transpose(0, 1).reshape(n, *half, c)
    out: Tensor = torch.fft.irfftn(yh, s=grid, dim=tuple(range(1, len(grid) + 1)))
    return out


def _solve(x: Tensor, y: Tensor, ridges: tuple[float, ...]) -> list[Tensor]:
    """Ridge least-squares weights per block for each relative ridge: ``(XᴴX + λ tr(XᴴX)/C I)⁻¹ Xᴴ Y``."""
    gram = x.mH @ x  # (blocks, C, C)
    rhs = x.mH @ y
    e, v = torch.linalg.eigh(gram)
    scale = e.clamp_min(0).mean(-1, keepdim=True).clamp_min(torch.finfo(e.dtype).tiny)
    projected = v.mH @ rhs
    return [v @ (projected / (e.clamp_min(0) + r * scale)[..., None]) for r in ridges]


def least_squares(train: Samples, ridges: tuple[float, ...] = RIDGES) -> LinearMap:
    """The ridge least-squares linear map from ``train``'s inputs to its outputs (per Fourier mode when every axis
    is periodic, dense otherwise), its ridge chosen on a held-out fifth of ``train``."""
    if len(train) < 5:
        raise InputError(f"least_squares: {len(train)} training samples; choosing the ridge needs at least 5")
    if not ridges or min(ridges) <= 0:
        raise InputError(f"least_squares: ridges {ridges}: give one or more positive numbers")
    modes = all(a.periodic for a in train.axes)
    size = train.inputs[0].numel() + 1
    if not modes and size > MAX_DENSE:
        raise InputError(
            f"least_squares: a dense linear map of {size} inputs ({train.grid} samples of {train.channels[0]} "
            f"channels, and a constant) needs a Gram matrix of {size}² numbers; the limit is {MAX_DENSE} inputs: "
            "fit it on a coarser grid (every other sample)"
        )
    x, y = _features(train.inputs.double(), modes), _blocks(train.outputs.double(), modes)
    cut = len(train) - len(train) // 5
    weights = [a.weights(p) for a, p in zip(train.axes, train.grid, strict=True)]
    held = train.outputs[cut:].double()
    scores = []
    for w in _solve(x[:, :cut], y[:, :cut], ridges):
        pred = _values(x[:, cut:] @ w, len(held), train.grid, modes)
        scores.append(float(relative_sq(pred, held, weights).sqrt().mean()))
    best = min(range(len(ridges)), key=scores.__getitem__)
    (w,) = _solve(x, y, (ridges[best],))
    return LinearMap(w, train.grid, modes, ridges[best])
