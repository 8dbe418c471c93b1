"""Structures whose examples hold different numbers of positions: a count per example, the rest padding.

Padded sequences, batches of DAGs and of graphs share one plan: the axis has ``size`` slots, example ``i`` owns
the first ``count[i]`` of them, and the others are padding -- weight zero under the counting measure of each
example's own positions, so no counit, softmax or attention reads them. :class:`Ragged` writes that once: the
:attr:`~Ragged.mask`, the measure, and the concatenation of batches of different sizes (each per-example tensor
padded along its ragged axis to the largest, with the fill its class declares).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import torch
import torch.nn.functional as nnf
from torch import Tensor

from ._data import DataStructure
from ._errors import StructureError


class Ragged(DataStructure):
    """A :class:`~applicative.DataStructure` whose example ``i`` owns the first ``count[i]`` of ``size`` positions.

    Declare, beside :attr:`~applicative.DataStructure.tensors`, the per-example ``count`` ``(*batch,)`` (an attribute
    or a property) and, per tensor in ``tensors`` order, how it pads when batches of different sizes are joined
    (:attr:`padding`). The measure is the counting measure on each example's positions (``-inf`` at padding).
    """

    count: Tensor
    #: per tensor (``tensors`` order): ``(axis, fill)`` -- the axis padded to the largest batch's, and the value
    #: written there -- or ``None`` for a tensor joined as it is (the counts, say)
    padding: ClassVar[tuple[tuple[int, int] | None, ...]] = ()

    @property
    def batch_shape(self) -> torch.Size:
        return self.count.shape

    @property
    def mask(self) -> Tensor:
        """``(*batch, size)``: ``True`` at each example's own positions, ``False`` at padding."""
        return torch.arange(self.size, device=self.count.device) < self.count.unsqueeze(-1)

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``0`` at each example's positions, ``-inf`` at padding: ``(*batch, size)``."""
        valid = self.mask.to(device)
        return torch.zeros(valid.shape, dtype=dtype, device=device).masked_fill(~valid, float("-inf"))

    @classmethod
    def concat(cls, structures: Sequence[Self]) -> Self:
        """Batches joined along their first batch axis, each tensor padded along its ragged axis to the largest."""
        first = structures[0]
        if any(type(s) is not type(first) or not s.batch_shape or _fixed(s) != _fixed(first) for s in structures):
            raise StructureError(
                f"cannot concatenate {[repr(s) for s in structures][:3]}: {type(first).__name__} batches with a batch "
                "axis (and the same other settings) needed"
            )
        data = []
        for i, pad in enumerate(cls.padding or (None,) * len(cls.tensors)):
            parts = [s.data()[i] for s in structures]
            if pad is not None:
                axis, fill = pad
                n = max(t.shape[axis] for t in parts)
                parts = [nnf.pad(t, [0, 0] * (-axis - 1) + [0, n - t.shape[axis]], value=fill) for t in parts]
            data.append(torch.cat(parts, 0))
        out = first.with_data(tuple(data))
        out.size = max(s.size for s in structures)
        return out


def _fixed(s: Ragged) -> dict[str, Any]:
    """What a structure holds besides its size and tensors (copied unchanged by ``with_data``): must agree to join."""
    return {k: v for k, v in vars(s).items() if k != "size" and k not in s.tensors and not k.startswith("_")}
