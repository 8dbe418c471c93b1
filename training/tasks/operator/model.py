r"""The operator model: functions sampled on a grid in, a function of the domain out, evaluable anywhere.

Built from the data's shape (:class:`Shape`: one or two axes, each with its layout, extent and boundary, and the
input and output channels) and a :class:`~training.tasks.operator.config.Config`:

* **Structures.** Each axis becomes a series on ``t ∈ [-1, 1]``: a :class:`~instances.Fourier` series on a
  periodic axis, a :class:`~instances.Chebyshev` series on a bounded one. The domain is one of them (1D) or
  their product ``Pairs(X, Y)`` (2D).
* **Reader** (:class:`Reader`). The samples, wherever the layout put them, are read by cross-attention from
  learned queries on the domain's structures: along ``x`` for each grid row, then along ``y`` at each of the
  ``x`` series' points. The samples of an axis form a structure whose measure is the layout's quadrature
  (:func:`operators.layout.line`), so the reading is an integral and any resolution is read by the same weights.
  Tokens are the sample's values and Fourier features of its coordinate; a fixed window (``reader_window``) makes
  each head read near its query.
* **Network.** The Funcformer (:class:`models.Funcformer`) along ``x`` whose features at each ``x`` are
  ``channels`` functions of ``y`` (2D) or ``channels`` numbers (1D); in 2D a second Funcformer along ``y`` on the
  transposed functions, the two outputs summed (the two directions treated alike). Their ``channels`` outputs are
  mixed into the output channels.
* **Output.** A series per output channel: on an axis with boundary ``"zero"``, multiplied by ``1 - t²``
  exactly in coefficient space (two more Chebyshev terms: ``u = 0`` at both ends, imposed); otherwise as it
  is. The prediction is a function: :func:`predict` evaluates it at any coordinates of the domain.

Inputs and outputs are standardised by buffers fitted on the training set (:meth:`OperatorModel.fit_scales`),
which travel in the state dict with the weights. With the Darcy grid preset's settings on generated Darcy data
this is the Darcy grid model (:class:`training.tasks.darcy.model.DarcyModel`, ``--preset grid``) computation for
computation (a test copies one's weights into the other).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Pairs, ScaledSoftmax, Structure
from instances import Chebyshev, Fourier, Vector
from instances.chebyshev import bubble, vandermonde
from instances.fourier import basis_at
from models.funcformer import Funcformer, FuncformerConfig
from operators.layout import Axis
from training import registry

from .config import Activation, Config
from .cost import cost
from .reader import Reader
from .shape import Shape

ACTIVATIONS: dict[Activation, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "gelu": nn.functional.gelu}


class X(Chebyshev):
    """The first axis on a bounded interval."""


class Y(Chebyshev):
    """The second axis on a bounded interval."""


class PX(Fourier):
    """The first axis on a period."""


class PY(Fourier):
    """The second axis on a period."""


def series(axis: Axis, modes: int, first: bool) -> Structure:
    """The structure of ``modes`` coefficients that holds an axis's functions: Fourier (odd size) or Chebyshev."""
    if axis.periodic:
        return (PX if first else PY)(modes + 1 - modes % 2)
    return (X if first else Y)(modes)


def output_size(axis: Axis, s: Structure) -> int:
    """Coefficients of the output series along ``axis``: two more on a ``"zero"`` boundary (the factor ``1 - t²``)."""
    return s.size + 2 if axis.bc == "zero" else s.size


def basis(axis: Axis, size: int, t: Tensor) -> Tensor:
    """The output series' basis along ``axis`` at coordinates ``t``: ``(*t.shape, size)``."""
    return basis_at(t, size) if axis.periodic else vandermonde(t, size)


def frequency(axis: Axis, size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """Each coefficient's frequency scaled to ``[0, 1]``: ``k / (n - 1)`` (Chebyshev), ``⌈i/2⌉ / K`` (Fourier)."""
    i = torch.arange(size, dtype=dtype, device=device)
    if axis.periodic:
        return torch.ceil(i / 2) / max((size - 1) // 2, 1)
    return i / max(size - 1, 1)


def roughness(u: Tensor, axes: Sequence[Axis]) -> Tensor:
    r"""``Σ (k̂⁴ + l̂⁴) u_kl²`` per sample for output coefficients ``u`` ``(batch, C, *m)``, ``k̂`` each coefficient's
    :func:`frequency`: the smoothing penalty (``Config.smooth``). Samples alone do not determine a series of many
    terms between them (Runge, near the ends of a uniform grid)."""
    weight = torch.zeros(u.shape[2:], dtype=u.dtype, device=u.device)
    for i, a in enumerate(axes):
        k = frequency(a, u.shape[2 + i], u.dtype, u.device) ** 4
        weight = weight + k.reshape(*([1] * i), -1, *([1] * (len(axes) - 1 - i)))
    return (weight * u.pow(2)).flatten(1).sum(-1)


class OperatorModel(nn.Module):
    """Input samples ``(batch, *grid, C_in)`` -> output series ``(batch, C_out, *m)`` (coefficients per axis).

    ``grid`` may be any resolution of the layouts the model was built for. :meth:`values` evaluates the series
    on a grid of the same layouts, :func:`predict` anywhere. The buffers ``in_shift``, ``in_scale`` ``(C_in,)``
    and ``out_shift``, ``out_scale`` ``(C_out,)`` standardise inputs and outputs (:meth:`fit_scales`).
    """

    in_shift: Tensor
    in_scale: Tensor
    out_shift: Tensor
    out_scale: Tensor

    def __init__(self, config: Config, shape: Shape) -> None:
        super().__init__()
        self.config, self.shape = config, shape
        self.dtype = getattr(torch, config.dtype)
        dims, n, d = shape.dims, config.modes, Vector(config.width)
        self.domain = tuple(series(a, n, i == 0) for i, a in enumerate(shape.axes))
        self.reader = Reader(config, shape, self.domain, self.dtype)
        cfg = FuncformerConfig(
            heads=config.heads,
            depth=config.depth,
            normalise=ScaledSoftmax(1.0 / math.sqrt(config.width // config.heads)),
            eps=config.eps,
            activation=ACTIVATIONS[config.activation],
            window=config.window,
        )
        c, hidden = Vector(config.channels), Vector(config.hidden)
        x = self.domain[0]
        features: Structure = c if dims == 1 else (self.domain[1] if c.size == 1 else Pairs(self.domain[1], c))
        self.net: Funcformer[Structure, Structure, Vector] = Funcformer(x, features, d, hidden, cfg, dtype=self.dtype)
        self.net_y: Funcformer[Structure, Structure, Vector] | None = None
        if dims == 2:  # the same along y: functions of x at each y, on the transposed input
            across: Structure = x if c.size == 1 else Pairs(x, c)
            self.net_y = Funcformer(self.domain[1], across, d, hidden, cfg, dtype=self.dtype)
        self.collapse: Linear[Vector, Vector] = Linear(d, c, dtype=self.dtype)
        self.combine: Linear[Vector, Vector] | None = (
            None if c.size == 1 == shape.c_out else Linear(c, Vector(shape.c_out), dtype=self.dtype)
        )
        for name, size in (("in_shift", shape.c_in), ("in_scale", shape.c_in)):
            self.register_buffer(name, torch.zeros(size, dtype=torch.float64) + (name == "in_scale"))
        for name, size in (("out_shift", shape.c_out), ("out_scale", shape.c_out)):
            self.register_buffer(name, torch.zeros(size, dtype=torch.float64) + (name == "out_scale"))
        for i, a in enumerate(shape.axes):
            if a.bc == "zero":
                self.register_buffer(f"bubble_{i}", bubble(self.domain[i].size).to(self.dtype))

    @property
    def whole(self) -> Structure:
        """The domain as one structure: the axis's series (1D) or ``Pairs(X, Y)`` (2D)."""
        return self.domain[0] if len(self.domain) == 1 else Pairs(self.domain[0], self.domain[1])

    @property
    def sizes(self) -> tuple[int, ...]:
        """Coefficients per axis of the output series."""
        return tuple(output_size(a, s) for a, s in zip(self.shape.axes, self.domain, strict=True))

    # ---- the data's transforms -------------------------------------------------------------------

    def read(self, inputs: Tensor) -> tuple[Tensor, Tensor | None]:
        """What the reader sees of raw inputs ``(batch, *grid, C_in)``: ``log`` if configured, less the mean ``m``
        over the domain with ``homogeneous``; returns ``(x, m)`` (``m`` ``(batch,)`` or ``None``)."""
        x = inputs.double().log().to(self.dtype) if self.config.log_input else inputs.to(self.dtype)
        if self.config.homogeneous == 0:
            return x, None
        m = self.domain_mean(x[..., 0])
        return x - m.reshape(-1, *([1] * (x.ndim - 1))), m

    def domain_mean(self, f: Tensor) -> Tensor:
        """The mean ``∫ f / |domain|`` of grid values ``f`` ``(batch, *grid)`` by the layouts' quadrature."""
        out = f
        for i, a in enumerate(self.shape.axes):
            w = a.weights(f.shape[1 + i], f.dtype, f.device) / 2
            out = torch.tensordot(out, w, dims=([1], [0])) if i == 0 else (out * w).sum(1)
        return out

    @torch.no_grad()
    def fit_scales(self, inputs: Tensor, outputs: Tensor) -> None:
        """Standardise from training samples: inputs to mean 0 and standard deviation 1 per channel (after ``log``
        and centring), outputs by their root-mean-square per channel -- and by their mean too unless a boundary is
        ``"zero"`` (a shift would break it) or the model is ``homogeneous`` (a shift would break that)."""
        x, m = self.read(inputs)
        y = outputs.double()
        if m is not None:
            y = y * torch.exp(-self.config.homogeneous * m.double()).reshape(-1, *([1] * (y.ndim - 1)))
        flat_x, flat_y = x.double().reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
        self.in_shift.copy_(flat_x.mean(0))
        self.in_scale.copy_(flat_x.std(0).clamp_min(1e-12))
        shift = any(a.bc == "zero" for a in self.shape.axes) or self.config.homogeneous != 0
        mean = torch.zeros_like(self.out_shift) if shift else flat_y.mean(0)
        self.out_shift.copy_(mean)
        self.out_scale.copy_((flat_y - mean).pow(2).mean(0).rsqrt().nan_to_num(1.0, 1.0, 1.0))

    # ---- the network ------------------------------------------------------------------------------

    def forward(self, inputs: Tensor) -> Tensor:
        """Raw inputs ``(batch, *grid, C_in)`` (any resolution of the layouts) -> output coefficients
        ``(batch, C_out, *sizes)``."""
        x, m = self.read(inputs)
        x = (x - self.in_shift.to(self.dtype)) / self.in_scale.to(self.dtype)
        h = self.reader(x)
        n, c = [s.size for s in self.domain], self.config.channels
        b = x.shape[0]
        f = self.collapse(h).tensor  # (b, |domain|, c)
        v = self.along(f.reshape(b, *n, c))  # (b, *n, c)
        if self.combine is not None:
            # on the domain's structure: the bias is a constant function (b T_0), not b at every coefficient
            v = self.combine(Field(v.reshape(b, -1, c), (self.whole, self.combine.inp))).tensor
        v = v.reshape(b, *n, -1).movedim(-1, 1)  # (b, C_out, *n)
        v = v / self.out_scale.to(self.dtype).reshape(-1, *([1] * len(n)))
        for i, a in enumerate(self.shape.axes):
            if a.bc == "zero":
                bubble: Tensor = getattr(self, f"bubble_{i}")
                v = torch.movedim(torch.tensordot(v, bubble, dims=([2 + i], [1])), -1, 2 + i)
        shift = self.out_shift.to(self.dtype)
        if bool(self.out_shift.any()):  # a constant function: the T_0 (or a_0) coefficient
            constant = torch.zeros(v.shape[2:], dtype=v.dtype, device=v.device)
            constant.view(-1)[0] = 1.0  # T_0 (or a_0) along every axis
            v = v + shift.reshape(-1, *([1] * len(n))) * constant
        if m is not None:
            v = v * torch.exp(self.config.homogeneous * m).reshape(-1, *([1] * (v.ndim - 1)))
        return v

    def along(self, f: Tensor) -> Tensor:
        """The Funcformers on ``f`` ``(batch, *n, channels)`` coefficients -> the same shape: along ``x`` (features:
        the channels' functions of ``y``, or the channels in 1D), plus in 2D the one along ``y`` on the transpose."""
        b, c = f.shape[0], f.shape[-1]
        if self.shape.dims == 1:
            return self.net(Field(f, (self.domain[0], self.net.features))).tensor
        n0, n1 = f.shape[1], f.shape[2]
        v = self.net(Field(f.reshape(b, n0, n1 * c), (self.domain[0], self.net.features))).tensor
        v = v.reshape(b, n0, n1, c)
        assert self.net_y is not None
        t = f.transpose(1, 2).reshape(b, n1, n0 * c)  # [b, l, (k, c)]: y the sequence
        w = self.net_y(Field(t, (self.domain[1], self.net_y.features))).tensor.reshape(b, n1, n0, c)
        return v + w.transpose(1, 2)

    # ---- the output as a function ----------------------------------------------------------------

    def values(self, coefficients: Tensor, grid: Sequence[int]) -> Tensor:
        """Output coefficients ``(batch, C_out, *sizes)`` at the samples of a grid of the model's layouts with
        ``grid`` samples per axis: ``(batch, *grid, C_out)``."""
        ts = [a.t(p, coefficients.dtype, coefficients.device) for a, p in zip(self.shape.axes, grid, strict=True)]
        return self.at(coefficients, ts)

    def at(self, coefficients: Tensor, ts: Sequence[Tensor]) -> Tensor:
        """Output coefficients at model coordinates ``ts`` (one 1-D tensor of ``t`` per axis: a tensor grid):
        ``(batch, *(len(t) for t in ts), C_out)``."""
        out = coefficients
        for i, (a, t) in enumerate(zip(self.shape.axes, ts, strict=True)):
            v = basis(a, out.shape[2 + i], t.to(out.dtype))  # (p, m)
            out = torch.movedim(torch.tensordot(out, v, dims=([2 + i], [1])), -1, 2 + i)
        return out.movedim(1, -1)

    def at_points(self, coefficients: Tensor, points: Tensor) -> Tensor:
        """Output coefficients at scattered model coordinates ``points`` ``(M, dims)``: ``(batch, M, C_out)``."""
        phis = [
            basis(a, coefficients.shape[2 + i], points[:, i].to(coefficients.dtype))
            for i, a in enumerate(self.shape.axes)
        ]
        if self.shape.dims == 1:
            return torch.einsum("bck,mk->bmc", coefficients, phis[0])
        return torch.einsum("bckl,mk,ml->bmc", coefficients, phis[0], phis[1])


def _build(blob: dict[str, Any]) -> OperatorModel:
    """The untrained model a checkpoint describes: its config's fields and the data's shape (``data_*``)."""
    fields, data = Shape.split(dict(blob["config"]))
    try:
        shape = Shape.from_dict(data)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"the data's shape it records is not readable ({e})") from None
    return OperatorModel(Config(**fields), shape)


def _config(fields: Mapping[str, Any]) -> Config:
    """The config a checkpoint records (its ``data_*`` fields aside), validated."""
    return Config(**Shape.split(dict(fields))[0])


#: the operator task as :func:`training.load` knows it
SPEC = registry.TaskSpec(
    "operator",
    1,
    OperatorModel,
    _build,
    "examples.operator",
    "an operator model",
    config=_config,
    cost=lambda fields, state: cost(fields),
)
