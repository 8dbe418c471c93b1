"""The synthetic task: ``y = sin(3x) + s(x) (E - 1)``, ``E ~ Exponential(1)``, ``s(x) = 0.1 + 0.4 x²``.

``x`` is uniform on ``[-1, 1]``. The noise has mean 0 and standard deviation ``s(x)``, which grows
from 0.1 at the centre to 0.5 at the ends (heteroscedastic), and is skewed (a shifted exponential),
so a Gaussian is the wrong shape for it. The true conditional density is
``p(y | x) = exp(-e) / s(x)`` with ``e = (y - sin 3x) / s(x) + 1 >= 0``; its NLL is the floor any model
can reach (:attr:`Split.oracle_nll`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def mean(x: Tensor) -> Tensor:
    """The true conditional mean ``E[y | x] = sin(3x)``."""
    return torch.sin(3 * x)


def scale(x: Tensor) -> Tensor:
    """The true conditional standard deviation ``s(x) = 0.1 + 0.4 x²``."""
    return 0.1 + 0.4 * x**2


@dataclass(frozen=True)
class Split:
    """``n`` examples: queries ``x`` ``(n,)``, targets ``y`` ``(n,)`` and the true NLL of each ``(n,)``."""

    x: Tensor
    y: Tensor
    true_nll: Tensor

    @property
    def oracle_nll(self) -> float:
        """Mean NLL of the true conditional density."""
        return float(self.true_nll.mean())


def split(n: int, generator: torch.Generator) -> Split:
    """Draw ``n`` examples (float32) from ``generator``."""
    x = torch.rand(n, generator=generator) * 2 - 1
    e = -torch.log1p(-torch.rand(n, generator=generator))  # Exponential(1) by inversion
    s = scale(x)
    return Split(x, mean(x) + s * (e - 1), e + torch.log(s))


def task(train: int, test: int, seed: int) -> tuple[Split, Split]:
    """The training and test splits of one seeded task."""
    g = torch.Generator().manual_seed(seed)
    return split(train, g), split(test, g)
