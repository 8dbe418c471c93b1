"""The arbitrary of :class:`~instances.Vector`: sizes 1..4, isomorphisms are permutations."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .._structure import Structure
from .._vector import Vector
from ._arbitrary import Arbitrary, Draw, Isomorphism


class VectorArbitrary(Arbitrary[Structure]):
    """Vectors of one class (anonymous ``Vector(n)`` or a nominal subclass); fixed size if declared."""

    def __init__(self, cls: type[Structure], size: int | None = None) -> None:
        self.cls = cls
        self.kind = cls
        self.size = size

    @staticmethod
    def of(target: object) -> VectorArbitrary | None:
        """The arbitrary for a ``Vector`` object or subclass, or ``None`` if ``target`` is not one."""
        if isinstance(target, Vector):
            return VectorArbitrary(type(target), target.size)
        if isinstance(target, type) and issubclass(target, Vector):
            return VectorArbitrary(target, target._declared)
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
