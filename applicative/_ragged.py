"""Structures whose examples hold different numbers of positions: a count per example, the rest padding.

Padded sequences, batches of DAGs and of graphs share one plan: the axis has ``size`` slots, example ``i`` owns
the first ``count[i]`` of them, and the others are padding -- weight zero under the counting measure of each
example's own positions, so no counit, softmax or attention reads them. :class:`Ragged` writes that once: the
:attr:`~Ragged.mask`, the measure, and the concatenation of batches of different sizes (each per-example tensor
padded along the axis its field declares, with the fill it declares: :func:`~applicative.per_example`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import torch
import torch.nn.functional as nnf
from torch import Tensor

from ._data import DataStructure, per_example, static_fields, tensor_fields
from ._errors import StructureError


class Ragged(DataStructure):
    """A :class:`~applicative.DataStructure` whose example ``i`` owns the first ``count[i]`` of ``size`` positions.

    Declares the per-example ``count`` ``(*batch,)``; a subclass declares its other per-example tensors, each
    with the axis it pads along when batches of different sizes are joined (``per_example(pad_axis=..., fill=...)``).
    The measure is the counting measure on each example's positions (``-inf`` at padding).
    """

    #: ``(*batch,)``: how many positions example ``i`` owns (the first ``count[i]`` of ``size``)
    count: Tensor = per_example(event_dims=0)

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
        fixed = static_fields(cls)[1:]  # the settings besides the size: they must agree to join
        if any(
            type(s) is not type(first) or not s.batch_shape or any(getattr(s, f) != getattr(first, f) for f in fixed)
            for s in structures
        ):
            raise StructureError(
                f"cannot concatenate {[repr(s) for s in structures][:3]}: {type(first).__name__} batches with a batch "
                "axis (and the same other settings) needed"
            )
        joined = {}
        for name, spec in tensor_fields(cls):
            parts = [getattr(s, name) for s in structures]
            if spec.pad_axis is not None:
                axis, n = spec.pad_axis, max(t.shape[spec.pad_axis] for t in parts)
                parts = [nnf.pad(t, [0, 0] * (-axis - 1) + [0, n - t.shape[axis]], value=spec.fill) for t in parts]
            joined[name] = torch.cat(parts, 0)
        lineage = (first.lineage, ("concat", tuple(s.lineage for s in structures[1:])))
        return first._replaced(lineage, size=max(s.size for s in structures), **joined)
