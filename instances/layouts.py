r"""Where a grid's samples sit on one axis, as structures: positions at the nodes, the quadrature as the measure.

A function sampled on a grid is a field over a structure whose positions are the grid's nodes. Public operator data
place ``P`` samples of an axis in a handful of ways, written here for ``s ∈ [0, 1]`` (model coordinates
``t = 2s - 1``):

| layout | class | nodes ``s_i`` | ends stored | quadrature (on ``t ∈ [-1, 1]``) |
|---|---|---|---|---|
| ``"nodes"`` | :class:`Nodes` | ``i / (P - 1)`` | both | trapezoid: ``h/2, h, ..., h, h/2``, ``h = 2/(P - 1)`` |
| ``"periodic"`` | :class:`PeriodicNodes` | ``i / P`` | the first | periodic trapezoid: ``2/P`` each |
| ``"centres"`` | :class:`Centres` | ``(i + ½) / P`` | none | midpoint: ``2/P`` each |
| ``"chebyshev"`` | :class:`ChebyshevNodes` | ``(1 - cos(π(2i + 1)/(2P))) / 2`` | none | Fejér's first rule |
| ``"lobatto"`` | :class:`LobattoNodes` | ``(1 - cos(π i/(P - 1))) / 2`` | both | Clenshaw--Curtis |

Each layout is a class: ``Nodes(33)`` is the structure of 33 samples at ``i/32`` -- its
:meth:`~Layout.coordinates` the nodes ``t_i``, its :meth:`~Layout.log_measure` ``log w_i`` -- so attention over the
samples is an integral, the same at any ``P``; the class methods (:meth:`Layout.t`, :meth:`Layout.weights`) give the
nodes and weights of any ``P`` without a structure. The periodic layout's samples on a circle (an axis whose
boundary is periodic) are :class:`Circle`: the same nodes, :attr:`~applicative.Structure.periodic`.

The names in the table are the layouts' :attr:`Layout.name` (the command line's and a checkpoint's word for them,
looked up in :data:`instances.axes.LAYOUTS`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import Tensor

from applicative import Vector
from applicative.tensors import constant


class Layout(Vector):
    """The samples of one axis placed by a rule: positions at the nodes, measure the quadrature weights.

    Abstract: each concrete layout gives its :attr:`name`, :attr:`placement`, the :attr:`ends` it stores, whether it
    is :attr:`symmetric` about the axis's centre, and its nodes (:meth:`unit`) and weights (:meth:`quadrature`).
    """

    #: the layout's name (the command line's and a checkpoint's word for it)
    name: ClassVar[str] = ""
    #: where the nodes sit, in words (``"i/(P-1)"``)
    placement: ClassVar[str] = ""
    #: which ends of the axis are among the samples: ``(first, last)``
    ends: ClassVar[tuple[bool, bool]] = (False, False)
    #: whether the reflection ``s ↦ 1 - s`` maps the nodes onto themselves
    symmetric: ClassVar[bool] = True

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        """The ``points`` nodes on ``[0, 1]``, increasing, float64: ``(points,)``."""
        raise NotImplementedError(f"{cls.__name__}: a layout gives its nodes")

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        """Weights for ``∫_{-1}^{1} f(t) dt`` at the nodes, float64: ``(points,)``, summing to 2."""
        raise NotImplementedError(f"{cls.__name__}: a layout gives its quadrature")

    @classmethod
    def least(cls) -> int:
        """The fewest samples the layout can place (2 with both ends stored, else 1)."""
        return 2 if all(cls.ends) else 1

    @classmethod
    def t(cls, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
        """The nodes' model coordinates ``t = 2s - 1 ∈ [-1, 1]`` (increasing): ``(points,)``."""
        return (cls.unit(points, device) * 2 - 1).to(dtype)

    @classmethod
    def weights(
        cls, points: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
    ) -> Tensor:
        """:meth:`quadrature` in ``dtype``: ``(points,)``, summing to 2."""
        return cls.quadrature(points, device).to(dtype)

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log w_i``: the layout's quadrature weights on ``t ∈ [-1, 1]``."""
        return _cached(type(self), self.size, "log w", dtype, torch.device(device))

    def coordinates(
        self, dtype: torch.dtype, device: torch.device | str | None = None, points: int | None = None
    ) -> Tensor:
        """The samples' ``t`` (the grid's nodes: its positions are its samples, ``points`` ignored)."""
        return _cached(type(self), self.size, "t", dtype, torch.device(device if device is not None else "cpu"))


def _index(points: int, device: torch.device | str | None) -> Tensor:
    return torch.arange(points, dtype=torch.float64, device=device)


class Nodes(Layout):
    """Nodes with both ends, ``i/(P - 1)``; the trapezoid rule."""

    name = "nodes"
    placement = "i/(P-1)"
    ends = (True, True)

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        i = _index(points, device)
        return i / (points - 1) if points > 1 else torch.zeros_like(i)

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        w = torch.full((points,), 2.0 / max(points - 1, 1) if points > 1 else 2.0, dtype=torch.float64, device=device)
        if points > 1:
            w[0] /= 2  # element by element: an index list would be a CPU tensor (meta and compiled graphs)
            w[-1] /= 2
        return w


class PeriodicNodes(Layout):
    """Nodes of a period without its end, ``i/P`` (the end is the start); ``2/P`` each."""

    name = "periodic"
    placement = "i/P"
    ends = (True, False)
    symmetric = False

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return _index(points, device) / points

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return torch.full((points,), 2.0 / points, dtype=torch.float64, device=device)


class Circle(PeriodicNodes):
    """:class:`PeriodicNodes` on a circle (an axis with a periodic boundary): positions ``t`` of period 2."""

    periodic = True


class Centres(Layout):
    """Cell centres, ``(i + ½)/P``; the midpoint rule."""

    name = "centres"
    placement = "(i+1/2)/P"

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return (_index(points, device) + 0.5) / points

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return torch.full((points,), 2.0 / points, dtype=torch.float64, device=device)


def _interpolatory(nodes: Tensor) -> Tensor:
    """The weights integrating ``T_k`` exactly for ``k < P`` at nodes on ``[0, 1]`` (Fejér, Clenshaw--Curtis)."""
    theta = torch.arccos((nodes * 2 - 1).clamp(-1, 1))
    k = torch.arange(len(nodes), dtype=torch.float64, device=nodes.device)
    moments = torch.where(k % 2 == 0, 2.0 / (1.0 - k * k), torch.zeros_like(k))
    weights: Tensor = torch.linalg.solve(torch.cos(k[:, None] * theta[None, :]), moments)
    return weights


class ChebyshevNodes(Layout):
    """First-kind Chebyshev points (no end stored); Fejér's first rule."""

    name = "chebyshev"
    placement = "first-kind Chebyshev points"

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return (1 - torch.cos(math.pi * (2 * _index(points, device) + 1) / (2 * points))) / 2

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return _interpolatory(cls.unit(points, device))


class LobattoNodes(Layout):
    """Second-kind Chebyshev points, both ends stored; Clenshaw--Curtis."""

    name = "lobatto"
    placement = "second-kind Chebyshev points"
    ends = (True, True)

    @classmethod
    def unit(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        i = _index(points, device)
        return (1 - torch.cos(math.pi * i / (points - 1))) / 2 if points > 1 else torch.zeros_like(i)

    @classmethod
    def quadrature(cls, points: int, device: torch.device | str | None = None) -> Tensor:
        return _interpolatory(cls.unit(points, device))


@constant
def _cached(layout: type[Layout], p: int, what: str, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        if what == "t":
            return layout.t(p, dtype, device)
        return layout.quadrature(p, device).log().to(dtype)
