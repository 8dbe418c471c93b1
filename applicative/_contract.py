"""What the derived kernels see of a structure, as a protocol: the signatures only.

The contract is described once, by :class:`~applicative.Structure` (``help(Structure)``). :class:`Contract`
names the part of it the kernels call, so that :mod:`applicative._kernels` does not import
:mod:`applicative._structure` (which calls the kernels); every ``Structure`` satisfies it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor

from ._ring import Ring

Pointwise = Callable[[Tensor], Tensor]
Pointwise2 = Callable[[Tensor, Tensor], Tensor]


class Basis(abc.ABC):
    """A stored basis other than the positions: the linear maps between stored values and positions.

    ``positions(x, dim, points)`` gives the values at ``points`` positions (the
    structure's own ``size``, or more: an oversampled grid); ``stored(v, dim)``
    maps values at any number ``>= size`` of positions back, truncating.
    Products of two stored values are exact on :attr:`grid` positions.
    """

    @property
    @abc.abstractmethod
    def grid(self) -> int:
        """Positions on which the product of two stored values is exact."""

    @abc.abstractmethod
    def positions(self, x: Tensor, dim: int, points: int) -> Tensor:
        """Stored values along ``dim`` -> values at ``points`` positions."""

    @abc.abstractmethod
    def stored(self, v: Tensor, dim: int) -> Tensor:
        """Values at positions along ``dim`` -> the stored values (truncated to the structure's size)."""


class Contract(Protocol):
    """A :class:`~applicative.Structure` as the kernels call it (see its docstring for what each member means).

    Per-example data is no part of it: the kernels read a :class:`~applicative.DataStructure`'s ``batch_shape``
    through :func:`applicative._kernels.batch_shape` (``()`` for any other structure).
    """

    def __hash__(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def basis(self) -> Basis | None: ...

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor | None: ...

    def metric(self, dtype: torch.dtype, device: torch.device) -> Tensor: ...

    def pure(self, x: Tensor, dim: int) -> Tensor: ...

    def fmap(self, f: Pointwise, x: Tensor, dim: int) -> Tensor: ...

    def zip_with(self, f: Pointwise2, a: Tensor, b: Tensor, dim: int) -> Tensor: ...

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor: ...

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor: ...
