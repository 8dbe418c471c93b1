r"""A second peer: a U-Net on the grid, so that the operator model is not measured against one peer alone.

:class:`UNet` is the convolutional encoder--decoder the operator-learning literature compares with (PDEArena's and
PDEBench's U-Net baselines, the FNO paper's): at each of ``levels`` resolutions a residual block of two convolutions
of kernel 3, each after a group norm and a GELU, the grid halved by averaging on the way down and the channels
doubled; on the way up the coarser features are interpolated to the finer grid, joined to that level's (the skip)
and convolved back. The inputs carry the grid's coordinates as extra channels, as the FNO's do. A grid where every
axis is periodic is padded circularly, any other with zeros. Shapes: ``(batch, C_in, *grid) -> (batch, C_out,
*grid)`` on any grid of one or two axes (an odd size is rounded up when halved and cropped back).

:class:`UNetTask` trains it as :class:`~.peers.PlainFNOTask` trains the FNO (:class:`~.peers.Plain`: the relative
L² loss, AdamW on a cosine schedule, raw or normalised data, the operator model's batches), its width from the
parameter budget (:func:`unet_width`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor, nn

from operators.dataset import Samples
from operators.layout import Axis

from .config import Config
from .fno import count
from .peers import Plain, PlainTask

Padding = Literal["circular", "zeros"]
#: resolutions the U-Net works at (the grid, and halved ``LEVELS - 1`` times)
LEVELS = 3


class _Block(nn.Module):
    """Two kernel-3 convolutions, each after a group norm and a GELU, added to the input (through a 1x1 convolution
    where the channels change). The residual carries the field's scale past the norms, which take it out of what
    they pass on: without it the network cannot tell a field from twice that field."""

    def __init__(self, dims: int, c_in: int, c_out: int, padding: Padding) -> None:
        super().__init__()
        conv = nn.Conv1d if dims == 1 else nn.Conv2d
        self.body = nn.Sequential(
            nn.GroupNorm(1, c_in),
            nn.GELU(),
            conv(c_in, c_out, 3, padding=1, padding_mode=padding),
            nn.GroupNorm(1, c_out),
            nn.GELU(),
            conv(c_out, c_out, 3, padding=1, padding_mode=padding),
        )
        self.skip: nn.Module = conv(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.skip(x) + self.body(x)
        return out


class UNet(nn.Module):
    """A U-Net of ``width`` channels at the finest of ``levels`` resolutions (doubled at each coarser one), on a grid
    of ``dims`` axes, reading ``c_in`` channels (and the grid's coordinates) and giving ``c_out``."""

    def __init__(self, dims: int, c_in: int, c_out: int, width: int, *, periodic: bool, levels: int = LEVELS) -> None:
        super().__init__()
        if dims not in (1, 2) or levels < 1 or width < 1:
            raise ValueError(f"a U-Net of 1 or 2 axes, levels >= 1 and width >= 1; got {dims}, {levels}, {width}")
        self.dims = dims
        padding: Padding = "circular" if periodic else "zeros"
        widths = [width * 2**i for i in range(levels)]
        conv = nn.Conv1d if dims == 1 else nn.Conv2d
        self.down = nn.ModuleList(
            [_Block(dims, c_in + dims if i == 0 else widths[i - 1], w, padding) for i, w in enumerate(widths)]
        )
        self.up = nn.ModuleList(
            [_Block(dims, widths[i + 1] + widths[i], widths[i], padding) for i in range(levels - 1)]
        )
        self.project = conv(width, c_out, 1)

    def forward(self, x: Tensor) -> Tensor:
        grid = x.shape[2:]
        coords = torch.meshgrid(*(torch.linspace(0, 1, n, dtype=x.dtype, device=x.device) for n in grid), indexing="ij")
        h = torch.cat([x, *(c.expand(x.shape[0], 1, *grid) for c in coords)], 1)
        pool = nn.functional.avg_pool1d if self.dims == 1 else nn.functional.avg_pool2d
        skips = []
        for i, block in enumerate(self.down):
            h = block(h if i == 0 else pool(h, 2, ceil_mode=True))
            skips.append(h)
        mode = "linear" if self.dims == 1 else "bilinear"
        for i in reversed(range(len(self.up))):
            fine = skips[i]
            h = nn.functional.interpolate(h, fine.shape[2:], mode=mode, align_corners=False)
            h = self.up[i](torch.cat([h, fine], 1))
        out: Tensor = self.project(h)
        return out


def unet_width(params: int, dims: int, c_in: int, c_out: int, periodic: bool) -> int:
    """The width (1..256) whose U-Net's parameter count is nearest ``params`` (bisection; the count grows with the
    width)."""

    def size(w: int) -> int:
        return count(UNet(dims, c_in, c_out, w, periodic=periodic))

    lo, hi = 1, 256
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= params else (lo, mid)
    return min((lo, hi), key=lambda w: abs(size(w) - params))


class UNetTask(PlainTask):
    """One seeded training run of the U-Net (:class:`UNet`) the ordinary way (:class:`~.peers.Plain`; its ``width``,
    if given, is the U-Net's, else from the parameter budget ``params``)."""

    def __init__(
        self, config: Config, plain: Plain, train: Samples, params: int, device: torch.device | str = "cpu"
    ) -> None:
        dims, (c_in, c_out) = len(train.axes), train.channels
        periodic = _periodic(train.axes)
        self.width = plain.width if plain.width is not None else unet_width(params, dims, c_in, c_out, periodic)
        torch.manual_seed(config.seed)
        super().__init__(config, plain, train, UNet(dims, c_in, c_out, self.width, periodic=periodic), device)


def _periodic(axes: Sequence[Axis]) -> bool:
    return all(a.boundary.periodic for a in axes)
