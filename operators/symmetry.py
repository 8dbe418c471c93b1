"""Symmetries of a grid that an operator may commute with: reflections, the square's eight, periodic shifts.

A symmetry ``g`` of the domain moves a function by ``(g·f)(x) = f(g⁻¹x)``; an operator ``G`` commutes with it when
``G(g·a) = g·G(a)``, and then every moved pair ``(g·a, g·u)`` is another exact sample -- more distinct training
pairs at no cost a step. Whether ``G`` commutes is the user's claim (Darcy's and Poisson's operators commute with
the square's symmetries; a translation-invariant operator on a periodic domain with shifts); that the grid maps
onto itself is checked here (:func:`problem`):

* ``"flips"``: each axis reflected, ``x ↦ lo + hi - x``, independently. The layouts symmetric about their
  centre (nodes, centres, Chebyshev, Lobatto) reverse their samples; a periodic axis (``i/P``, reflection about
  ``lo``) maps sample ``i`` to ``-i mod P``. The periodic layout of a bounded axis has no symmetric reflection.
* ``"square"``: two like axes (same layout, extent and boundary): the transpose, then flips -- the dihedral group
  of the square (eight elements).
* ``"shifts"``: each periodic axis rolled by a random whole number of samples.

Samples are ``(batch, *grid, channels)``; the moves are drawn per sample (:func:`draw`) and applied in one
``torch.where`` / gather per axis (:func:`move`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from .layout import Axis

Augment = Literal["none", "flips", "square", "shifts"]


def problem(augment: Augment, axes: Sequence[Axis]) -> str | None:
    """Why ``augment`` does not map the grid of ``axes`` onto itself (``None``: it does)."""
    if augment == "none":
        return None
    if augment == "shifts":
        if not any(a.periodic for a in axes):
            return "augment=shifts translates along periodic axes, and no axis has boundary periodic"
        return None
    odd = [i for i, a in enumerate(axes) if not a.layout.symmetric and not a.periodic]
    if odd:
        return (
            f"augment={augment}: axis {'xy'[odd[0]]} is sampled at {axes[odd[0]].layout.placement} without being "
            "periodic, so a reflection does not map its samples onto themselves; use augment=none"
        )
    if augment == "square":
        if len(axes) != 2:
            return "augment=square moves a square: it needs two axes"
        a, b = axes
        if a != b:
            return "augment=square exchanges the axes: they need the same layout, extent and boundary"
    return None


def draw(augment: Augment, batch: int, axes: Sequence[Axis], grid: Sequence[int], generator: torch.Generator) -> Tensor:
    """Per-sample moves ``(batch, k)`` for :func:`move`: booleans (transpose, flip x, flip y) for ``"square"``, a
    flip per axis for ``"flips"``, a shift per axis (``0`` on a bounded one) for ``"shifts"``."""
    if augment == "square":
        return torch.rand(batch, 3, generator=generator) < 0.5
    if augment == "flips":
        return torch.rand(batch, len(axes), generator=generator) < 0.5
    if augment == "shifts":
        cols = [
            torch.randint(0, p, (batch,), generator=generator) if a.periodic else torch.zeros(batch, dtype=torch.long)
            for a, p in zip(axes, grid, strict=True)
        ]
        return torch.stack(cols, -1)
    return torch.zeros(batch, 0, dtype=torch.bool)


def _flip(t: Tensor, dim: int, periodic: bool) -> Tensor:
    """``t`` reflected along ``dim``: reversed, and on a periodic axis rolled by one so sample 0 stays put."""
    flipped = t.flip(dim)
    return flipped.roll(1, dim) if periodic else flipped


def _where(which: Tensor, moved: Tensor, t: Tensor) -> Tensor:
    return torch.where(which.reshape(-1, *([1] * (t.ndim - 1))), moved, t)


def move(t: Tensor, which: Tensor, augment: Augment, axes: Sequence[Axis]) -> Tensor:
    """Each sample of ``t`` ``(batch, *grid, C)`` moved by its row of ``which`` (:func:`draw`)."""
    which = which.to(t.device)
    if augment == "square":
        t = _where(which[:, 0], t.transpose(1, 2), t)
        t = _where(which[:, 1], _flip(t, 1, axes[0].periodic), t)
        return _where(which[:, 2], _flip(t, 2, axes[1].periodic), t)
    if augment == "flips":
        for i, a in enumerate(axes):
            t = _where(which[:, i], _flip(t, 1 + i, a.periodic), t)
        return t
    if augment == "shifts":
        for i, a in enumerate(axes):
            if a.periodic:
                p = t.shape[1 + i]
                index = (torch.arange(p, device=t.device)[None, :] + which[:, i, None]) % p  # (batch, P)
                shape = [t.shape[0]] + [1] * (t.ndim - 1)
                shape[1 + i] = p
                t = t.gather(1 + i, index.reshape(shape).expand_as(t))
        return t
    return t
