"""The common refinement on the CPU: a linear two-pointer merge, compiled with numba.

On the CPU a batched ``sort`` of the concatenated breakpoints (the device-
agnostic path in :mod:`instances._tree_partition`) costs ``O(W log W)`` per
tree plus a dozen full passes to deduplicate and compact. Both rows are
already sorted, so the textbook merge does it in one ``O(N_a + N_b)`` walk per
tree: take the smaller head; on a tie take both once. The leaf of ``a``
containing a breakpoint of the union is the last one consumed from ``a``
(likewise for ``b``) -- so each refined leaf's two source indices fall out of
the same walk.

One walk per tree writes the two source indices and the leaf mask into
tensors allocated by torch -- so the memory is torch's (and shows up in its
accounting) and nothing is copied back. A tree pair has at most ``N_a + N_b``
refined leaves, so the walk writes rows of that width (every step consumes
a breakpoint of ``a`` or ``b``: the bound holds whatever the rows hold) and
the result is the view of the first ``n`` columns, ``n`` the largest refined
leaf count. The refined breakpoints are not written: each is the larger
start of its two source leaves, which :class:`~instances.Tree` computes only
if asked. Results equal the sorting path's exactly, padding included
(indices of each input's last column); the tests check this on random
batches.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from ._tree_partition import SENTINEL


@njit(cache=True, nogil=True)
def _merge(a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray, mask: np.ndarray) -> int:  # pragma: no cover
    """Write each refined leaf's two source leaves and the leaf mask; return the largest refined leaf count.

    ``a`` ``(rows, Na)``, ``b`` ``(rows, Nb)``; ``ia``, ``ib``, ``mask`` ``(rows, Na + Nb)``.
    """
    rows, na = a.shape
    nb = b.shape[1]
    width = mask.shape[1]
    largest = 0
    for r in range(rows):
        i = j = k = 0
        while True:
            x = a[r, i] if i < na else SENTINEL
            y = b[r, j] if j < nb else SENTINEL
            if x == SENTINEL and y == SENTINEL:
                break
            if x <= y:
                i += 1
            if y <= x:
                j += 1
            ia[r, k] = i - 1
            ib[r, k] = j - 1
            mask[r, k] = True
            k += 1
        largest = max(largest, k)
        for m in range(k, width):  # padding: the sorting path's indices (each input's last column)
            ia[r, m] = na - 1
            ib[r, m] = nb - 1
            mask[r, m] = False
    return largest


def merge_linear(start_a: Tensor, start_b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`instances._tree_partition.merge` for CPU tensors, by a compiled two-pointer merge.

    ``start_a`` ``(*batch, Na)``, ``start_b`` ``(*batch, Nb)`` sorted ``int64``
    breakpoints (``SENTINEL``-padded). Returns ``(index_a, index_b, mask)``
    ``(*batch, n)`` as :func:`~instances._tree_partition.merge` does, without
    the refined breakpoints themselves: each is the larger of
    ``start_a[index_a]`` and ``start_b[index_b]``, computed when asked for.
    The three are views of the first ``n`` columns of ``(*batch, Na + Nb)``
    tensors.
    """
    batch = start_a.shape[:-1]
    a = start_a.reshape(-1, start_a.shape[-1]).contiguous()  # (rows, Na)
    b = start_b.reshape(-1, start_b.shape[-1]).contiguous()  # (rows, Nb)
    rows, width = a.shape[0], a.shape[1] + b.shape[1]
    ia, ib = (torch.empty(rows, width, dtype=torch.int64) for _ in range(2))
    mask = torch.empty(rows, width, dtype=torch.bool)
    n = int(_merge(a.numpy(), b.numpy(), ia.numpy(), ib.numpy(), mask.numpy()))
    return ia[:, :n].reshape(*batch, n), ib[:, :n].reshape(*batch, n), mask[:, :n].reshape(*batch, n)
