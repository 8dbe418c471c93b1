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
from torch import Tensor

from ._errors import StructureError
from ._ring import REAL, Ring
from ._structure import Structure

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
        k = len(self.axes)
        if self.tensor.ndim < k:
            raise StructureError(
                f"Field: {k} axes {self.structures} need a tensor with at least {k} dimensions, "
                f"got shape {tuple(self.tensor.shape)}"
            )
        for i, s in enumerate(self.structures):
            if not isinstance(s, Structure):
                raise StructureError(f"Field: axis {i} is {s!r}, which is not a Structure")
            s.check(self.tensor, i - k, "Field")
        self.ring.check_dtype(self.tensor.dtype)

    @property
    def structures(self) -> tuple[Structure, ...]:
        """The axes as plain structure objects (for run-time use)."""
        return tuple(self.axes)  # type: ignore[arg-type]

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

    def to(self, *args: object, **kwargs: object) -> Field[*Axes]:
        """``tensor.to(...)`` keeping the axes."""
        return self.with_tensor(self.tensor.to(*args, **kwargs))  # type: ignore[call-overload]

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
    label = list(names) if names is not None else [f"argument {i}" for i in range(1, len(fields) + 1)]
    first = fields[0]
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
