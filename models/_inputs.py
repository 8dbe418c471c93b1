"""A model's input as the model computes with it: padding cleared, finiteness checked."""

from __future__ import annotations

from typing import TypeVarTuple

import torch

from applicative import Field, clear_padding, require_finite

A = TypeVarTuple("A")


def model_input(where: str, name: str, x: Field[*A], dtype: torch.dtype) -> Field[*A]:
    """``x`` with its padding cleared by selection (:func:`applicative.clear_padding`: whatever it holds, no
    gradient flows through it), then refused unless finite in the model's ``dtype``
    (:func:`applicative.require_finite`).

    Raises:
        StructureError: a NaN or an infinite value at a valid position (or one that overflows ``dtype``).
    """
    x = clear_padding(x)
    require_finite(where, name, x, dtype)
    return x
