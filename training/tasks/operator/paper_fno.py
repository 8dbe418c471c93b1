r"""The FNO paper's one-dimensional model, written from its equations: the peer exactly as it was published.

neuraloperator's ``FNO`` (:mod:`.peers`) is the library's current form of the model, with channel MLPs and soft-gated
skips the paper did not have. :class:`PaperFNO1d` is the model of Li et al. 2021 (§4, and §5.1's Burgers setting),
so that the published figure can be checked against the model that produced it:

$$
v_0(x) = P\,(a(x), x), \qquad
v_{t+1}(x) = \sigma\bigl(W_t v_t(x) + (\mathcal{K}_t v_t)(x)\bigr), \qquad
u(x) = Q\, v_L(x),
$$

with $\mathcal{K}_t v = \mathcal{F}^{-1}\bigl(R_t \cdot (\mathcal{F} v)_{k < k_{\max}}\bigr)$: the real Fourier
transform of each channel, its first ``modes`` frequencies ``0..modes-1`` mixed across channels by the complex
``R_t[k]`` (``width x width``), the rest dropped. ``P`` is a linear lift of the input's channels and the point's
coordinate in ``[0, 1]``; ``W_t`` a pointwise linear map; ``σ`` the GELU, after every layer but the last; ``Q`` two
pointwise layers (``width -> 128 -> C_out``, a GELU between). ``R_t`` starts uniform in ``[0, 1/width²)`` in its
real and imaginary parts, the rest at PyTorch's defaults, as the authors' code starts them.

Shapes: ``(batch, C_in, n) -> (batch, C_out, n)`` on ``n`` evenly spaced points, ``modes <= n // 2 + 1`` (the
kept frequencies must exist). It needs no extra package. :class:`PaperFNOTask` trains it as
:class:`~.peers.PlainTask` trains any peer (:class:`~.peers.Plain`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from operators.dataset import Samples
from training.errors import UserError

from .config import Config
from .peers import Plain, PlainTask

#: the paper's projection: ``width -> 128 -> C_out``
PROJECTION = 128


def fourier_layer(v: Tensor, weight: Tensor) -> Tensor:
    r"""$\mathcal{F}^{-1}(R \cdot (\mathcal{F} v)_{k < m})$: ``v`` ``(batch, C_in, n)`` real, ``weight``
    ``(C_in, C_out, m)`` complex -> ``(batch, C_out, n)``; the frequencies ``m..n//2`` are zero in the result."""
    m, n = weight.shape[-1], v.shape[-1]
    if m > n // 2 + 1:
        raise UserError(f"the Fourier layer keeps {m} frequencies, but {n} points have only {n // 2 + 1}")
    f = torch.fft.rfft(v)
    out = torch.zeros(v.shape[0], weight.shape[1], n // 2 + 1, dtype=f.dtype, device=v.device)
    out[..., :m] = torch.einsum("bik,iok->bok", f[..., :m], weight)
    result: Tensor = torch.fft.irfft(out, n=n)
    return result


class PaperFNO1d(nn.Module):
    """The FNO paper's FNO-1D (the module docstring): ``layers`` Fourier layers of ``width`` channels keeping
    ``modes`` frequencies each. The paper's Burgers model is ``PaperFNO1d(1, 1, width=64, modes=16)``."""

    def __init__(self, c_in: int, c_out: int, *, width: int = 64, modes: int = 16, layers: int = 4) -> None:
        super().__init__()
        if min(c_in, c_out, width, modes, layers) < 1:
            raise UserError(
                f"PaperFNO1d(c_in={c_in}, c_out={c_out}, width={width}, modes={modes}, layers={layers}): "
                "every size must be at least 1"
            )
        self.lift = nn.Linear(c_in + 1, width)
        scale = 1 / (width * width)
        self.spectral = nn.ParameterList(
            nn.Parameter(scale * torch.rand(width, width, modes, dtype=torch.cfloat)) for _ in range(layers)
        )
        self.pointwise = nn.ModuleList(nn.Conv1d(width, width, 1) for _ in range(layers))
        self.project = nn.Sequential(nn.Linear(width, PROJECTION), nn.GELU(), nn.Linear(PROJECTION, c_out))

    def forward(self, a: Tensor) -> Tensor:
        b, _, n = a.shape
        x = torch.linspace(0, 1, n, device=a.device, dtype=a.dtype).expand(b, 1, n)
        v = self.lift(torch.cat([a, x], 1).transpose(1, 2)).transpose(1, 2)
        last = len(self.pointwise) - 1
        for t, (weight, w) in enumerate(zip(self.spectral, self.pointwise, strict=True)):
            v = fourier_layer(v, weight) + w(v)
            if t < last:
                v = nn.functional.gelu(v)
        out: Tensor = self.project(v.transpose(1, 2)).transpose(1, 2)
        return out


class PaperFNOTask(PlainTask):
    """One seeded training run of :class:`PaperFNO1d` (``plain.width`` channels, default 64; ``plain.modes``
    frequencies kept, in the paper's count) the way :class:`~.peers.Plain` says, on a one-axis grid."""

    def __init__(self, config: Config, plain: Plain, train: Samples, device: torch.device | str = "cpu") -> None:
        if len(train.axes) != 1:
            raise UserError(f"the FNO paper's FNO-1D reads one axis; these samples have {len(train.axes)}")
        (c_in, c_out), (n,) = train.channels, train.grid
        if plain.modes > n // 2 + 1:
            raise UserError(f"modes={plain.modes}, but {n} points have only {n // 2 + 1} frequencies: lower modes")
        torch.manual_seed(config.seed)
        model = PaperFNO1d(c_in, c_out, width=plain.width or 64, modes=plain.modes)
        super().__init__(config, plain, train, model, device)
