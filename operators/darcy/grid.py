r"""The data's grid as a structure: uniform nodes with trapezoid weights, and its tokens.

The coefficient ``a`` is given as samples on the ``P x P`` uniform nodes of ``[0, 1]²`` (boundary
included). As a structure that is ``Pairs(Uniform(P), Uniform(P))``: :class:`Uniform` is a user structure
written in a few lines -- a size and a measure -- the ``P`` equally spaced nodes :math:`t_i = -1 + 2i/(P-1)`
of ``[-1, 1]`` (``t = 2x - 1``, the Chebyshev coordinate) with the composite trapezoid rule's weights

.. math::  w_i = h \cdot (\tfrac12, 1, \dots, 1, \tfrac12), \qquad h = 2 / (P - 1),

so its counit is :math:`\int_{-1}^1 f` to :math:`O(h^2)` (exact for piecewise-linear ``f``), ``Pairs``
gives the product rule on the square, and attention over the grid is one fused SDPA call with bias
``log w`` (nothing written for it). A finer grid (``Uniform(65)``) is the same integral sampled more
densely: a model that attends over the grid reads a 65² input with the weights it learned on 33².

Tokens (:func:`line_tokens`): along one axis, the standardised ``log a`` at each node and Fourier features of
the node's coordinate, :math:`\cos(\pi k t), \sin(\pi k t)` for ``k = 1..K`` -- enough for the dot product
of a query with a token to localise (a softmax query can pick out a neighbourhood of a point).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from applicative import Pairs, Vector


class Uniform(Vector):
    """``size`` equally spaced nodes of ``[-1, 1]``, ends included, weighted by the trapezoid rule."""

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log w_i``: ``h/2`` at the two ends, ``h`` inside, ``h = 2 / (size - 1)`` (one node: weight 2)."""
        return trapezoid_weights(self.size, dtype, device).log()

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """The nodes ``t_i = -1 + 2i/(P-1)`` (a grid of values: its positions are its nodes, ``points`` ignored)."""
        return torch.linspace(-1, 1, self.size, dtype=dtype, device=device)


def trapezoid_weights(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The composite trapezoid rule's weights on ``n`` equally spaced nodes of ``[-1, 1]``: ``(n,)``, sum 2."""
    if n == 1:
        return torch.full((1,), 2.0, dtype=dtype, device=device)
    w = torch.full((n,), 2.0 / (n - 1), dtype=dtype, device=device)
    w[0] /= 2  # element by element: an index list would be a CPU tensor (meta and compiled graphs)
    w[-1] /= 2
    return w


def grid(points: int) -> Pairs:
    """The ``points x points`` grid of ``[0, 1]²`` as one axis, ``x``-major (the data's ``a[i, j] = a(x_i, y_j)``)."""
    return Pairs(Uniform(points), Uniform(points))


def fourier(
    points: int, frequencies: int, dtype: torch.dtype = torch.float64, device: torch.device | None = None
) -> Tensor:
    """``(cos πkt_i, sin πkt_i)``, ``k = 1..K``, at the uniform nodes ``t_i`` of ``[-1, 1]``: ``(P, 2K)``."""
    t = torch.linspace(-1, 1, points, dtype=dtype, device=device)
    k = torch.arange(1, frequencies + 1, dtype=dtype, device=device)
    return torch.cat([torch.cos(math.pi * t[:, None] * k), torch.sin(math.pi * t[:, None] * k)], -1)


def line_tokens(log_a: Tensor, frequencies: int) -> Tensor:
    """Tokens along the last axis of ``log_a`` ``(..., P)``: ``(..., P, 1 + 2K)``, the value and :func:`fourier`."""
    f = fourier(log_a.shape[-1], frequencies, log_a.dtype, log_a.device)
    return torch.cat([log_a[..., None], f.expand(*log_a.shape, -1)], -1)
