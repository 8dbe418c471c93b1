"""How the law checker draws Fourier series (:class:`FourierArbitrary`).

Sizes 1, 3, 5, 7, 9. Products are truncated to ``n`` coefficients, so a law that multiplies ``d`` values
pointwise is exact only when their product fits: each value is drawn of degree ``<= K // d`` (all ``n``
coefficients for linear laws, constants for laws that apply arbitrary nonlinear functions). The isomorphism
for the attention laws is a rotation by one grid step, ``t ↦ t + 2/n``: it maps the ``n`` points to
themselves, keeps the uniform measure, and acts on the coefficients as a rotation of each ``(a_k, b_k)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

from ._series import leading
from .fourier import Fourier


def _terms(n: int, degree: int | None) -> int:
    """How many leading coefficients (``2d + 1`` for degree ``d``) a value may use when ``degree`` are multiplied."""
    k = (n - 1) // 2
    return 1 if degree is None else 2 * (k // max(degree, 1)) + 1


class FourierArbitrary(Arbitrary[Fourier]):
    """Draws ``Fourier(n)`` (anonymous, or a declared subclass) and values on the exact subspace."""

    kind = Fourier

    def __init__(self, cls: type[Fourier] = Fourier) -> None:
        self.cls = cls

    def structure(self, draw: Draw) -> Fourier:
        declared = self.cls._declared
        return self.cls(declared if declared is not None else 2 * draw.integers(0, 4) + 1)

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        return leading(axes, draw, batch, elements, Fourier, lambda n: _terms(n, degree))

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        if not isinstance(s, Fourier) or _terms(s.size, degree) == s.size:
            return None
        if degree is None:
            return f"{s!r}: constant functions (nonlinear maps of a series are truncated)"
        top = (_terms(s.size, degree) - 1) // 2
        return f"{s!r}: degree <= {top}, so products of {degree} values stay in {s.size} coefficients"

    def isomorphism(self, s: Fourier, draw: Draw) -> Isomorphism:
        def rotate(x: Tensor, dim: int) -> Tensor:
            # p(t - 2/n): (a_k, b_k) -> (a_k cos kα - b_k sin kα, a_k sin kα + b_k cos kα) with α = 2π/n
            d = dim % x.ndim
            moved = x.movedim(d, -1)
            k = torch.arange(1, s.degree + 1, dtype=x.dtype, device=x.device)
            c, si = torch.cos(2 * math.pi * k / s.size), torch.sin(2 * math.pi * k / s.size)
            a, b = moved[..., 1::2], moved[..., 2::2]
            ab = torch.stack([a * c - b * si, a * si + b * c], -1).flatten(-2)
            return torch.cat([moved[..., :1], ab], -1).movedim(-1, d)

        return Isomorphism(s, s, rotate, "rotation t ↦ t + 2/n (each (a_k, b_k) turned by 2πk/n)")

    def __repr__(self) -> str:
        return f"FourierArbitrary({self.cls.__name__})"
