"""What a model does first with its input: padding cleared by selection, and finiteness checked.

A value at a position of weight zero (padding, an outcome of probability zero) is never read by a derived
kernel, but a model computes with it like any other (an embedding, a layer norm, the queries of attention):
a NaN or an infinity held there reaches no valid output, yet its gradient does -- ``0 · NaN`` is NaN --
and one training step then writes NaN weights. :func:`clear_padding` selects those values out
(``torch.where``, before any arithmetic), so the padding's gradients are exactly zero whatever it held;
models call it on their input. :func:`require_finite` then refuses what is left non-finite, in the model's
own dtype (``1e39`` is finite in float64 and infinite in float32).
"""

from __future__ import annotations

from cmath import isfinite
from typing import Any, TypeVarTuple

import torch
from torch import Tensor

from . import _kernels as k
from ._errors import StructureError
from ._field import Field

A = TypeVarTuple("A")


def clear_padding(x: Field[*A]) -> Field[*A]:
    """``x`` with the values at every position of weight zero, along every axis, set to zero by selection.

    Axes whose structure has no zero weights (a ``Vector``, a series stored in a basis) are left alone; the
    others (``Padded``, trees, graphs, DAGs, distributions with impossible outcomes) are cleared with one
    ``torch.where`` each (:func:`applicative._kernels.cleared`). A tensor with fewer batch axes than a structure's
    per-example data is broadcast to that batch.
    """
    t, n = x.tensor, len(x.axes)
    for i, s in enumerate(x.structures):
        t = k.cleared(s, t, i - n)
    return x if t is x.tensor else Field.unchecked(t, x.axes, x.ring)


def require_finite(
    where: str, name: str, x: Tensor | Field[*tuple[Any, ...]], dtype: torch.dtype | None = None
) -> None:
    """Raise :class:`StructureError` (one line) unless every value of ``x`` is finite in ``dtype`` (default: its own).

    A model checks its input in its own dtype: a float64 input of ``1e39`` becomes ``inf`` in a float32 model.
    Integer and boolean inputs are finite unless ``dtype`` is a float they overflow. Skipped while compiling
    (reading the answer is a host synchronisation) and on the ``meta`` device (no values).

    Args:
        where: the model or method, for the message (``"Transformer"``).
        name: the argument (``"x"``).
        x: a tensor or a field (its tensor is checked).
        dtype: the dtype the values are used in.
    """
    t = x.tensor if isinstance(x, Field) else x
    if torch.compiler.is_compiling() or t.is_meta or t.dtype == torch.bool:
        return
    cast = dtype is not None and dtype != t.dtype and (dtype.is_floating_point or dtype.is_complex)
    if not cast and not (t.dtype.is_floating_point or t.dtype.is_complex):
        return
    used = t.to(dtype) if cast else t
    bad = ~torch.isfinite(used)
    if not bool(bad.any()):
        return
    first = tuple(int(i) for i in bad.nonzero()[0])
    shown = t[first].item()
    overflow = f" (finite in {t.dtype}, infinite in the model's {dtype}: scale it)" if cast and isfinite(shown) else ""
    raise StructureError(
        f"{where}: {name} holds {int(bad.sum())} NaN or infinite value(s) of {t.numel()}, the first {shown!r} at "
        f"index {first}{overflow}; pass finite values"
    )
