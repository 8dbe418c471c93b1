r"""The grid path: a pointwise nonlinearity at the input grid's resolution, beside the network's series.

The Funcformers' nonlinearities act on the point values of their series (``2n - 1`` points for ``n`` terms); a
front resolved by the grid's ``P`` samples is aliased there. The grid path adds one nonlinearity at the grid's own
samples, as an FNO's pointwise path does. At each grid point ``t_j`` (a tensor grid of the input's layouts) the
network's ``C`` functions ``v`` (coefficients ``(batch, *n, C)`` on the domain's series) are evaluated,
``g_j = Σ_k v_k φ_k(t_j)``, and with the standardised input samples ``x_j`` pass through a pointwise MLP of width
``w``:

``r_j = Q σ(A g_j + P x_j + a) + q``  (``C`` numbers at each point; ``Q, q`` start at zero, so the path starts off).

``r`` is brought back to the domain's series by the layouts' quadrature ``w_j``: the weighted least-squares fit
``c = argmin Σ_j w_j |r_j - Σ_k c_k φ_k(t_j)|²``, one axis at a time (the fit on a tensor grid is the product of the
axes' fits), ``c = (Vᵀ W V)⁻¹ Vᵀ W r`` with ``V = φ(t)`` ``(P, n)``. On a periodic axis (uniform weights, ``n ≤ P``
odd) that is exactly the first ``n`` coefficients of ``r``'s trigonometric interpolant. The model adds ``c`` to ``v``
before its head, so the output is still a series of the model's sizes, evaluable anywhere
(:meth:`~models.operator.OperatorModel.at`) whatever grid it is asked at: the pointwise features live only on the
input's grid, and reach other grids through the series. As ``P`` grows the fit tends to the ``L²`` projection of a
fixed function, so one set of weights reads every fine enough resolution alike; the input needs ``P ≥ n`` samples
per axis (fewer cannot determine ``n`` coefficients).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from instances.axes import Axis


def fit(axis: Axis, points: int, size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The weighted least-squares fit of ``size`` basis functions of ``axis``'s boundary to values at its layout's
    ``points`` samples, by its quadrature: ``(size, points)``, ``(Vᵀ W V)⁻¹ Vᵀ W`` (computed in float64)."""
    t = axis.t(points, torch.float64, device)
    v = axis.boundary.basis(size, t)  # (P, n)
    vw = v.T * axis.weights(points, torch.float64, device)  # (n, P): Vᵀ W
    out: Tensor = torch.linalg.solve(vw @ v, vw)
    return out.to(dtype)


def along(values: Tensor, maps: Sequence[Tensor]) -> Tensor:
    """``values`` ``(batch, *m, C)`` with each axis ``i`` mapped by ``maps[i]`` ``(m'_i, m_i)``:
    ``(batch, *m', C)``."""
    out = values
    for i, a in enumerate(maps):
        out = torch.movedim(torch.tensordot(out, a, dims=([1 + i], [1])), -1, 1 + i)
    return out


class GridPath(nn.Module):
    """The network's functions ``v`` ``(batch, *n, C)`` and the standardised inputs ``x`` ``(batch, *grid, C_in)`` ->
    the correction ``c`` ``(batch, *n, C)`` to add to ``v``.

    Args:
        axes: the grid's axes (their layouts place the samples, their boundaries give the series' basis).
        sizes: ``n``, the domain series' length on each axis.
        channels, in_channels: ``C`` and ``C_in``.
        width: ``w``, the pointwise features.
        activation: ``σ``.
    """

    def __init__(
        self,
        axes: Sequence[Axis],
        sizes: Sequence[int],
        channels: int,
        in_channels: int,
        width: int,
        activation: Callable[[Tensor], Tensor],
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.axes, self.sizes, self.activation = tuple(axes), tuple(sizes), activation
        self.lift = nn.Linear(channels + in_channels, width, dtype=dtype)  # [A P], a
        self.project = nn.Linear(width, channels, dtype=dtype)  # Q, q
        nn.init.zeros_(self.project.weight)
        nn.init.zeros_(self.project.bias)

    def forward(self, v: Tensor, x: Tensor) -> Tensor:
        """``v`` ``(batch, *n, C)``, ``x`` ``(batch, *grid, C_in)`` -> ``(batch, *n, C)``."""
        grid, dtype, device = x.shape[1:-1], v.dtype, v.device
        t = [a.t(p, torch.float64, device) for a, p in zip(self.axes, grid, strict=True)]
        basis = [a.boundary.basis(n, s).to(dtype) for a, n, s in zip(self.axes, self.sizes, t, strict=True)]
        g = along(v, basis)  # (b, *grid, C): the functions at the samples
        r = self.project(self.activation(self.lift(torch.cat([g, x.to(dtype)], -1))))
        fits = [fit(a, p, n, dtype, device) for a, p, n in zip(self.axes, grid, self.sizes, strict=True)]
        return along(r, fits)
