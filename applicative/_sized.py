"""Nominal axes: structures determined by their class and one size."""

from __future__ import annotations

import functools
import operator
from typing import ClassVar, Self, cast

from ._errors import StructureError, summary
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
                raise StructureError(f"class {cls.__name__}({base}): size must be a positive int, got {summary(n)}")
            cls._declared = n

    def __init__(self, size: int | None = None) -> None:
        name, declared = type(self).__name__, type(self)._declared
        if size is not None:
            size = _as_size(size, name)
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
        return cast("type[Self]", _sized(cls, size, name))  # type: ignore[arg-type]  # classes hash

    def __eq__(self, other: object) -> bool:  # no data: the class and the size (the base's rule, faster)
        return self is other or (type(other) is type(self) and isinstance(other, Sized) and other.size == self.size)

    def __hash__(self) -> int:
        return hash((type(self), self.size))

    def split(self, heads: int) -> Structure:
        """Heads of an anonymous structure of the same kind and ``size // heads`` (``Model(64)`` -> ``Vector(16)``)."""
        if heads == 1:
            return self
        if self.size % heads:
            raise StructureError(
                f"{self!r} cannot be split into {heads} heads: {self.size} is not a multiple of {heads}; "
                "choose heads dividing the size, or pass key= and value= structures for each head"
            )
        kind = next(c for c in type(self).__mro__ if issubclass(c, Sized) and c._declared is None)
        return kind(self.size // heads)


def _as_size(size: object, name: str) -> int:
    """``size`` as a plain ``int`` (an ``int``, or an integer such as ``numpy.int64``; never a ``bool``)."""
    if not isinstance(size, bool):
        try:
            return operator.index(size)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise StructureError(
        f"{name}(size): size must be a positive int, got {summary(size)} of type {type(size).__name__}; "
        f"pass an int such as {name}(16)"
    )


@functools.cache
def _sized(base: type[Sized], size: int, name: str) -> type[Sized]:
    return type(name, (base,), {"size": size})
