"""Tensor helpers for structure authors: the shape arithmetic the core's kernels use, typed.

Public home of what ``instances`` and user structures need beside the :class:`~applicative.Structure`
contract (broadcasting per-example batches, aligning a measure with an axis, caching a constant tensor such as a
transform's matrix).
"""

from ._constants import constant as constant
from ._errors import summary as summary
from ._tensor import aligned as aligned
from ._tensor import broadcast_batch as broadcast_batch
from ._tensor import broadcast_pair as broadcast_pair
from ._tensor import broadcast_shape as broadcast_shape
from ._tensor import pad_before as pad_before
from ._tensor import unflatten as unflatten

__all__ = [
    "aligned",
    "broadcast_batch",
    "broadcast_pair",
    "broadcast_shape",
    "constant",
    "pad_before",
    "summary",
    "unflatten",
]
