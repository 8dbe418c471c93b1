"""The plumbing of a structure that carries per-example tensors, declared once as dataclass fields.

A structure determined by its size (:class:`~applicative.Vector`) carries no data and none of this. One whose
positions differ per example (padded lengths, probabilities, amplitudes, trees, DAGs) derives from
:class:`DataStructure`, which makes every subclass a dataclass, and declares each per-example tensor as a
field with :func:`per_example` (its event axes and, for a ragged axis, its padding)::

    class Nodes(DataStructure):
        area: Tensor = per_example(event_dims=1)   # (*batch, n)

Every other field (the ``size``, settings such as a node algebra or an operation count) is static: it
identifies the structure besides its tensors and is hashable. From the fields it gets ``data`` /
``with_data`` / ``static`` / ``batch_shape``, equality that never reads the tensors (no host sync),
``.to(device)``, batch indexing, a batch axis inserted for heads, concatenation (``cat``, collate), and its
tensors as the leaves of its pytree node.

**Equality.** Two data structures are equal when they are of one class, agree in their static part
(static fields and tensor shapes) and hold *the same data*: tensors from one construction (or one
:meth:`~DataStructure.with_data`), or derived from them by the same steps -- moved to the same device,
the same examples taken by the same ``int``/``slice``, a batch axis inserted at the same place, the same
batches concatenated. Each structure carries a small token of that history, its
:attr:`~DataStructure.lineage` (no tensors: nothing is kept alive by it); structures holding the very same
tensor objects are equal too. Values are never read: two separate constructions from equal numbers are
*not* equal (:meth:`~DataStructure.equals` compares values, at the cost of a host synchronisation).

Generic code that holds any structure uses the free functions here (:func:`data_of`, :func:`with_data`,
:func:`batch_shape`, :func:`moved`, :func:`indexed`, :func:`unsqueeze_batch`, :func:`concat`,
:func:`same_values`): a structure without data is its own answer (no tensors, batch ``()``, itself).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from types import EllipsisType, NoneType
from typing import Any, ClassVar, Self, TypeVar, cast, dataclass_transform

import torch
import torch.utils._pytree as pytree
from torch import Tensor

from ._errors import StructureError
from ._kernels import batch_shape as batch_shape
from ._structure import PytreeNode, Structure, _Spec

S = TypeVar("S", bound=Structure)

_KEY = "applicative.per_example"


@dataclasses.dataclass(frozen=True)
class PerExample:
    """What a per-example tensor field declares (see :func:`per_example`)."""

    event_dims: int
    pad_axis: int | None
    fill: float


def per_example(*, event_dims: int, pad_axis: int | None = None, fill: float = 0) -> Any:
    """Declare a per-example tensor field of a :class:`DataStructure`: ``name: Tensor = per_example(...)``.

    Args:
        event_dims: trailing axes of the tensor that are not batch axes (lengths ``(*batch,)``: 0;
            probabilities ``(*batch, n)``: 1; edges ``(*batch, E, 2)``: 2).
        pad_axis: for a :class:`~applicative.Ragged` structure, the (negative) axis that differs in size between
            batches, padded to the largest when batches are joined; ``None``: joined as it is.
        fill: the value written into that padding.
    """
    return dataclasses.field(metadata={_KEY: PerExample(event_dims, pad_axis, fill)})


def tensor_fields(cls: type[DataStructure]) -> tuple[tuple[str, PerExample], ...]:
    """The per-example fields of ``cls``, in declaration order (base classes' first): the order of ``data()``."""
    return cls._tensor_fields


def static_fields(cls: type[DataStructure]) -> tuple[str, ...]:
    """The fields of ``cls`` that are not per-example tensors (``size`` first)."""
    return cls._static_fields


def _declare(cls: type[DataStructure]) -> None:
    """Read ``cls``'s fields once, when the class is made (not on every call: traced code reads two attributes)."""
    fields = dataclasses.fields(cls)
    cls._tensor_fields = tuple((f.name, f.metadata[_KEY]) for f in fields if _KEY in f.metadata)
    cls._static_fields = tuple(f.name for f in fields if _KEY not in f.metadata)


class Lineage:
    """A token of one construction of per-example data (compared by identity); derived data extends it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Lineage({id(self):#x})"


def _flatten(s: DataStructure) -> tuple[list[Tensor], _Spec]:
    return list(s.data()), _Spec(type(s), s.static(), s)


def _flatten_with_keys(s: DataStructure) -> tuple[list[tuple[Any, Tensor]], _Spec]:
    return [(pytree.SequenceKey(i), t) for i, t in enumerate(s.data())], _Spec(type(s), s.static(), s)


def _unflatten(leaves: Any, spec: _Spec) -> Structure:
    data = tuple(leaves)
    return spec.template if not data else cast("DataStructure", spec.template).with_data(data)


def _index_key(index: Any) -> Hashable | None:
    """``index`` as a hashable key when it names examples without tensors (ints, slices); else ``None``."""
    if isinstance(index, int | EllipsisType | NoneType):
        return index
    if isinstance(index, slice):
        return ("slice", _index_key(index.start), _index_key(index.stop), _index_key(index.step))
    if isinstance(index, tuple):
        keys = tuple(_index_key(i) for i in index)
        return None if any(k is None and i is not None for k, i in zip(keys, index, strict=True)) else keys
    return None


@dataclass_transform(eq_default=False, field_specifiers=(per_example, dataclasses.field))
@dataclasses.dataclass(eq=False, repr=False, init=False)
class DataStructure(Structure):
    """A :class:`~applicative.Structure` holding per-example tensors, each a field declared with :func:`per_example`.

    Every subclass is a dataclass (without generated equality or ``repr``; with a generated ``__init__``
    only where no class of it writes one). Declare the per-example tensors and any static settings as fields,
    and set them (and ``size``) in ``__init__``, which validates and copies what it is given::

        class Nodes(DataStructure):
            area: Tensor = per_example(event_dims=1)

            def __init__(self, area: Tensor) -> None:
                self.size, self.area = area.shape[-1], area.detach().clone()

    :meth:`with_data` is ``dataclasses.replace`` of the per-example fields without running ``__init__`` again
    (the new tensors are already valid); anything else an instance holds (a cache) is not copied.
    """

    #: length of the tensor axis this structure owns
    size: int
    _pytree: ClassVar[PytreeNode] = (_flatten, _unflatten, _flatten_with_keys)
    _tensor_fields: ClassVar[tuple[tuple[str, PerExample], ...]] = ()
    _static_fields: ClassVar[tuple[str, ...]] = ("size",)

    #: a class of it below :class:`DataStructure` writes ``__init__`` (then none is generated: it would replace it)
    _writes_init: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherited = any(issubclass(b, DataStructure) and b._writes_init for b in cls.__bases__)
        cls._writes_init = "__init__" in vars(cls) or inherited
        dataclasses.dataclass(cls, eq=False, repr=False, init=not cls._writes_init)
        _declare(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        self = super().__new__(cls)
        self._set_lineage(Lineage())
        return self

    # ---- the data and identity ------------------------------------------------------------------------

    def data(self) -> tuple[Tensor, ...]:
        """The per-example tensors, in field order (leading axes: the batch)."""
        return tuple(getattr(self, name) for name, _ in tensor_fields(type(self)))

    def with_data(self, data: tuple[Tensor, ...]) -> Self:
        """The same structure holding other (already valid) per-example tensors, in :meth:`data` order.

        ``dataclasses.replace`` of the per-example fields, without ``__init__``: its data are new (a new
        :attr:`lineage`).
        """
        names = [name for name, _ in tensor_fields(type(self))]
        return self._replaced(Lineage(), **dict(zip(names, data, strict=True)))

    def derived(self, how: Hashable, data: tuple[Tensor, ...]) -> Self:
        """:meth:`with_data` for tensors computed from this structure's own by the step ``how`` (a hashable
        description, a pure function of the data): two structures derived by equal steps from equal
        structures are equal."""
        new = self.with_data(data)
        new._set_lineage((self.lineage, how))
        return new

    @property
    def lineage(self) -> Hashable:
        """A token of where this structure's data came from: its construction, or the steps deriving it from one.

        Equal lineages mean equal data; it holds no tensors.
        """
        lineage: Hashable = vars(self).get("_lineage")
        if lineage is None:  # an instance made without __new__ (unpickled by an old protocol, say)
            lineage = Lineage()
            self._set_lineage(lineage)
        return lineage

    def _set_lineage(self, lineage: Hashable) -> None:
        vars(self)["_lineage"] = lineage

    def _replaced(self, lineage: Hashable, **changes: Any) -> Self:
        """A copy of the fields with ``changes`` (no ``__init__``, no caches), of data from ``lineage``."""
        new = object.__new__(type(self))
        for f in dataclasses.fields(self):
            setattr(new, f.name, changes[f.name] if f.name in changes else getattr(self, f.name))
        new._set_lineage(lineage)
        return new

    def static(self) -> Hashable:
        """What identifies this structure besides its per-example tensors' values (hashable): its static fields
        (the size first) and the tensors' shapes; what its pytree spec compares."""
        fixed = tuple(getattr(self, name) for name in static_fields(type(self)))
        return (*fixed, *(tuple(t.shape) for t in self.data()))

    @property
    def batch_shape(self) -> torch.Size:
        """Leading batch shape of the per-example data: the first tensor's shape less its event axes."""
        name, spec = tensor_fields(type(self))[0]
        first: Tensor = getattr(self, name)
        return first.shape[: first.ndim - spec.event_dims]

    def __eq__(self, other: object) -> bool:
        """Same class, same static part, and the same data: one :attr:`lineage`, or the very same tensors.

        Never reads the tensors' values (no host sync); :meth:`equals` compares values.
        """
        if self is other:
            return True
        if type(other) is not type(self):
            return False
        assert isinstance(other, DataStructure)
        if self.static() != other.static():
            return False
        if self.lineage == other.lineage:
            return True
        return all(a is b for a, b in zip(self.data(), other.data(), strict=True))

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

    # ---- moving, indexing, batching -------------------------------------------------------------------

    def unsqueeze_batch(self, dim: int) -> Self:
        """This structure with a size-1 batch axis inserted into its per-example data."""
        q = len(self.batch_shape)
        pos = dim if dim >= 0 else q + 1 + dim
        if not 0 <= pos <= q:
            raise StructureError(f"{self!r}.unsqueeze_batch: axis {dim} out of range for batch rank {q}")
        if pos == q:  # a trailing batch axis of size 1 is implicit
            return self
        return self.derived(("unsqueeze", pos), tuple(t.unsqueeze(pos) for t in self.data()))

    def to(self, device: torch.device | str) -> Self:
        """This structure with its per-example data on ``device`` (moved twice: equal structures)."""
        device = torch.device(device)
        data = self.data()
        if all(t.device == device for t in data):
            return self
        moved = tuple(t.to(device) for t in data)
        return self.derived(("to", moved[0].device), moved)

    def index_batch(self, index: Any) -> Self:
        """The examples ``index`` of the leading batch axis (an ``int`` drops the axis, as for tensors).

        A broadcast axis of size 1 is kept (or dropped, for an ``int``).
        """
        if not self.batch_shape:
            return self
        if self.batch_shape[0] == 1:
            return self.derived(("index", 0), tuple(t[0] for t in self.data())) if isinstance(index, int) else self
        data = tuple(t[index] for t in self.data())
        key = _index_key(index)
        return self.with_data(data) if key is None else self.derived(("index", key), data)

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
        joined = tuple(torch.cat(ts, 0) for ts in zip(*parts, strict=True))
        return first.derived(("concat", tuple(s.lineage for s in structures[1:])), joined)


# ---- for generic code holding any structure: one without data is its own answer ----------------------


def data_of(s: Structure) -> tuple[Tensor, ...]:
    """``s``'s per-example tensors (:meth:`DataStructure.data`); none for a structure without per-example data."""
    return s.data() if isinstance(s, DataStructure) else ()


def with_data(s: S, data: tuple[Tensor, ...]) -> S:
    """``s`` holding other (already valid) per-example tensors; ``s`` itself when it holds none."""
    return s.with_data(data) if isinstance(s, DataStructure) else s


def derived(s: S, how: Hashable, data: tuple[Tensor, ...]) -> S:
    """``s`` holding tensors computed from its own by the step ``how`` (:meth:`DataStructure.derived`)."""
    return s.derived(how, data) if isinstance(s, DataStructure) else s


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
