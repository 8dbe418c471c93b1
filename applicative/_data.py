"""The plumbing of a structure that carries per-example tensors, declared once.

A structure determined by its size (:class:`~applicative.Vector`) carries no data and none of this. One whose
positions differ per example (padded lengths, probabilities, amplitudes, trees, DAGs) derives from
:class:`DataStructure` and names its tensor attributes in :attr:`DataStructure.tensors`; from that it gets
``data`` / ``with_data`` / ``static`` / ``batch_shape``, equality of the *same* tensors (no host sync),
``.to(device)``, batch indexing, a batch axis inserted for heads, concatenation (``cat``, collate), and
its tensors as the leaves of its pytree node.

Generic code that holds any structure uses the free functions here (:func:`data_of`, :func:`with_data`,
:func:`batch_shape`, :func:`moved`, :func:`indexed`, :func:`unsqueeze_batch`, :func:`concat`,
:func:`same_values`): a structure without data is its own answer (no tensors, batch ``()``, itself).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

import torch
import torch.utils._pytree as pytree
from torch import Tensor

from ._errors import StructureError
from ._kernels import batch_shape as batch_shape
from ._structure import PytreeNode, Structure, _Spec

S = TypeVar("S", bound=Structure)


def _flatten(s: DataStructure) -> tuple[list[Tensor], _Spec]:
    return list(s.data()), _Spec(type(s), s.static(), s)


def _flatten_with_keys(s: DataStructure) -> tuple[list[tuple[Any, Tensor]], _Spec]:
    return [(pytree.SequenceKey(i), t) for i, t in enumerate(s.data())], _Spec(type(s), s.static(), s)


def _unflatten(leaves: Any, spec: _Spec) -> Structure:
    data = tuple(leaves)
    return spec.template if not data else cast("DataStructure", spec.template).with_data(data)


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
    _pytree: ClassVar[PytreeNode] = (_flatten, _unflatten, _flatten_with_keys)

    def data(self) -> tuple[Tensor, ...]:
        """The per-example tensors, in :attr:`tensors` order (leading axes: the batch)."""
        return tuple(getattr(self, name) for name in self.tensors)

    def with_data(self, data: tuple[Tensor, ...]) -> Self:
        """The same structure holding other (already valid) per-example tensors, in :meth:`data` order."""
        new = object.__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_")})
        for name, t in zip(self.tensors, data, strict=True):
            setattr(new, name, t)
        return new

    def static(self) -> Hashable:
        """What identifies this structure besides its per-example tensors' values (hashable): the size and the
        tensors' shapes; what its pytree spec compares."""
        return (self.size, *(tuple(t.shape) for t in self.data()))

    @property
    def batch_shape(self) -> torch.Size:
        """Leading batch shape of the per-example data: the first tensor's shape less its :attr:`event_dims`."""
        first: Tensor = getattr(self, self.tensors[0])
        return first.shape[: first.ndim - self.event_dims]

    def __eq__(self, other: object) -> bool:
        """Same class, same static part, and the *same* per-example tensors (never reads values: no host sync).

        :meth:`equals` compares the data's values.
        """
        if self is other:
            return True
        if type(other) is not type(self):
            return False
        assert isinstance(other, DataStructure)
        mine, theirs = self.data(), other.data()
        return self.static() == other.static() and all(a is b for a, b in zip(mine, theirs, strict=True))

    def __hash__(self) -> int:
        return hash((type(self), self.static()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, batch={tuple(self.batch_shape)})"

    def equals(self, other: Structure) -> bool:
        """Equality of the per-example data's *values* (reads them: a host synchronisation on CUDA)."""
        if type(other) is not type(self) or self.static() != other.static():
            return False
        return all(
            a.shape == b.shape and bool(torch.equal(a, b.to(a.device)))
            for a, b in zip(self.data(), other.data(), strict=True)
        )

    def unsqueeze_batch(self, dim: int) -> Self:
        """This structure with a size-1 batch axis inserted into its per-example data."""
        q = len(self.batch_shape)
        pos = dim if dim >= 0 else q + 1 + dim
        if not 0 <= pos <= q:
            raise StructureError(f"{self!r}.unsqueeze_batch: axis {dim} out of range for batch rank {q}")
        if pos == q:  # a trailing batch axis of size 1 is implicit
            return self
        return self._memo(("unsqueeze", pos), lambda: self.with_data(tuple(t.unsqueeze(pos) for t in self.data())))

    def to(self, device: torch.device | str) -> Self:
        """This structure with its per-example data on ``device`` (memoised: moving twice gives one object)."""
        device = torch.device(device)
        data = self.data()
        if all(t.device == device for t in data):
            return self
        return self._memo(("to", device), lambda: self.with_data(tuple(t.to(device) for t in data)))

    def index_batch(self, index: Any) -> Self:
        """The examples ``index`` of the leading batch axis (an ``int`` drops the axis, as for tensors).

        A broadcast axis of size 1 is kept (or dropped, for an ``int``).
        """
        if not self.batch_shape:
            return self
        if self.batch_shape[0] == 1:
            return self.with_data(tuple(t[0] for t in self.data())) if isinstance(index, int) else self
        return self.with_data(tuple(t[index] for t in self.data()))

    @classmethod
    def concat(cls, structures: Sequence[Self]) -> Self:
        """Join batches along their leading batch axis (for ``cat``/collate); override to pad to a common size.

        One structure shared by every example (no batch axis) joins with itself.
        """
        first = structures[0]
        if all(s == first for s in structures) and not first.batch_shape:  # shared by every example
            return first
        if any(type(s) is not cls or s.size != first.size for s in structures):
            raise StructureError(
                f"cannot concatenate fields on different structures {[repr(s) for s in structures][:4]}; "
                "build the batch on one structure"
            )
        if any(not s.batch_shape for s in structures):
            raise StructureError(
                f"cannot concatenate {first!r} and others without a batch axis; give each a batch of its own"
            )
        parts = [s.data() for s in structures]
        return first.with_data(tuple(torch.cat(ts, 0) for ts in zip(*parts, strict=True)))

    def _memo(self, key: Hashable, build: Callable[[], Self]) -> Self:
        # Why a cache in a value: equality compares the per-example tensors by identity (no host sync), so
        # a derived structure (unsqueezed, moved) must be the *same* object each time it is derived, or two
        # derivations of one structure would not join. The cached value is a pure function of ``key`` and
        # this structure's immutable fields, and the cache is no part of ``static``/``data``: it cannot
        # change what equality or a result says.
        memo: dict[Hashable, Any] = self.__dict__.setdefault("_memo_cache", {})
        if key not in memo:
            memo[key] = build()
        return memo[key]  # type: ignore[no-any-return]


# ---- for generic code holding any structure: one without data is its own answer ----------------------


def data_of(s: Structure) -> tuple[Tensor, ...]:
    """``s``'s per-example tensors (:meth:`DataStructure.data`); none for a structure without per-example data."""
    return s.data() if isinstance(s, DataStructure) else ()


def with_data(s: S, data: tuple[Tensor, ...]) -> S:
    """``s`` holding other (already valid) per-example tensors; ``s`` itself when it holds none."""
    return s.with_data(data) if isinstance(s, DataStructure) else s


def static_of(s: Structure) -> Hashable:
    """What identifies ``s`` besides its per-example tensors (:meth:`DataStructure.static`); ``s`` itself for a
    structure without per-example data (identified by its equality)."""
    return s.static() if isinstance(s, DataStructure) else s


def moved(s: S, device: torch.device | str) -> S:
    """``s`` with its per-example data on ``device``."""
    return s.to(device) if isinstance(s, DataStructure) else s


def indexed(s: S, index: Any) -> S:
    """The examples ``index`` of ``s``'s leading batch axis."""
    return s.index_batch(index) if isinstance(s, DataStructure) else s


def unsqueeze_batch(s: S, dim: int) -> S:
    """``s`` with a size-1 batch axis inserted at ``dim`` into its per-example data (heads as a batch axis)."""
    return s.unsqueeze_batch(dim) if isinstance(s, DataStructure) else s


def concat(structures: Sequence[S]) -> S:
    """Batches of one kind of structure joined along their leading batch axis (for ``cat`` and collate)."""
    first = structures[0]
    if isinstance(first, DataStructure):
        return type(first).concat(structures)  # type: ignore[arg-type]
    if any(s != first for s in structures):
        raise StructureError(
            f"cannot concatenate fields on different structures {[repr(s) for s in structures][:4]}; "
            "build the batch on one structure"
        )
    return first


def same_values(a: Structure, b: Structure) -> bool:
    """``a.equals(b)`` for structures with per-example data (compares values), ``a == b`` for others."""
    return a.equals(b) if isinstance(a, DataStructure) else a == b
