r"""The pointwise decoder: the output at each point an MLP of the network's functions there.

The :class:`SeriesHead` makes each output channel a linear combination of the network's ``C`` functions: a series of
``n`` terms, which cannot be steeper than ``n`` terms allow (a shock of width ``ν`` needs about ``1/ν`` of them). The
decoder instead evaluates the ``C`` functions ``v(t)`` at the points asked for and maps their values there by an MLP,

$$ u(t) = \mu + s\, w(t)\, \big(Q\, \sigma(P v(t) + p) + q\big), $$

with ``s`` the output's root-mean-square and ``μ`` its mean (the model's standardisation), and ``w(t)`` what the axes'
boundaries impose (``1 - t²`` along a ``"zero"`` axis: the boundary's :meth:`~instances.axes.Boundary.imposition` of
the constant function; ``1`` elsewhere). A nonlinear function of smooth functions can be steep where they are not (a
``tanh`` of a line is a front), so the output is no longer bounded by the series' length; it is still a function of
the domain, evaluable anywhere. It is the FNO's projection ``Q``, applied at any point rather than at the grid's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from applicative import Structure
from instances.axes import Boundary

from ._head import impositions, standardisation
from ._series import at_grid, at_points

#: the pointwise decoder's width where ``decoder = -1`` chooses one (:func:`decoder_width`)
DECODER_WIDTH = 64


def decoder_width(decoder: int, boundaries: Sequence[Boundary], homogeneous: float) -> int:
    """The decoder's width a model is built with: ``decoder`` where it is ``>= 0``; where it is ``-1``,
    :data:`DECODER_WIDTH` on a grid of periodic axes and ``0`` (the series head) where an axis is bounded or the model
    is homogeneous. A bounded row's smooth solution is what a Chebyshev series holds exactly (Poisson: 1.4 times worse
    with the decoder), where a periodic row's fronts are what it cannot (Burgers at ν = 0.001: 3 times better with it;
    the lab note ``docs/notes/2026-11-29-decoder.md``)."""
    if decoder >= 0:
        return decoder
    return DECODER_WIDTH if all(b.periodic for b in boundaries) and homogeneous == 0 else 0


class PointDecoder(nn.Module):
    """``C`` functions ``(batch, *n, C)`` -> their series ``(batch, C, *n)``, decoded into the output channels at
    points by :meth:`at_grid` and :meth:`at_points`.

    The buffers ``out_shift`` and ``out_scale`` ``(C_out,)`` hold the output's standardisation as in the
    :class:`SeriesHead` (its mean, zero where a boundary vanishes, and the reciprocal of its root-mean-square).

    Args:
        domain: the series of each axis (their sizes ``n``).
        boundaries: each axis's boundary.
        channels, out_channels: ``C`` and ``C_out``.
        width: the MLP's hidden width.
        activation: ``σ``.
    """

    out_shift: Tensor
    out_scale: Tensor

    def __init__(
        self,
        domain: Sequence[Structure],
        boundaries: Sequence[Boundary],
        channels: int,
        out_channels: int,
        width: int,
        activation: Callable[[Tensor], Tensor],
        *,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.domain, self.boundaries, self.activation = tuple(domain), tuple(boundaries), activation
        self.lift = nn.Linear(channels, width, dtype=dtype)  # P, p
        self.project = nn.Linear(width, out_channels, dtype=dtype)  # Q, q
        standardisation(self, out_channels)
        for i, imposed in impositions(self.boundaries, self.domain):  # w's coefficients: the imposition of 1
            self.register_buffer(f"imposed_{i}", imposed[:, 0].to(dtype=dtype))

    def forward(self, v: Tensor) -> Tensor:
        """``v`` ``(batch, *n, C)`` coefficients -> ``(batch, C, *n)``, the series :meth:`at_grid` decodes."""
        out: Tensor = v.movedim(-1, 1)
        return out

    def decode(self, values: Tensor, factor: Tensor | None) -> Tensor:
        """The functions' values ``(..., C)`` -> the outputs ``(..., C_out)``; ``factor`` (broadcast against
        ``values[..., :1]``) is ``w`` at the same points, ``None`` for ``1``. The MLP computes in its weights' type, the
        rest in ``values``'s (float64 where a prediction evaluates in it)."""
        z: Tensor = self.project(self.activation(self.lift(values.to(self.lift.weight.dtype))))
        u = z.to(values.dtype) / self.out_scale.to(values.dtype)
        if factor is not None:
            u = u * factor
        return u + self.out_shift.to(values.dtype)

    def at_grid(self, coefficients: Tensor, ts: Sequence[Tensor]) -> Tensor:
        """:meth:`forward`'s series at model coordinates ``ts`` (one 1-D tensor per axis: a tensor grid), decoded:
        ``(batch, *(len(t) for t in ts), C_out)``."""
        values = at_grid(coefficients, self.boundaries, ts)
        return self.decode(values, self._factor(ts, values.dtype, grid=True))

    def at_points(self, coefficients: Tensor, points: Tensor) -> Tensor:
        """:meth:`forward`'s series at scattered model coordinates ``points`` ``(M, dims)``, decoded:
        ``(batch, M, C_out)``."""
        values = at_points(coefficients, self.boundaries, points)
        return self.decode(values, self._factor(points.unbind(1), values.dtype, grid=False))

    def _factor(self, ts: Sequence[Tensor], dtype: torch.dtype, *, grid: bool) -> Tensor | None:
        """``w = ∏_i w_i(t_i)`` from each axis's coordinates ``ts[i]``: on their tensor grid (``grid``: shape
        ``(*(len(t) for t in ts), 1)``) or at points whose ``i``-th coordinates they are (shape ``(M, 1)``); ``None``
        where no boundary imposes anything."""
        factor: Tensor | None = None
        for i, t in enumerate(ts):
            w = self._imposed(i, t.to(dtype))
            if w is not None:
                w = w.reshape(*([1] * i), -1, *([1] * (len(ts) - 1 - i)), 1) if grid else w[:, None]
                factor = w if factor is None else factor * w
        return factor

    def _imposed(self, i: int, t: Tensor) -> Tensor | None:
        """``w_i(t)`` along axis ``i`` at ``t``, or ``None`` where its boundary imposes nothing."""
        c: Tensor | None = getattr(self, f"imposed_{i}", None)
        return None if c is None else self.boundaries[i].basis(c.shape[0], t) @ c.to(t.dtype)
