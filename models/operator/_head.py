r"""The output head: the network's functions on the domain -> the output channels' series, what each axis's boundary
imposes applied.

``C`` functions on the domain (coefficients ``(batch, *n, C)``) are mixed into the output channels on the domain's
structure (the bias is a constant function, ``b T_0``), divided by the output scale, multiplied by what each axis's
boundary imposes (:meth:`~instances.axes.Boundary.imposition`: ``1 - t²`` in coefficient space on a ``"zero"`` axis,
two more terms) and shifted by the output mean (a constant function: the first coefficient along every axis).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Pairs, Structure
from instances import Vector
from instances.axes import Boundary


def standardisation(head: nn.Module, out_channels: int) -> None:
    """Register the output's standardisation on ``head``: the buffers ``out_shift`` (zeros) and ``out_scale`` (ones),
    ``(out_channels,)`` float64, which :meth:`~models.operator.OperatorModel.fit_scales` fits."""
    head.register_buffer("out_shift", torch.zeros(out_channels, dtype=torch.float64))
    head.register_buffer("out_scale", torch.ones(out_channels, dtype=torch.float64))


def impositions(boundaries: Sequence[Boundary], domain: Sequence[Structure]) -> Iterator[tuple[int, Tensor]]:
    """``(i, B_i)`` for each axis whose boundary imposes something: its map ``(n_i + imposed, n_i)``
    (:meth:`~instances.axes.Boundary.imposition`), float64, built by value on the CPU and moved to the default device
    (the meta device when a model is only counted)."""
    target = torch.empty(0).device
    for i, (b, s) in enumerate(zip(boundaries, domain, strict=True)):
        with torch.device("cpu"):  # a fixed map, built by value
            imposed = b.imposition(s.size)
        if imposed is not None:
            yield i, imposed.to(device=target)


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
        standardisation(self, out_channels)
        for i, imposed in impositions(boundaries, self.domain):
            self.register_buffer(f"imposed_{i}", imposed.to(dtype=dtype))

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
