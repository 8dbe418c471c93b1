"""How the law checker draws Chebyshev series (:class:`ChebyshevArbitrary`).

Sizes 1..6. Products are truncated to ``n`` terms, so a law that multiplies
``d`` values pointwise is exact only when their product fits: each value is
drawn of degree ``<= (n - 1) // d`` (all ``n`` terms for linear laws,
constants for laws that apply arbitrary nonlinear functions). The
isomorphism for the attention laws is the reflection ``t ↦ -t``, i.e.
``c_k ↦ (-1)^k c_k``: it maps the Chebyshev points to themselves and commutes
with the metric (``W_nm = 0`` for odd ``n + m``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from applicative import Structure
from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

from ._series import leading
from .chebyshev import Chebyshev


def _terms(n: int, degree: int | None) -> int:
    """How many leading coefficients a value may use when ``degree`` of them are multiplied."""
    return 1 if degree is None else (n - 1) // max(degree, 1) + 1


class ChebyshevArbitrary(Arbitrary[Chebyshev]):
    """Draws ``Chebyshev(n)`` (anonymous, or a declared subclass) and values on the exact subspace."""

    kind = Chebyshev

    def __init__(self, cls: type[Chebyshev] = Chebyshev) -> None:
        self.cls = cls

    def structure(self, draw: Draw) -> Chebyshev:
        declared = self.cls._declared
        return self.cls(declared if declared is not None else draw.integers(1, 6))

    def value(
        self, axes: tuple[Structure, ...], draw: Draw, batch: tuple[int, ...], elements: Elements, degree: int | None
    ) -> Tensor:
        return leading(axes, draw, batch, elements, Chebyshev, lambda n: _terms(n, degree))

    def subspace(self, s: Structure, degree: int | None) -> str | None:
        if not isinstance(s, Chebyshev) or _terms(s.size, degree) == s.size:
            return None
        if degree is None:
            return f"{s!r}: constant functions (nonlinear maps of a series are truncated)"
        return f"{s!r}: degree <= {_terms(s.size, degree) - 1}, so products of {degree} values stay in {s.size} terms"

    def isomorphism(self, s: Chebyshev, draw: Draw) -> Isomorphism:
        def reflect(x: Tensor, dim: int) -> Tensor:
            sign = (-1.0) ** torch.arange(s.size, dtype=x.dtype, device=x.device)
            return x * sign.reshape(-1, *([1] * (x.ndim - 1 - dim % x.ndim)))

        return Isomorphism(s, s, reflect, "reflection t ↦ -t (c_k ↦ (-1)^k c_k)")

    def __repr__(self) -> str:
        return f"ChebyshevArbitrary({self.cls.__name__})"
