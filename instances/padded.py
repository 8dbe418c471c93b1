"""Padded sequences: a batch of variable-length sequences on one axis.

``Padded(n, lengths)`` is the index set ``{0, ..., n-1}`` with, per example, the
measure ``1`` on the first ``lengths[i]`` positions and ``0`` on the rest: the
counting measure of each example's own length. Written as a contract only
(per-example lengths: a :class:`~applicative.Ragged` structure, whose measure and padding are its base's);
everything else is derived, so padding
never contributes to a counit, a softmax or attention: attention over a
padded axis lowers to one fused kernel with the bias ``0`` / ``-inf``, which is
``torch.nn.Transformer``'s ``src_key_padding_mask`` / ``tgt_key_padding_mask`` /
``memory_key_padding_mask``. Positions are ordered, so causal attention works
on it.

Values at padding positions are computed like any others (as in PyTorch) and
are meaningless, but inert: whatever they hold (NaN, infinities), no valid
output reads them and no gradient flows through them -- they are selected out
(``torch.where``) before any arithmetic, never multiplied by a zero weight, and
models select them out of their input (:func:`applicative.clear_padding`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from torch import Tensor

from applicative import Ragged, StructureError


class Padded(Ragged):
    """Sequences of at most ``size`` positions; example ``i`` is valid on its first ``lengths[i]``.

    Args:
        size: the padded length ``n`` (the tensor axis).
        lengths: ``(*batch,)`` integers in ``[1, n]`` (a tensor or a list); copied. They are the ragged
            base's ``count``.

    Raises:
        StructureError: if ``size`` is not a positive int, or a length is not an integer in ``[1, size]``.
    """

    ordered: ClassVar[bool] = True

    def __init__(self, size: int, lengths: Tensor | Sequence[int]) -> None:
        self.size, self.count = size, _checked_lengths(size, lengths)

    @classmethod
    def from_mask(cls, key_padding_mask: Tensor) -> Padded:
        """From PyTorch's ``key_padding_mask`` ``(*batch, n)``: ``True`` at padding, which must be trailing.

        Raises:
            StructureError: if a row has padding before one of its valid positions.
        """
        valid = ~key_padding_mask.bool()
        lengths = valid.sum(-1)
        trailing = torch.arange(valid.shape[-1], device=valid.device) < lengths.unsqueeze(-1)
        if not bool((trailing == valid).all()):
            raise StructureError("Padded.from_mask: padding must come after every valid position of a row")
        return cls(valid.shape[-1], lengths)

    @property
    def lengths(self) -> Tensor:
        """``(*batch,)``: each sequence's length (the ragged base's ``count``)."""
        return self.count


def _checked_lengths(size: int, lengths: Tensor | Sequence[int]) -> Tensor:
    """``lengths`` as a fresh int64 tensor ``(*batch,)``, each in ``[1, size]``, or a named error."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise StructureError(f"Padded: size must be a positive int, got {size!r:.40}")
    n = lengths if isinstance(lengths, Tensor) else torch.tensor(list(lengths))
    if n.dtype.is_floating_point or n.dtype.is_complex or n.dtype == torch.bool:
        raise StructureError(f"Padded: lengths must be integers, got dtype {n.dtype}")
    if n.ndim == 0 or n.numel() == 0:
        raise StructureError(
            f"Padded: lengths needs one entry per example (shape (*batch,)), got shape {tuple(n.shape)}"
        )
    n = n.to(torch.int64).clone()
    bad = (n < 1) | (n > size)
    if bool(bad.any()):
        first = n[bad].reshape(-1)[0].item()
        raise StructureError(
            f"Padded: every length must lie in [1, {size}], got {first}; "
            "an empty sequence has nothing to attend to (drop it from the batch)"
        )
    return n
