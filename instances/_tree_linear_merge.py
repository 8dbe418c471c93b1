"""The common refinement on the CPU: a linear two-pointer merge, compiled with numba.

On the CPU a batched ``sort`` of the concatenated breakpoints (the device-
agnostic path in :mod:`instances._tree_partition`) costs ``O(W log W)`` per
tree plus a dozen full passes to deduplicate and compact. Both rows are
already sorted, so the textbook merge does it in one ``O(N_a + N_b)`` walk per
tree: take the smaller head; on a tie take both once. The leaf of ``a``
containing a breakpoint of the union is the last one consumed from ``a``
(likewise for ``b``) -- so each refined leaf's two source indices fall out of
the same walk.

Two walks per tree: the first counts the refined leaves (the padded size is
their maximum), the second writes the two source indices and the leaf mask
into tensors allocated by torch -- so the memory is torch's (and shows up in
its accounting) and nothing is copied back. The refined breakpoints are not
written: each is the larger start of its two source leaves, which
:class:`~instances.Tree` computes only if asked. Results equal the sorting
path's exactly, padding included (indices of each input's last column); the
tests check this on random batches.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch import Tensor

from ._tree_partition import SENTINEL


@njit(cache=True, nogil=True)
def _counts(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> int:  # pragma: no cover - compiled
    """``out[r]`` = number of distinct breakpoints of rows ``a[r]``, ``b[r]``; returns the largest."""
    rows, na = a.shape
    nb = b.shape[1]
    largest = 0
    for r in range(rows):
        i = j = n = 0
        while True:
            x = a[r, i] if i < na else SENTINEL
            y = b[r, j] if j < nb else SENTINEL
            if x == SENTINEL and y == SENTINEL:
                break
            n += 1
            if x <= y:
                i += 1
            if y <= x:
                j += 1
        out[r] = n
        largest = max(largest, n)
    return largest


@njit(cache=True, nogil=True)
def _fill(
    a: np.ndarray, b: np.ndarray, counts: np.ndarray, ia: np.ndarray, ib: np.ndarray, mask: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Write each refined leaf's two source leaves and the leaf mask (``counts[r]`` leaves in row ``r``)."""
    rows, na = a.shape
    nb = b.shape[1]
    width = mask.shape[1]
    for r in range(rows):
        i = j = 0
        c = counts[r]  # bounds every write, whatever the rows hold
        for k in range(c):
            x = a[r, i] if i < na else SENTINEL
            y = b[r, j] if j < nb else SENTINEL
            if x <= y:
                i += 1
            if y <= x:
                j += 1
            ia[r, k] = i - 1
            ib[r, k] = j - 1
            mask[r, k] = True
        for k in range(c, width):  # padding: the sorting path's indices (each input's last column)
            ia[r, k] = na - 1
            ib[r, k] = nb - 1
            mask[r, k] = False


def merge_linear(start_a: Tensor, start_b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`instances._tree_partition.merge` for CPU tensors, by a compiled two-pointer merge.

    ``start_a`` ``(*batch, Na)``, ``start_b`` ``(*batch, Nb)`` sorted ``int64``
    breakpoints (``SENTINEL``-padded). Returns ``(index_a, index_b, mask)``
    ``(*batch, n)`` as :func:`~instances._tree_partition.merge` does, without
    the refined breakpoints themselves: each is the larger of
    ``start_a[index_a]`` and ``start_b[index_b]``, computed when asked for.
    """
    batch = start_a.shape[:-1]
    a = start_a.reshape(-1, start_a.shape[-1]).contiguous()  # (rows, Na)
    b = start_b.reshape(-1, start_b.shape[-1]).contiguous()  # (rows, Nb)
    counts = torch.empty(a.shape[0], dtype=torch.int64)
    n = int(_counts(a.numpy(), b.numpy(), counts.numpy()))
    ia, ib = (torch.empty(a.shape[0], n, dtype=torch.int64) for _ in range(2))
    mask = torch.empty(a.shape[0], n, dtype=torch.bool)
    _fill(a.numpy(), b.numpy(), counts.numpy(), ia.numpy(), ib.numpy(), mask.numpy())
    return ia.reshape(*batch, n), ib.reshape(*batch, n), mask.reshape(*batch, n)
