"""The arbitrary of sized structures stored at their positions with the counting measure (``Vector`` and
its nominal axes, or a user's): sizes 1..4, isomorphisms are permutations of the positions (which
preserve that measure)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .._sized import Sized
from .._structure import Structure
from ._arbitrary import Arbitrary, Draw, Isomorphism


class VectorArbitrary(Arbitrary[Structure]):
    """Vectors of one class (anonymous ``Vector(n)`` or a nominal subclass); fixed size if declared."""

    def __init__(self, cls: type[Structure], size: int | None = None) -> None:
        self.cls = cls
        self.kind = cls
        self.size = size

    @staticmethod
    def of(target: object) -> VectorArbitrary | None:
        """The arbitrary for a sized structure (object, or class with a declared size or none) stored at its
        positions with the counting measure; ``None`` for any other ``target``."""
        if isinstance(target, type) and issubclass(target, Sized):
            declared = target._declared
            probe = target(declared if declared is not None else 1)
            return VectorArbitrary(target, declared) if _counting(probe) else None
        if isinstance(target, Sized) and _counting(target):
            return VectorArbitrary(type(target), target.size)
        return None

    def structure(self, draw: Draw) -> Structure:
        n = self.size if self.size is not None else draw.integers(1, 4)
        factory: Any = self.cls
        return factory(n)  # type: ignore[no-any-return]

    def isomorphism(self, s: Structure, draw: Draw) -> Isomorphism:
        perm = draw.permutation(s.size)

        def apply(x: Tensor, dim: int) -> Tensor:
            return x.index_select(dim, torch.tensor(perm, dtype=torch.long, device=x.device))

        return Isomorphism(s, s, apply, f"permute positions {perm}")

    def __repr__(self) -> str:
        return f"VectorArbitrary({self.cls.__name__}, size={self.size})"


def _counting(s: Structure) -> bool:
    """Stored at its positions, each weighing one: permutations are isomorphisms of it."""
    return s.basis is None and s.log_measure(torch.float64, torch.device("cpu")) is None
