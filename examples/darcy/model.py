r"""The Funcformer for Darcy flow: Chebyshev coefficients of :math:`\log a` in, a series for :math:`u` out.

Coordinates: the physical square :math:`[0, 1]^2` is the Chebyshev square :math:`[-1, 1]^2` through
:math:`t = 2x - 1`.

* Input: :math:`\log a`, standardised, interpolated at the ``n x n`` first-kind Chebyshev points (a DCT
  per axis; :func:`input_coefficients`) -- a ``Field[X, Y]`` with ``X = Y = Chebyshev(n)``. ``a`` is a
  function (:meth:`~examples.darcy.data.DarcyData.log_a_at`), so it is *sampled* at those points, not fitted
  from the grid. For the piecewise-constant family the interpolant of a jump oscillates (Gibbs) and
  converges only in :math:`L^2`; the network sees that series, never the exact interfaces.
* Network: :class:`models.funcformer.Funcformer` unchanged (sequence ``X``, features ``Y``, a Vector of
  channels as the model structure).
* Output: the boundary condition is built in. The network's series :math:`v` is multiplied by the bubble
  :math:`b(x, y) = (1 - x^2)(1 - y^2)`, exactly in coefficient space: :math:`u = B v B^T` with
  :func:`bubble_matrix` ``B`` ``(n + 2, n)``, from :math:`(1 - t^2) T_k = T_k/2 - T_{k+2}/4 - T_{|k-2|}/4`.
  So :math:`u` is an ``(n + 2) x (n + 2)`` Chebyshev series vanishing on the boundary, evaluated on the
  grid for the loss.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor, nn

from applicative import Field, LinearAttention, Normalise, ScaledSoftmax
from examples.training import CheckpointError, load_checkpoint
from instances import Chebyshev, Vector
from instances.chebyshev import coefficients, points, vandermonde
from models.funcformer import Funcformer, FuncformerConfig

from .config import Config
from .data import DarcyData

CHECKPOINT = "checkpoint.pt"


class X(Chebyshev):
    """The first argument ``t = 2x - 1`` of ``log a`` and of ``u``: the Transformer's sequence."""


class Y(Chebyshev):
    """The second argument ``t = 2y - 1``: the Transformer's features."""


def bubble_matrix(n: int) -> Tensor:
    """``B`` ``(n + 2, n)``: the coefficients of ``(1 - t²) Σ_k v_k T_k`` are ``B v`` (exact), float64."""
    b = torch.zeros(n + 2, n, dtype=torch.float64)
    for k in range(n):
        b[k, k] += 0.5
        b[k + 2, k] -= 0.25
        b[abs(k - 2), k] -= 0.25
    return b


def input_coefficients(d: DarcyData, n: int) -> Tensor:
    """``log a`` of every sample, interpolated at the ``n x n`` first-kind points: coefficients ``(count, n, n)``."""
    x = (points(n) + 1) / 2
    return coefficients(coefficients(d.log_a_at(x, x), -1), -2)


def grid_matrix(n: int, grid_points: int) -> Tensor:
    """``V`` ``(points, n)``: ``T_k(2 x_i - 1)`` at the uniform nodes ``x_i`` of ``[0, 1]``, float64."""
    return vandermonde(torch.linspace(-1, 1, grid_points, dtype=torch.float64), n)


def _normalise(config: Config) -> Normalise:
    scale = 1.0 / math.sqrt(config.width // config.heads)
    return ScaledSoftmax(scale) if config.normalise == "softmax" else LinearAttention(scale)


class DarcyModel(nn.Module):
    """``log a`` coefficients ``(batch, n, n)`` -> ``u`` coefficients ``(batch, n + 2, n + 2)`` (zero on the boundary).

    ``in_shift``, ``in_scale`` (standardising ``log a``) and ``out_scale`` are buffers: they travel in the
    state dict with the weights.
    """

    in_shift: Tensor
    in_scale: Tensor
    out_scale: Tensor
    bubble: Tensor
    grid: Tensor

    def __init__(self, config: Config, in_shift: float = 0.0, in_scale: float = 1.0, out_scale: float = 1.0) -> None:
        super().__init__()
        self.config = config
        self.dtype = getattr(torch, config.dtype)
        n = config.modes
        self.x, self.y = X(n), Y(n)
        cfg = FuncformerConfig(heads=config.heads, depth=config.depth, normalise=_normalise(config), eps=config.eps)
        self.net: Funcformer[X, Y, Vector] = Funcformer(
            self.x, self.y, Vector(config.width), Vector(config.hidden), cfg, dtype=self.dtype
        )
        for name, value in (("in_shift", in_shift), ("in_scale", in_scale), ("out_scale", out_scale)):
            self.register_buffer(name, torch.tensor(value, dtype=torch.float64))
        self.register_buffer("bubble", bubble_matrix(n).to(self.dtype))
        self.register_buffer("grid", grid_matrix(n + 2, config.points).to(self.dtype))

    def forward(self, log_a: Tensor) -> Tensor:
        """``log a`` coefficients ``(batch, n, n)`` -> ``u`` coefficients ``(batch, n + 2, n + 2)``."""
        c = log_a.to(self.dtype)
        c = (c - self._constant(c)) / self.in_scale.to(self.dtype)
        v = self.net(Field(c, (self.x, self.y))).tensor / self.out_scale.to(self.dtype)
        return self.bubble @ v @ self.bubble.mT

    def on_grid(self, u: Tensor) -> Tensor:
        """``u`` coefficients ``(..., n + 2, n + 2)`` at the ``points x points`` nodes of ``[0, 1]²``."""
        return self.grid @ u @ self.grid.mT

    def _constant(self, c: Tensor) -> Tensor:
        """The constant function ``in_shift`` as coefficients (``T_0 T_0`` only), shaped like ``c``."""
        one = torch.zeros_like(c[0])
        one[0, 0] = 1.0
        return self.in_shift.to(c.dtype) * one


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> DarcyModel:
    """The trained model of a run directory (``python -m examples.darcy --out run_dir``), in eval mode."""
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        raise CheckpointError(f"{path}: no checkpoint there; train with python -m examples.darcy --out {run_dir}")
    blob = load_checkpoint(path, required=("config", "task"))
    try:
        model = DarcyModel(Config(**blob["config"]))
        model.load_state_dict(blob["task"]["model"])
    except (TypeError, KeyError, RuntimeError) as e:
        raise CheckpointError(f"{path}: not a checkpoint of this Darcy model ({str(e).splitlines()[0]})") from None
    return model.to(device).eval()
