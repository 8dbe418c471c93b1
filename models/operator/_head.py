r"""The output head: the network's functions on the domain -> the output channels' series, what each axis's boundary
imposes applied.

``C`` functions on the domain (coefficients ``(batch, *n, C)``) are mixed into the output channels on the domain's
structure (the bias is a constant function, ``b T_0``), divided by the output scale, multiplied by what each axis's
boundary imposes (:meth:`~instances.axes.Boundary.imposition`: ``1 - t²`` in coefficient space on a ``"zero"`` axis,
two more terms) and shifted by the output mean (a constant function: the first coefficient along every axis).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Pairs, Structure
from instances import Vector
from instances.axes import Boundary


class SeriesHead(nn.Module):
    """``C`` functions ``(batch, *n, C)`` -> the output series ``(batch, C_out, *sizes)``.

    The buffers ``out_shift`` and ``out_scale`` ``(C_out,)`` hold the output's standardisation (its mean, zero where
    a boundary vanishes, and its root-mean-square), fitted with the model's
    (:meth:`~models.operator.OperatorModel.fit_scales`).

    Args:
        domain: the series of each axis (their sizes ``n``).
        boundaries: each axis's boundary.
        channels, out_channels: ``C`` and ``C_out``.
    """

    out_shift: Tensor
    out_scale: Tensor

    def __init__(
        self,
        domain: Sequence[Structure],
        boundaries: Sequence[Boundary],
        channels: int,
        out_channels: int,
        *,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.domain, self.dtype = tuple(domain), dtype
        self.whole = self.domain[0] if len(self.domain) == 1 else Pairs(self.domain[0], self.domain[1])
        self.combine: Linear[Vector, Vector] | None = (
            None if channels == 1 == out_channels else Linear(Vector(channels), Vector(out_channels), dtype=dtype)
        )
        self.register_buffer("out_shift", torch.zeros(out_channels, dtype=torch.float64))
        self.register_buffer("out_scale", torch.ones(out_channels, dtype=torch.float64))
        target = torch.empty(0).device  # the default device (meta, when the model is only counted)
        for i, (b, s) in enumerate(zip(boundaries, self.domain, strict=True)):
            with torch.device("cpu"):  # a fixed map, built by value
                imposed = b.imposition(s.size)
            if imposed is not None:
                self.register_buffer(f"imposed_{i}", imposed.to(dtype=dtype, device=target))

    def forward(self, v: Tensor) -> Tensor:
        """``v`` ``(batch, *n, C)`` coefficients -> ``(batch, C_out, *sizes)``."""
        b, n, c = v.shape[0], v.shape[1:-1], v.shape[-1]
        if self.combine is not None:
            # on the domain's structure: the bias is a constant function (b T_0), not b at every coefficient
            v = self.combine(Field(v.reshape(b, -1, c), (self.whole, self.combine.inp))).tensor
        v = v.reshape(b, *n, -1).movedim(-1, 1)  # (b, C_out, *n)
        v = v / self.out_scale.to(self.dtype).reshape(-1, *([1] * len(n)))
        for i in range(len(n)):
            imposed: Tensor | None = getattr(self, f"imposed_{i}", None)
            if imposed is not None:
                v = torch.movedim(torch.tensordot(v, imposed, dims=([2 + i], [1])), -1, 2 + i)
        # the output's mean, a constant function: the T_0 (or a_0) coefficient along every axis (zero when fixed)
        constant = torch.zeros(v.shape[2:], dtype=v.dtype, device=v.device)
        constant.view(-1)[0] = 1.0
        return v + self.out_shift.to(self.dtype).reshape(-1, *([1] * len(n))) * constant
