"""Nominal axes: structures determined by their class and one size."""

from __future__ import annotations

import functools
from typing import ClassVar, Self, cast

from ._errors import StructureError
from ._structure import Structure


class Sized(Structure):
    """Abstract base of structures whose only data is a size, declared nominally.

    Declare an axis with a class attribute -- ``class Model(Vector): size = 64``
    -- or make an anonymous one with ``Vector(64)``. Two are equal exactly when
    they have the same class and size, so ``Model(64)`` never pairs with
    ``Hidden(64)`` and mypy tells the classes apart.
    """

    _declared: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        n = cls.__dict__.get("size")
        if n is not None:
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                base = cls.__bases__[0].__name__
                raise StructureError(f"class {cls.__name__}({base}): size must be a positive int, got {n!r}")
            cls._declared = n

    def __init__(self, size: int | None = None) -> None:
        name, declared = type(self).__name__, type(self)._declared
        if size is None and declared is None:
            raise StructureError(f"{name} needs a size: declare `class Axis({name}): size = 16` or call {name}(16)")
        if size is not None and declared is not None and size != declared:
            raise StructureError(f"{name} is declared with size {declared}, got {size}")
        n = size if size is not None else declared
        assert n is not None
        if n < 1:
            raise StructureError(f"{name} size must be positive, got {n}")
        self.size = n

    @classmethod
    def sized(cls, size: int, name: str) -> type[Self]:
        """A nominal subclass ``name`` of this class with ``size`` (cached: same name, same class)."""
        return cast("type[Self]", _sized(cls, size, name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sized) and type(other) is type(self) and other.size == self.size

    def __hash__(self) -> int:
        return hash((type(self), self.size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size})"


@functools.cache
def _sized(base: type[Sized], size: int, name: str) -> type[Sized]:
    return type(name, (base,), {"size": size})
