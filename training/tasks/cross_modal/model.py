"""The two cross-modal models: scattered samples -> a function, an image -> a function of two variables.

Both are :class:`models.CrossModal` -- a learned Chebyshev field attending to tokens on another
structure -- wrapped with a standardisation that makes the map equivariant to affine changes of the
values, ``a f + b ↦ a f̂ + b`` for ``a > 0`` (the scale is the samples' standard deviation, the shift their mean):

* points: tokens on ``Padded(n, lengths)``, token ``i`` = ``(f_i, T_0(x_i), ..., T_{p-1}(x_i))``;
  output ``Field[T, Value]``, the coefficients of ``f̂(t)`` on ``T = Chebyshev(modes)``;
* grid: tokens on the image's ``Rows``, row ``i`` = ``(f(s_i, s_0..s_{r-1}), T_0(s_i), ..., T_{p-1}(s_i))``;
  output ``Field[X, Y]``, the coefficients of ``f̂(x, y)`` on ``Chebyshev(modes)²`` -- the
  Funcformer's layout (``X`` the sequence, ``Y`` the features), evaluable at any resolution.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from applicative import Field
from instances import Chebyshev, Padded, Vector
from instances.chebyshev import vandermonde
from models.crossmodal import CrossModal, CrossModalConfig

from .config import Config
from .data import grid


class T(Chebyshev):
    """The argument ``t`` of the predicted function (points task)."""


class X(Chebyshev):
    """The first argument of the predicted function (grid task): the query structure."""


class Y(Chebyshev):
    """The second argument (grid task): the output's features."""


class Rows(Vector):
    """The image's rows: the tokens' structure (grid task)."""


class Token(Vector):
    """One token's features: its values and the Chebyshev features of its coordinate."""


class Value(Vector):
    """A scalar function's one output feature."""


class Model(Vector):
    """The model structure."""


def _net(
    config: Config, features: int, query: Chebyshev, out: Vector | Chebyshev
) -> CrossModal[Chebyshev, Vector | Chebyshev, Model]:
    cfg = CrossModalConfig(config.heads, config.memory_depth, config.query_depth)
    return CrossModal(Token(features), query, out, Model(config.width), Vector(config.hidden), cfg)


def _standardise(f: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(f - μ) / s`` on the mask (zero elsewhere), and ``μ``, ``s`` per example (over the last axes).

    Values off the mask are selected out before any arithmetic (never multiplied by a zero): whatever
    they hold, NaN or infinite, they reach neither the result nor a gradient.
    """
    dims = tuple(range(1, f.ndim))
    n = mask.sum(dims, keepdim=True)
    f = torch.where(mask, f, 0.0)
    mu = f.sum(dims, keepdim=True) / n
    centred = torch.where(mask, f - mu, 0.0)
    s = (centred.square().sum(dims, keepdim=True) / n).sqrt().clamp_min(1e-8)
    return centred / s, mu.reshape(-1), s.reshape(-1)


class PointsModel(nn.Module):
    """Scattered samples ``(x, f)`` ``(B, n)`` with ``lengths`` ``(B,)`` -> coefficients ``(B, modes)``."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config, self.t = config, T(config.modes)
        self.net = _net(config, 1 + config.position, self.t, Value(1))

    def tokens(self, x: Tensor, f: Tensor, lengths: Tensor) -> tuple[Field[Padded, Token], Tensor, Tensor]:
        """The standardised tokens on ``Padded(n, lengths) x Token``, and the mean and scale taken off."""
        p = Padded(x.shape[-1], lengths)
        z, mu, s = _standardise(f, p.mask)
        t = torch.cat([z.unsqueeze(-1), vandermonde(x, self.config.position)], -1)
        return Field(t.to(self.net.queries.dtype), (p, Token(t.shape[-1]))), mu, s

    def forward(self, x: Tensor, f: Tensor, lengths: Tensor) -> Tensor:
        tokens, mu, s = self.tokens(x, f, lengths)
        g = self.net(tokens).tensor.squeeze(-1).to(f.dtype)  # (B, modes)
        return _unstandardise(g, mu, s)


class GridModel(nn.Module):
    """Images ``(B, r, r)`` on the uniform grid -> coefficients ``(B, modes, modes)`` of ``f̂(x, y)``."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config, self.x, self.y = config, X(config.modes), Y(config.modes)
        self.net = _net(config, config.resolution + config.position, self.x, self.y)

    def tokens(self, image: Tensor) -> tuple[Field[Rows, Token], Tensor, Tensor]:
        """The standardised rows with their coordinates' features on ``Rows x Token``, the mean and scale."""
        r = image.shape[-1]
        z, mu, s = _standardise(image, torch.ones_like(image, dtype=torch.bool))
        pos = vandermonde(grid(r).to(image.dtype), self.config.position).expand(image.shape[0], r, -1)
        t = torch.cat([z, pos], -1)
        return Field(t.to(self.net.queries.dtype), (Rows(r), Token(t.shape[-1]))), mu, s

    def forward(self, image: Tensor) -> Tensor:
        tokens, mu, s = self.tokens(image)
        g = self.net(tokens).tensor.to(image.dtype)  # (B, modes, modes)
        return _unstandardise(g, mu, s)


def _unstandardise(g: Tensor, mu: Tensor, s: Tensor) -> Tensor:
    """``s g + μ`` for series ``g`` ``(B, ...)``: ``μ`` goes to the constant term ``T_0`` (``T_0 T_0`` in 2-D)."""
    shape = (-1,) + (1,) * (g.ndim - 1)
    one = torch.zeros_like(g[0])
    one.view(-1)[0] = 1.0
    return s.reshape(shape) * g + mu.reshape(shape) * one
