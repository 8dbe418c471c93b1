"""The two models: a mixture Transformer and a Gaussian MLP, each mapping queries ``x`` ``(B,)`` to a distribution.

Both return a batched ``torch.distributions`` object with batch ``(B,)`` (``log_prob`` for the NLL,
``cdf`` for calibration); :func:`instances.quadrature` turns either into weighted points.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch import distributions as td

from applicative import Field, Linear, pointwise
from instances import Vector
from models import EncoderLayer, EncoderStack

#: the smallest predicted scale (keeps the likelihood bounded)
MIN_SCALE = 1e-3


def _scale(raw: Tensor) -> Tensor:
    return nn.functional.softplus(raw) + MIN_SCALE


class MixtureTransformer(nn.Module):
    """``K`` tokens per query -- ``[x, onehot(k)]`` -- through an encoder, read out as a ``K``-Gaussian mixture.

    Token axis ``Vector(K)`` (the components), features ``Vector(K + 1)``, model ``Vector(width)``;
    the head ``Linear(width -> 3)`` gives each component's logit, location and raw scale.
    """

    def __init__(self, components: int, width: int, hidden: int, heads: int, depth: int) -> None:
        super().__init__()
        self.atoms, self.features, self.model = Vector(components), Vector(components + 1), Vector(width)
        layers = [EncoderLayer(self.model, Vector(hidden), heads, norm_first=True) for _ in range(depth)]
        self.body: EncoderStack[Vector, Vector] = EncoderStack(self.features, self.model, layers)
        self.head: Linear[Vector, Vector] = Linear(self.model, Vector(3))

    def forward(self, x: Tensor) -> td.MixtureSameFamily:
        k = self.atoms.size
        onehot = torch.eye(k, dtype=x.dtype, device=x.device).expand(*x.shape, k, k)
        tokens = torch.cat([x[..., None, None].expand(*x.shape, k, 1), onehot], -1)  # (B, K, K + 1)
        out = self.head(self.body(Field(tokens, (self.atoms, self.features)))).tensor  # (B, K, 3)
        logits, loc, raw = out.unbind(-1)
        # no argument validation: a diverged run's NaN parameters reach the loss, which the loop reports in one
        # line (validation would raise from deep inside the step instead)
        mixing = td.Categorical(logits=logits, validate_args=False)
        return td.MixtureSameFamily(mixing, td.Normal(loc, _scale(raw), validate_args=False), validate_args=False)

    def __call__(self, x: Tensor) -> td.MixtureSameFamily:
        out: td.MixtureSameFamily = super().__call__(x)
        return out


class GaussianMLP(nn.Module):
    """``x -> relu(W1 x) -> relu(W2 .) -> (mean, raw scale)``: two hidden layers of ``width``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp, self.hid = Vector(1), Vector(width)
        self.layer1: Linear[Vector, Vector] = Linear(self.inp, self.hid)
        self.layer2: Linear[Vector, Vector] = Linear(self.hid, self.hid)
        self.out: Linear[Vector, Vector] = Linear(self.hid, Vector(2))

    def forward(self, x: Tensor) -> td.Normal:
        h = pointwise(torch.relu, self.layer1(Field(x[..., None], (self.inp,))))
        o = self.out(pointwise(torch.relu, self.layer2(h))).tensor  # (B, 2)
        return td.Normal(o[..., 0], _scale(o[..., 1]), validate_args=False)  # NaN reaches the loss (see above)

    def __call__(self, x: Tensor) -> td.Normal:
        out: td.Normal = super().__call__(x)
        return out

    @staticmethod
    def parameters_for(width: int) -> int:
        """``(1 + 1) w + (w + 1) w + (w + 1) 2 = w² + 5w + 2``."""
        return width * width + 5 * width + 2

    @classmethod
    def matching(cls, parameters: int) -> GaussianMLP:
        """The width whose parameter count is closest to ``parameters``."""
        w = max(1, round((-5 + math.sqrt(25 - 4 * (2 - parameters))) / 2))
        best = min((w - 1, w, w + 1), key=lambda v: (v < 1, abs(cls.parameters_for(v) - parameters)))
        return cls(best)


def count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
