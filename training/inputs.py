"""What a trained model's public methods check of their arguments before any computation.

Each check raises :class:`~training.errors.InputError` (a :class:`~training.UserError` and a ``ValueError``) in
one line naming the method, the argument, what was expected and what came -- never a raw error from inside
torch. Shapes and dtypes are checked without reading values (nothing that would stop ``torch.compile``); a
range check (:func:`ids`) reads two numbers and a finiteness check (:func:`finite`) one, both skipped while
compiling.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from applicative import StructureError, require_finite

from .errors import InputError


def _found(value: object) -> str:
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"{value!r:.40} ({type(value).__name__})"


def tensor(
    where: str, name: str, value: object, shape: str, ndim: int | tuple[int, ...], *, least: tuple[int, ...] = ()
) -> Tensor:
    """``value`` if it is a real (floating or integer, not bool) tensor of ``ndim`` dimensions (one of them) whose sizes
    are at least ``least`` (default: 1 each, so no batch is empty); ``shape`` names the axes (``"(batch, m, m')"``)."""
    if not isinstance(value, Tensor) or value.dtype == torch.bool or value.is_complex():
        raise InputError(f"{where}: {name} must be a real tensor {shape}, got {_found(value)}")
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in allowed:
        dims = " or ".join(map(str, allowed))
        raise InputError(f"{where}: {name} must have shape {shape} ({dims} dimensions), got {_found(value)}")
    for axis, (size, least_size) in enumerate(zip(value.shape, least or (1,) * value.ndim, strict=True)):
        if size < least_size:
            batch = axis == 0 and least_size == 1 and shape.startswith("(batch")
            what = "an empty batch" if batch else f"size {size} on axis {axis}"
            raise InputError(
                f"{where}: {name} has shape {tuple(value.shape)}: {what}; {shape} needs at least {least_size} there"
            )
    return value


def ids(where: str, name: str, value: object, shape: str, ndim: int | tuple[int, ...], vocab: int) -> Tensor:
    """``value`` if it is an integer tensor of ``ndim`` non-empty dimensions whose entries lie in ``0..vocab-1``."""
    if (
        not isinstance(value, Tensor)
        or value.dtype.is_floating_point
        or value.is_complex()
        or value.dtype == torch.bool
    ):
        raise InputError(f"{where}: {name} must be an integer tensor of token ids {shape}, got {_found(value)}")
    tensor(where, name, value, shape, ndim)
    if not torch.compiler.is_compiling():
        lo, hi = torch.stack([value.min(), value.max()]).tolist()
        if lo < 0 or hi >= vocab:
            bad = lo if lo < 0 else hi
            raise InputError(
                f"{where}: {name} holds the id {bad}, outside the vocabulary's 0..{vocab - 1}; encode text with the "
                "model's own vocabulary"
            )
    return value


def finite(where: str, name: str, value: Tensor, dtype: torch.dtype) -> Tensor:
    """``value`` if every entry is finite in the model's ``dtype`` (:func:`applicative.require_finite`)."""
    try:
        require_finite(where, name, value, dtype)
    except StructureError as e:
        raise InputError(str(e)) from None
    return value


def within(where: str, name: str, value: object, least: float, most: float, why: str = "") -> float:
    """``value`` if it is a number in ``least..most`` (``why``: what lies outside means)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not least <= value <= most:
        raise InputError(f"{where}: {name} must be a number in {least:g}..{most:g}{why}, got {_found(value)}")
    return float(value)


def count(where: str, name: str, value: object, least: int = 1) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(f"{where}: {name} must be an integer >= {least}, got {_found(value)}")
    return value


def positive(where: str, name: str, value: object, why: str = "") -> float:
    """``value`` if it is a finite number ``> 0`` (``why``: what zero or less would mean)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: {name} must be a finite number > 0{why}, got {_found(value)}")
    return float(value)
