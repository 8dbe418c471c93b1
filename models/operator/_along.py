r"""The Funcformers along each axis of a domain of one or two series.

On a 1D domain, one :class:`~models.Funcformer` whose sequence is the axis's series and whose features at each
point are ``C`` numbers. On a 2D domain ``X x Y`` two ways:

* **factored** (the default): one along ``x`` whose features at each ``x`` are ``C`` functions of ``y``
  (``Pairs(Y, Vector(C))``, or ``Y`` alone for one), and one along ``y`` on the transposed functions (features:
  functions of ``x``); their outputs are summed (the two directions treated alike). Each Funcformer's state at a
  point of its axis is ``width`` numbers for all of the other axis's functions.
* **axial** (``axial=True``): the field at the ``n_y`` points ``y_j`` of the ``y`` series
  (:meth:`~applicative.Basis.positions`, where its values determine its coefficients), the Funcformer along ``x``
  maps the ``C`` functions of ``x`` at each ``y_j`` (features ``Vector(C)``, the points a batch), and the result,
  back in coefficients, is mapped the same way along ``y`` at each of the ``n_x`` points ``x_i``:

  $$ v = F_y \circ F_x (f), \qquad (F_x f)(\cdot, y_j) = \mathrm{Funcformer}_x\big(f(\cdot, y_j)\big). $$

  Each point of the plane has its own ``width``-wide state in each Funcformer, and the composition lets the
  output at ``(x, y)`` depend on the whole plane (a sum of the two would see only the row and the column through
  it). It costs ``n_y`` (and ``n_x``) Funcformer sequences where the factored form runs one: on the CPU about nine
  times a factored step at Navier--Stokes' ``25 x 25`` series (the lab note ``docs/notes/2026-11-29-axial.md``).

  **Interleaved** (``interleaved=True``, the default): the layers alternate instead. ``F_x``'s embedding lifts the
  ``C`` functions to a ``width``-wide state at each point of the plane, with both Funcformers' learned positions;
  layer ``i`` along ``x`` (at every ``y_j``) is followed by layer ``i`` along ``y`` (at every ``x_i``), the state of
  the plane carried between them whole; ``F_x``'s unembedding lowers it back to ``C`` functions (``F_y``'s
  embedding and unembedding are not built). Composed, only ``C`` functions per point pass from one axis to the
  other, once; interleaved, the ``width``-wide state passes ``2 · depth - 1`` times. The same layers run at the same
  cost. On Navier--Stokes 7.36e-3 against the composed form's 1.25e-2, level with the FNO (the lab note
  ``docs/notes/2026-11-30-plane.md``); with ``C`` as wide as the state (28), 6.54e-3, under it
  (``docs/notes/2026-11-30-functions.md``).

The map keeps its input's shape: ``(batch, *n, C)`` coefficients -> ``(batch, *n, C)``. ``config.convolution`` is
taken along the periodic axes only (a circular convolution needs a circle); along a bounded axis that Funcformer has
none.

With ``plane`` on a domain of two periodic axes, each function is also convolved with a learned kernel of the plane
(:func:`~instances.fourier.multiply_plane`: each frequency pair ``(k, l)`` scaled and turned, one multiplier per
function), as a residual ``f + κ ⋆ f`` started at zero: before the Funcformers and after them (the composed axial
form: also between the two). The Funcformers' own convolutions act along one axis at a time, so what they compose
is a sum of products ``p_k q_l``; the plane's multiplier need not factor, as the Biot--Savart law's
``1 / (k² + l²)`` does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor, nn

from applicative import Basis, Field, InputError, Pairs, Structure
from instances import Fourier, Vector
from instances.fourier import multiply_plane

from ..funcformer import Funcformer, FuncformerConfig


class AlongAxes(nn.Module):
    """Coefficients ``(batch, *n, C)`` on the domain's series -> the same shape, a Funcformer along each axis.

    Args:
        domain: the series of each axis (one or two structures; ``n`` their sizes).
        channels: ``C``, the functions handed along per point.
        width, hidden: each Funcformer's model channels and MLP width.
        config: the Funcformers' heads, depth, normalisation, activation, window and convolution (the last along
            periodic axes only).
        axial: on a 2D domain, the axial form (each axis's Funcformer at every point of the other, composed)
            instead of the factored one.
        interleaved: the axial form's layers alternate between the axes (``False``: each axis's Funcformer whole,
            composed, as the axial form was built before).
        plane: on a domain of two periodic axes, the learned convolutions of the plane (:attr:`plane`), two (three in
            the composed axial form) of ``channels · n_x · (n_y + 1)`` weights; elsewhere nothing.

    Raises:
        InputError: ``axial`` on a 1D domain (there is no other axis to run along).
    """

    def __init__(
        self,
        domain: Sequence[Structure],
        channels: int,
        width: int,
        hidden: int,
        config: FuncformerConfig,
        *,
        axial: bool = False,
        interleaved: bool = True,
        plane: bool = False,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.domain, self.axial, self.interleaved = tuple(domain), axial, axial and interleaved
        if axial and len(self.domain) != 2:
            raise InputError(
                f"AlongAxes: axial=True on a domain of {len(self.domain)} axis: the axial form runs each axis's "
                "Funcformer at every point of the other; use axial=False on one axis"
            )
        c, d, h = Vector(channels), Vector(width), Vector(hidden)
        x = self.domain[0]
        if len(self.domain) == 1 or axial:
            features: Structure = c
        else:
            features = self.domain[1] if c.size == 1 else Pairs(self.domain[1], c)
        self.x: Funcformer[Structure, Structure, Vector] = Funcformer(x, features, d, h, _on(config, x), dtype=dtype)
        self.y: Funcformer[Structure, Structure, Vector] | None = None
        if len(self.domain) == 2:  # the same along y: functions of x at each y, on the transposed input
            across: Structure = c if axial else x if c.size == 1 else Pairs(x, c)
            self.y = Funcformer(self.domain[1], across, d, h, _on(config, self.domain[1]), dtype=dtype)
            if self.interleaved:  # only its layers and position run: x's embedding lifts, x's unembedding lowers
                del self.y.transformer.embed, self.y.transformer.unembed
        #: the multipliers of the plane's convolutions, ``(places, C, n_x, n_y // 2 + 1, 2)`` (real and imaginary
        #: parts; ``None`` unless ``plane`` on two periodic axes), zero at the start: the map is as without them
        self.plane: nn.Parameter | None = None
        if plane and len(self.domain) == 2 and all(isinstance(a, Fourier) for a in self.domain):
            nx, ny = (a.size for a in self.domain)
            places = 3 if axial and not self.interleaved else 2  # the composed form's: also between
            self.plane = nn.Parameter(torch.zeros(places, channels, nx, ny // 2 + 1, 2, dtype=dtype))

    def forward(self, f: Tensor) -> Tensor:
        """``f`` ``(batch, *n, C)`` coefficients -> the same shape."""
        b, c = f.shape[0], f.shape[-1]
        if self.y is None:
            return self.x(Field(f, (self.domain[0], self.x.features))).tensor
        f = self._plane(f, 0)
        if self.interleaved:
            return self._plane(self._interleaved(f), 1)
        if self.axial:
            return self._plane(self._axial(self._plane(self._axial(f, 0), 1), 1), 2)
        n0, n1 = f.shape[1], f.shape[2]
        v = self.x(Field(f.reshape(b, n0, n1 * c), (self.domain[0], self.x.features))).tensor.reshape(b, n0, n1, c)
        t = f.transpose(1, 2).reshape(b, n1, n0 * c)  # [b, l, (k, c)]: y the sequence
        w = self.y(Field(t, (self.domain[1], self.y.features))).tensor.reshape(b, n1, n0, c)
        return self._plane(v + w.transpose(1, 2), 1)

    def _plane(self, f: Tensor, place: int) -> Tensor:
        """``f + κ ⋆ f`` with the plane's ``place``-th kernels (``f`` itself without them)."""
        if self.plane is None:
            return f
        return f + multiply_plane(torch.view_as_complex(self.plane[place]), f, dims=(1, 2))

    def _interleaved(self, f: Tensor) -> Tensor:
        """The interleaved axial form on ``f`` ``(batch, n_x, n_y, C)`` coefficients: the state of the plane held with
        ``x`` in coefficients and ``y`` at its points for a layer along ``x``, the other way for one along ``y``."""
        fx, fy = self.x, self.y
        assert fy is not None
        (x, y), (bx, by) = self.domain, (_basis(a) for a in self.domain)
        b, nx, ny, c = f.shape
        at_y = by.positions(f, 2, y.size).movedim(2, 1).reshape(b * ny, nx, c)  # (b y_j, n_x, C)
        h = fx.lift(Field(at_y, (x, fx.features))).tensor
        w = h.shape[-1]
        if fy.position is not None:  # y's learned function at the points y_j, for every x
            py = by.positions(fy.position, 0, y.size)
            h = (h.reshape(b, ny, nx, w) + py[None, :, None]).reshape(b * ny, nx, w)
        for i in range(len(fx.transformer.layers)):
            h = fx.layer(i, Field(h, (x, fx.model))).tensor
            s = bx.positions(by.stored(h.reshape(b, ny, nx, w), 1), 2, x.size)  # (b, n_y, x_i, W): y coefficients
            h = fy.layer(i, Field(s.movedim(2, 1).reshape(b * nx, ny, w), (y, fy.model))).tensor
            s = by.positions(bx.stored(h.reshape(b, nx, ny, w), 1), 2, y.size)  # (b, n_x, y_j, W): x coefficients
            h = s.movedim(2, 1).reshape(b * ny, nx, w)
        out = fx.lower(Field(h, (x, fx.model))).tensor.reshape(b, ny, nx, c).movedim(1, 2)  # (b, n_x, y_j, C)
        return by.stored(out, 2)

    def _axial(self, f: Tensor, along: int) -> Tensor:
        """The axial step along axis ``along`` (``0``: ``x``, ``1``: ``y``): its Funcformer at each point of the other
        axis's series, the points a batch; ``f`` ``(batch, n_x, n_y, C)`` coefficients in and out."""
        other, funcformer = 1 - along, self.x if along == 0 else self.y
        assert funcformer is not None
        basis = _basis(self.domain[other])
        v = basis.positions(f, 1 + other, self.domain[other].size).movedim(1 + other, 1)  # (b, points, n_along, C)
        b, m, n, c = v.shape
        out = funcformer(Field(v.reshape(b * m, n, c), (self.domain[along], funcformer.features))).tensor
        return basis.stored(out.reshape(b, m, n, c).movedim(1, 1 + other), 1 + other)


def _basis(axis: Structure) -> Basis:
    """The series' basis (coefficients <-> point values); every domain axis is a series, so it has one."""
    basis = axis.basis
    assert basis is not None, f"the domain's axis {axis!r} is not a series"
    return basis


def _on(config: FuncformerConfig, axis: Structure) -> FuncformerConfig:
    """``config`` for the Funcformer along ``axis``: its convolution kept only where the axis is periodic (a Fourier
    series)."""
    return replace(config, convolution=config.convolution and isinstance(axis, Fourier))
