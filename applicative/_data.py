"""The plumbing of a structure that carries per-example tensors, declared once.

A structure determined by its size (:class:`~applicative.Vector`) carries no
data. One whose positions differ per example (padded lengths, probabilities,
amplitudes) names its tensor attributes in :attr:`DataStructure.tensors`; from
that it gets ``data`` / ``with_data`` / ``static`` / ``batch_shape``, and through
them (from :class:`~applicative.Structure`) equality, hashing, ``.to(device)``,
batch indexing, concatenation and pytree flattening.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar, Self

import torch
from torch import Tensor

from ._structure import Structure


class DataStructure(Structure):
    """A :class:`~applicative.Structure` holding per-example tensors named in :attr:`tensors`.

    Declare, in the subclass::

        tensors = ("probs",)   # attributes holding per-example tensors, (*batch, *event)
        event_dims = 1         # trailing axes of the first that are not batch axes

    and set those attributes (and ``size``) in ``__init__``. Every other attribute not starting
    with ``_`` is copied unchanged by :meth:`with_data`; attributes starting with ``_`` are caches
    of the old tensors and are dropped.
    """

    #: the names of the per-example tensor attributes, in :meth:`data` order
    tensors: ClassVar[tuple[str, ...]] = ()
    #: trailing axes of the first tensor that are not batch axes (probabilities ``(*batch, n)``: 1)
    event_dims: ClassVar[int] = 1

    def data(self) -> tuple[Tensor, ...]:
        return tuple(getattr(self, name) for name in self.tensors)

    def with_data(self, data: tuple[Tensor, ...]) -> Self:
        new = object.__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_")})
        for name, t in zip(self.tensors, data, strict=True):
            setattr(new, name, t)
        return new

    def static(self) -> Hashable:
        return (self.size, *(tuple(t.shape) for t in self.data()))

    @property
    def batch_shape(self) -> torch.Size:
        first: Tensor = getattr(self, self.tensors[0])
        return first.shape[: first.ndim - self.event_dims]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, batch={tuple(self.batch_shape)})"
