r"""The operator model's output as functions: series per axis, evaluated anywhere, and their roughness.

Output coefficients ``u`` ``(batch, C, *m)`` hold ``C`` functions of the domain, one series per axis in the basis its
:class:`~instances.axes.Boundary` gives (Chebyshev ``T_k(t)``, or Fourier ``1, cos πk(t+1), sin πk(t+1)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from instances.axes import Axis, Boundary


def sizes(axes: Sequence[Axis], modes: int) -> tuple[int, ...]:
    """Coefficients per axis of the output series for ``modes`` (:meth:`~instances.axes.Boundary.coefficients`)."""
    return tuple(a.boundary.coefficients(modes) for a in axes)


def at_grid(coefficients: Tensor, boundaries: Sequence[Boundary], ts: Sequence[Tensor]) -> Tensor:
    """Coefficients ``(batch, C, *m)`` at model coordinates ``ts`` (one 1-D tensor of ``t`` per axis: a tensor
    grid): ``(batch, *(len(t) for t in ts), C)``."""
    out = coefficients
    for i, (b, t) in enumerate(zip(boundaries, ts, strict=True)):
        v = b.basis(out.shape[2 + i], t.to(out.dtype))  # (p, m)
        out = torch.movedim(torch.tensordot(out, v, dims=([2 + i], [1])), -1, 2 + i)
    return out.movedim(1, -1)


def at_points(coefficients: Tensor, boundaries: Sequence[Boundary], points: Tensor) -> Tensor:
    """Coefficients ``(batch, C, *m)`` at scattered model coordinates ``points`` ``(M, dims)``: ``(batch, M, C)``."""
    phis = [b.basis(coefficients.shape[2 + i], points[:, i].to(coefficients.dtype)) for i, b in enumerate(boundaries)]
    if len(phis) == 1:
        return torch.einsum("bck,mk->bmc", coefficients, phis[0])
    return torch.einsum("bckl,mk,ml->bmc", coefficients, phis[0], phis[1])


def roughness(u: Tensor, boundaries: Sequence[Boundary]) -> Tensor:
    r"""``Σ (k̂⁴ + l̂⁴) u_kl²`` per sample for output coefficients ``u`` ``(batch, C, *m)``, ``k̂`` each coefficient's
    :meth:`~instances.axes.Boundary.frequency` in ``[0, 1]``: ``(batch,)``.

    A smoothing penalty: samples alone do not determine a series of many terms between them (Runge, near the ends of
    a uniform grid: at 33 nodes a 22-term series can be small at every node and large between them).
    """
    weight = torch.zeros(u.shape[2:], dtype=u.dtype, device=u.device)
    for i, b in enumerate(boundaries):
        k = b.frequency(u.shape[2 + i], u.dtype, u.device) ** 4
        weight = weight + k.reshape(*([1] * i), -1, *([1] * (len(boundaries) - 1 - i)))
    return (weight * u.pow(2)).flatten(1).sum(-1)


def domain_mean(f: Tensor, axes: Sequence[Axis]) -> Tensor:
    """The mean ``∫ f / |domain|`` of grid values ``f`` ``(batch, *grid)`` by the layouts' quadrature: ``(batch,)``.

    The integral, not the mean of the samples: the samples' mean over-weights the ends (by ``1/P`` on nodes with both
    ends) and so moves with the resolution, where the integral's estimate does not.
    """
    out = f
    for i, a in enumerate(axes):
        w = a.weights(f.shape[1 + i], f.dtype, f.device) / 2
        out = torch.tensordot(out, w, dims=([1], [0])) if i == 0 else (out * w).sum(1)
    return out
