"""``Field[*Axes]``: a tensor whose trailing axes belong to typed structures.

A value of the design source's type ``f (g a)`` is one tensor of shape
``(*batch, |f|, |g|)`` together with the structure objects ``(f, g)``; it is
typed ``Field[F, G]``. Leading batch axes are untyped and broadcast like any
tensor axes. Statically, ``Axes`` is a PEP 646 ``TypeVarTuple`` of structure
classes, so passing a ``Field[Model, Hidden]`` where a ``Field[Hidden, Model]``
is expected is a mypy error; at run time every operation checks the structure
objects too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVarTuple

import torch
import torch.utils._pytree as pytree
from torch import Tensor
from torch.utils.data._utils.collate import default_collate_fn_map

from ._data import concat, data_of, indexed, moved, with_data
from ._errors import StructureError
from ._ring import REAL, Ring
from ._structure import Structure, check_axis

Axes = TypeVarTuple("Axes")


class Field(Generic[*Axes]):
    """A tensor with one structure per trailing axis.

    Args:
        tensor: shape ``(*batch, n_1, ..., n_k)``.
        axes: ``k`` structure objects; ``axes[i]`` owns tensor axis ``i - k``.
        ring: the scalars (default :data:`~applicative.REAL`).

    Raises:
        StructureError: if the tensor's trailing shape does not fit the axes,
            or its dtype does not fit the ring.
    """

    __slots__ = ("axes", "ring", "tensor")

    tensor: Tensor
    axes: tuple[*Axes]
    ring: Ring

    def __init__(self, tensor: Tensor, axes: tuple[*Axes], ring: Ring | None = None) -> None:
        # a plain class rather than a dataclass: torch.compile traces it (and its REAL default) fullgraph
        self.tensor, self.axes = tensor, axes
        self.ring = REAL if ring is None else ring
        if not isinstance(self.tensor, Tensor):
            raise StructureError(f"Field needs a torch.Tensor, got {type(self.tensor).__name__}")
        if not isinstance(self.axes, tuple):
            one = f"({self.axes!r},)" if isinstance(self.axes, Structure) else "(Seq(), Model())"
            raise StructureError(
                f"Field: axes must be a tuple of structures, one per trailing axis, got {type(self.axes).__name__} "
                f"{self.axes!r:.80}; write {one}"
            )
        k = len(self.axes)
        if self.tensor.ndim < k:
            raise StructureError(
                f"Field: {k} axes {self.structures} need a tensor with at least {k} dimensions, "
                f"got shape {tuple(self.tensor.shape)}"
            )
        for i, s in enumerate(self.structures):
            if not isinstance(s, Structure):
                raise StructureError(f"Field: axis {i} is {s!r}, which is not a Structure")
            check_axis(s, self.tensor, i - k, "Field")
        self.ring.check_dtype(self.tensor.dtype)

    @property
    def structures(self) -> tuple[Structure, ...]:
        """The axes as plain structure objects (for run-time use)."""
        return self.axes  # type: ignore[return-value]

    @property
    def batch_shape(self) -> torch.Size:
        """The untyped leading axes."""
        return self.tensor.shape[: self.tensor.ndim - len(self.axes)]

    @property
    def dtype(self) -> torch.dtype:
        return self.tensor.dtype

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def with_tensor(self, tensor: Tensor) -> Field[*Axes]:
        """The same axes and ring holding another tensor."""
        return Field(tensor, self.axes, self.ring)

    @classmethod
    def unchecked(cls, tensor: Tensor, axes: tuple[*Axes], ring: Ring) -> Field[*Axes]:
        """A field from parts already known to fit, without the constructor's checks.

        For kernels that built ``tensor`` from checked fields (and for pytree unflattening and traced
        code, where a check would read values); a field built wrongly this way fails later, not here.
        """
        f = cls.__new__(cls)
        f.tensor, f.axes, f.ring = tensor, axes, ring
        return f

    def to(self, *args: Any, **kwargs: Any) -> Field[*Axes]:
        """``tensor.to(...)``; a change of device moves the structures' per-example data too."""
        t = self.tensor.to(*args, **kwargs)  # torch parses the arguments; the moved tensor says where to
        axes = self.axes if t.device == self.tensor.device else tuple(moved(s, t.device) for s in self.structures)
        return Field(t, axes, self.ring)  # type: ignore[arg-type]

    def __getitem__(self, index: Any) -> Field[*Axes]:
        """The examples ``index`` (an int, slice, index list or tensor) of the leading batch axis."""
        if not self.batch_shape:
            raise StructureError(f"{self!r} has no batch axis to index; index its tensor instead")
        if isinstance(index, tuple):
            raise StructureError(
                f"Field indexing selects examples along the first batch axis only, got the tuple {index!r:.60}"
            )
        axes = tuple(indexed(s, index) for s in self.structures)
        t = self.tensor[index]
        return Field(t, axes, self.ring)  # type: ignore[arg-type]

    def check_finite(self, where: str = "input") -> Field[*Axes]:
        """Return ``self``, or raise :class:`StructureError` if any value is NaN or infinite."""
        bad = ~torch.isfinite(self.tensor)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise StructureError(
                f"{where}: {int(bad.sum())} non-finite value(s) in a field of shape "
                f"{tuple(self.tensor.shape)}; first at index {idx}: {self.tensor[idx].item()}"
            )
        return self

    def __repr__(self) -> str:
        axes = ", ".join(repr(s) for s in self.structures)
        return (
            f"Field[{axes}](batch={tuple(self.batch_shape)}, dtype={self.tensor.dtype}, "
            f"device={self.tensor.device}, ring={self.ring!r})"
        )


def check_compatible(op: str, *fields: Field[*tuple[Any, ...]], names: Sequence[str] | None = None) -> None:
    """Raise :class:`StructureError` unless the fields share dtype, device and ring.

    ``names`` label the fields in the message (default: ``argument 1``, ``argument 2``, ...).
    """
    first = fields[0]
    dtype, device, ring = first.tensor.dtype, first.tensor.device, first.ring
    if all(f.tensor.dtype == dtype and f.tensor.device == device and f.ring == ring for f in fields[1:]):
        return
    label = list(names) if names is not None else [f"argument {i}" for i in range(1, len(fields) + 1)]
    for name, other in zip(label[1:], fields[1:], strict=True):
        for what, mine, theirs, fix in (
            ("dtype", first.tensor.dtype, other.tensor.dtype, "convert one with .to(dtype)"),
            ("device", first.tensor.device, other.tensor.device, "move both to one device with .to(device)"),
            ("ring", first.ring, other.ring, "build both fields over one ring"),
        ):
            if mine != theirs:
                raise StructureError(
                    f"{op}: {what}s differ: {label[0]} has {mine!r}, {name} has {theirs!r}; {fix}\n"
                    f"  {label[0]}: {first!r}\n  {name}: {other!r}"
                )


def expect_field(op: str, x: object, what: str = "input") -> None:
    """Raise :class:`StructureError` unless ``x`` is a :class:`Field` (say, a bare tensor passed to a module)."""
    if isinstance(x, Field):
        return
    got = (
        f"a torch.Tensor of shape {tuple(x.shape)}"
        if isinstance(x, Tensor)
        else f"{'an' if type(x).__name__[:1] in 'aeiouAEIOU' else 'a'} {type(x).__name__}"
    )
    raise StructureError(
        f"{op} {what}: expected a Field (a tensor with its structures), got {got}; "
        "wrap it: Field(tensor, (Seq(), Model())) with one structure per trailing axis"
    )


def cat(fields: Sequence[Field[*Axes]]) -> Field[*Axes]:
    """Join fields along their first batch axis; structures with per-example data are joined too.

    A structure of a different size per field (trees, padded sequences) pads the
    values to the largest size (zeros, at weight-zero positions).
    """
    if not fields:
        raise StructureError("cat: needs at least one field")
    first = fields[0]
    check_compatible("cat", *fields)
    if any(len(f.axes) != len(first.axes) or not f.batch_shape for f in fields):
        raise StructureError(
            f"cat: every field needs the same number of axes and a batch axis, got {[repr(f) for f in fields][:3]}"
        )
    k = len(first.axes)
    axes: list[Structure] = []
    tensors = [f.tensor for f in fields]
    for i in range(k):
        column = [f.structures[i] for f in fields]
        joined = concat(column)
        axes.append(joined)
        dim = i - k
        tensors = [_pad_to(t, dim, joined.size) for t in tensors]
    lead = [t.shape[1 : t.ndim - k] for t in tensors]
    shape = torch.broadcast_shapes(*lead)  # type: ignore[no-untyped-call]
    tensors = [t.expand(t.shape[0], *shape, *t.shape[t.ndim - k :]) for t in tensors]
    return Field(torch.cat(tensors, 0), tuple(axes), first.ring)  # type: ignore[arg-type]


def stack(fields: Sequence[Field[*Axes]]) -> Field[*Axes]:
    """A new leading batch axis over ``fields`` (what ``default_collate`` does with a list of examples)."""
    return cat([_unsqueezed(f) for f in fields])


def _unsqueezed(f: Field[*Axes]) -> Field[*Axes]:
    axes = tuple(with_data(s, tuple(t.unsqueeze(0) for t in d)) if (d := data_of(s)) else s for s in f.structures)
    return Field(f.tensor.unsqueeze(0), axes, f.ring)  # type: ignore[arg-type]


def _pad_to(t: Tensor, dim: int, size: int) -> Tensor:
    n = t.shape[dim]
    if n == size:
        return t
    pad = t.new_zeros((*t.shape[: t.ndim + dim], size - n, *t.shape[t.ndim + dim + 1 :]))
    return torch.cat([t, pad], dim)


def _flatten(f: Field[*tuple[Any, ...]]) -> tuple[list[Any], Ring]:
    return [f.tensor, *f.structures], f.ring


def _flatten_with_keys(f: Field[*tuple[Any, ...]]) -> tuple[list[tuple[Any, Any]], Ring]:
    keys = [pytree.GetAttrKey("tensor"), *(pytree.SequenceKey(i) for i in range(len(f.axes)))]
    return list(zip(keys, [f.tensor, *f.structures], strict=True)), f.ring


def _unflatten(children: Any, ring: Ring) -> Field[*tuple[Any, ...]]:
    tensor, *axes = list(children)
    return Field.unchecked(tensor, tuple(axes), ring)


def _collate(batch: Sequence[Field[*tuple[Any, ...]]], *, collate_fn_map: Any = None) -> Field[*tuple[Any, ...]]:
    return stack(batch)


pytree.register_pytree_node(Field, _flatten, _unflatten, flatten_with_keys_fn=_flatten_with_keys)
default_collate_fn_map[Field] = _collate
