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
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from applicative import Field, LayerNorm, Linear, MultiHeadAttention, Pairs, ScaledSoftmax, Structure, add
from instances import Chebyshev, Fourier, Vector
from instances.chebyshev import bubble, vandermonde
from instances.fourier import basis_at
from models.funcformer import Funcformer, FuncformerConfig, window_keys, window_queries, window_slopes
from operators.layout import Axis, line
from training import registry
from training.errors import InputError

from .config import Activation, Config
from .cost import cost

ACTIVATIONS: dict[Activation, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "gelu": nn.functional.gelu}


@dataclass(frozen=True)
class Shape:
    """What a model is built for: the grid's axes and the channels in and out (plain data in a checkpoint)."""

    axes: tuple[Axis, ...]
    c_in: int
    c_out: int

    @property
    def dims(self) -> int:
        return len(self.axes)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (a checkpoint's config holds no nesting): ``data_c_in``, ``data_c_out``, and per axis
        ``data_x_layout``, ``data_x_lo``, ``data_x_hi``, ``data_x_boundary`` (then ``data_y_...``)."""
        out: dict[str, Any] = {"data_c_in": self.c_in, "data_c_out": self.c_out}
        for name, a in zip("xy", self.axes, strict=False):
            out |= {f"data_{name}_layout": a.layout, f"data_{name}_lo": a.lo, f"data_{name}_hi": a.hi}
            out[f"data_{name}_boundary"] = a.bc
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Shape:
        """The inverse of :meth:`to_dict` (a ``ValueError`` naming what is wrong: the caller names the file)."""
        c_in, c_out = d.get("data_c_in"), d.get("data_c_out")
        for name, c in (("data_c_in", c_in), ("data_c_out", c_out)):
            if type(c) is not int or not 1 <= c <= 1024:
                raise ValueError(f"{name}: an int in 1..1024, got {c!r}")
        axes = []
        for name in "xy":
            if f"data_{name}_layout" not in d:
                break
            lo, hi = d.get(f"data_{name}_lo"), d.get(f"data_{name}_hi")
            if not isinstance(lo, int | float) or not isinstance(hi, int | float):
                raise ValueError(f"data_{name}_lo, data_{name}_hi: numbers, got {lo!r}, {hi!r}")
            axes.append(Axis(d[f"data_{name}_layout"], float(lo), float(hi), d.get(f"data_{name}_boundary")))
        if not axes:
            raise ValueError("no axis recorded (data_x_layout)")
        assert isinstance(c_in, int) and isinstance(c_out, int)
        return cls(tuple(axes), c_in, c_out)

    @staticmethod
    def split(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A checkpoint's config -> (the config's fields, the data's shape fields)."""
        data = {k: v for k, v in record.items() if k.startswith("data_")}
        return {k: v for k, v in record.items() if k not in data}, data


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


def tokens(values: Tensor, t: Tensor, frequencies: int) -> Tensor:
    """Tokens along the second-last axis of ``values`` ``(..., P, C)``: ``(..., P, C + 2K)``, the values and
    ``cos πkt, sin πkt`` (``k = 1..K``) of their coordinates ``t`` ``(P,)``."""
    k = torch.arange(1, frequencies + 1, dtype=t.dtype, device=t.device)
    f = torch.cat([torch.cos(math.pi * t[:, None] * k), torch.sin(math.pi * t[:, None] * k)], -1).to(values.dtype)
    return torch.cat([values, f.expand(*values.shape[:-1], -1)], -1)


class Reader(nn.Module):
    """Samples ``(batch, *grid, C)`` in a layout -> ``width`` feature functions on the domain (coefficients).

    One cross-attention per axis through :class:`~applicative.MultiHeadAttention` (a separable reading:
    ``O(n P² + n² P)`` scores in 2D): along ``x`` for each grid row, the queries learned series on ``X`` and the
    keys and values the row's tokens on :func:`operators.layout.line` (its quadrature the measure); in 2D then
    along ``y`` at each point of ``X``, queries on ``Y`` reading the first readings plus Fourier features of the
    samples' ``y``. Each is one fused SDPA call with bias ``log w``.
    """

    window_x: Tensor | None
    window_y: Tensor | None

    def __init__(self, config: Config, shape: Shape, domain: Sequence[Structure], dtype: torch.dtype) -> None:
        super().__init__()
        self.shape, self.domain, self.frequencies = shape, tuple(domain), config.frequencies
        channels, heads = config.reader_width, config.reader_heads
        d, r = Vector(config.width), Vector(channels)
        f = Vector(2 * config.frequencies)
        self.embed: Linear[Vector, Vector] = Linear(Vector(shape.c_in + f.size), r, dtype=dtype)
        self.position: Linear[Vector, Vector] | None = Linear(f, r, dtype=dtype) if shape.dims == 2 else None
        self.norm_x: LayerNorm[Vector] = LayerNorm(r, eps=config.eps, dtype=dtype)
        self.norm_y: LayerNorm[Vector] | None = LayerNorm(r, eps=config.eps, dtype=dtype) if shape.dims == 2 else None
        head = Vector(r.size // heads)
        scale = 1 / math.sqrt(head.size)
        self.attn_x = MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype)
        self.attn_y = (
            MultiHeadAttention(r, head, head, heads, ScaledSoftmax(scale), dtype=dtype) if shape.dims == 2 else None
        )
        self.query_x = nn.Parameter(0.1 * torch.randn(self.domain[0].size, r.size, dtype=dtype))
        self.query_y = (
            nn.Parameter(0.1 * torch.randn(self.domain[1].size, r.size, dtype=dtype)) if shape.dims == 2 else None
        )
        self.lift: Linear[Vector, Vector] = Linear(r, d, dtype=dtype)
        # the window's query sides are fixed series (from the config, not learned); the keys depend on the grid
        betas = torch.tensor(window_slopes(config.reader_window, heads), dtype=torch.float64) / scale
        for i, name in enumerate(("window_x", "window_y")):
            q = window_queries(betas, self.domain[i]).to(dtype) if len(betas) and i < shape.dims else None
            self.register_buffer(name, q, persistent=False)

    def _window(self, i: int, query: Tensor | None, p: int, like: Tensor) -> tuple[Tensor, Tensor] | None:
        if query is None:
            return None
        return query, window_keys(line(self.shape.axes[i], p), like.dtype, like.device)

    def forward(self, x: Tensor) -> Field[Structure, Vector]:
        """``x`` ``(batch, *grid, C)`` (standardised) -> ``(batch, |domain|, width)`` coefficients on the domain."""
        b, grid = x.shape[0], x.shape[1:-1]
        axes, r = self.shape.axes, self.lift.inp
        nx = self.domain[0].size
        px = grid[0]
        t_x = axes[0].t(px, x.dtype, x.device)
        if self.shape.dims == 1:
            memory = self.norm_x(
                self.embed(Field(tokens(x, t_x, self.frequencies), (line(axes[0], px), self.embed.inp)))
            )
            q = Field(self.query_x.expand(b, nx, r.size), (self.domain[0], r))
            return self.lift(add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))))
        assert self.attn_y is not None and self.norm_y is not None and self.position is not None
        assert self.query_y is not None
        py, ny = grid[1], self.domain[1].size
        # 1. along x, each row y_j a batch: tokens (b, P_y, P_x, C + 2K)
        rows = tokens(x.transpose(1, 2), t_x, self.frequencies)
        memory = self.norm_x(self.embed(Field(rows, (line(axes[0], px), self.embed.inp))))
        q = Field(self.query_x.expand(b, py, nx, r.size), (self.domain[0], r))
        read = add(q, self.attn_x(q, memory, position=self._window(0, self.window_x, px, x))).tensor  # (b, P_y, n_x, R)
        # 2. along y, at each point x_k of X: keys (b, n_x, P_y, R)
        h = self.domain[0].positions(read, -2).transpose(-2, -3)
        t_y = axes[1].t(py, h.dtype, h.device)
        k = torch.arange(1, self.frequencies + 1, dtype=h.dtype, device=h.device)
        fy = torch.cat([torch.cos(math.pi * t_y[:, None] * k), torch.sin(math.pi * t_y[:, None] * k)], -1)
        ly = line(axes[1], py)
        memory = self.norm_y(add(Field(h, (ly, r)), self.position(Field(fy, (ly, self.position.inp)))))
        q = Field(self.query_y.expand(b, nx, ny, r.size), (self.domain[1], r))
        g = add(q, self.attn_y(q, memory, position=self._window(1, self.window_y, py, x))).tensor  # (b, n_x, n_y, R)
        c = self.domain[0].stored(g, -3).flatten(-3, -2)  # (b, n_x n_y, R): coefficients on Pairs(X, Y)
        return self.lift(Field(c, (Pairs(self.domain[0], self.domain[1]), r)))


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


def _check_inputs(model: OperatorModel, inputs: object) -> Tensor:
    """``inputs`` as ``(batch, *grid, C_in)``: a float tensor of the model's grid dimensions, finite, positive where
    a log is taken, each axis sampled often enough for its layout (an :class:`InputError` naming what is wrong)."""
    if not isinstance(inputs, Tensor):
        raise InputError(f"predict: inputs must be a tensor (batch, *grid, channels), got {type(inputs).__name__}")
    shape, dims = model.shape, model.shape.dims
    x = inputs[..., None] if inputs.ndim == dims + 1 and shape.c_in == 1 else inputs
    if x.ndim != dims + 2 or x.shape[-1] != shape.c_in:
        want = f"(batch, {', '.join('xy'[:dims])}, {shape.c_in})"
        raise InputError(f"predict: inputs of shape {tuple(inputs.shape)}, expected {want}")
    if not x.dtype.is_floating_point:
        raise InputError(f"predict: inputs of dtype {x.dtype}, expected floats; convert with inputs.double()")
    if x.shape[0] == 0:
        raise InputError("predict: an empty batch of inputs; pass at least one sample")
    for i, a in enumerate(shape.axes):
        if x.shape[1 + i] < max(a.smallest(), 2):
            raise InputError(
                f"predict: axis {'xy'[i]} has {x.shape[1 + i]} sample(s); the {a.layout} layout needs more"
            )
    if not bool(torch.isfinite(x).all()):
        raise InputError("predict: inputs hold NaN or infinite values")
    if model.config.log_input and bool((x <= 0).any()):
        raise InputError("predict: the model reads log inputs, and some inputs are <= 0")
    return x


@torch.no_grad()
def predict(
    model: OperatorModel,
    inputs: Tensor,
    at: Sequence[Tensor] | Tensor | None = None,
    *,
    chunk: int = 256,
) -> Tensor:
    """The predicted output functions, evaluated where asked; float64 on the CPU.

    Args:
        model: a trained :class:`OperatorModel` (``training.load(run_dir)``).
        inputs: ``(batch, *grid, C_in)`` samples in the layouts the model was trained on, at any resolution
            (``(batch, *grid)`` for one channel).
        at: ``None``: at the inputs' own samples, ``(batch, *grid, C_out)``; one 1-D tensor of coordinates (the
            data's units) per axis: on their tensor grid, ``(batch, len(x)[, len(y)], C_out)``; a tensor
            ``(M, dims)`` of points: ``(batch, M, C_out)``.
        chunk: samples per forward pass (``>= 1``).

    Raises:
        InputError: inputs of the wrong shape, dtype or values; coordinates outside the domain; ``chunk < 1``.
    """
    if type(chunk) is not int or chunk < 1:
        raise InputError(f"predict: chunk must be an int >= 1, got {chunk!r}")
    x = _check_inputs(model, inputs)
    device = next(iter(model.parameters())).device
    axes, dims = model.shape.axes, model.shape.dims
    where: Callable[[Tensor], Tensor]
    if at is None:
        grid = tuple(x.shape[1:-1])
        where = lambda c: model.values(c, grid)  # noqa: E731
    elif isinstance(at, Tensor):
        if at.ndim != 2 or at.shape[1] != dims:
            raise InputError(f"predict: at= points of shape {tuple(at.shape)}, expected (M, {dims})")
        pts = torch.stack([_model_t(axes[i], at[:, i], f"at[:, {i}]") for i in range(dims)], -1)
        where = lambda c: model.at_points(c, pts.to(c))  # noqa: E731
    else:
        coords = list(at)
        if len(coords) != dims or not all(isinstance(c, Tensor) and c.ndim == 1 for c in coords):
            raise InputError(f"predict: at= needs {dims} one-dimensional tensor(s) of coordinates, one per axis")
        ts = [_model_t(axes[i], coords[i], f"at[{i}]") for i in range(dims)]
        where = lambda c: model.at(c, [t.to(c) for t in ts])  # noqa: E731
    outs = [where(model(x[i : i + chunk].to(device)).double()).cpu() for i in range(0, len(x), chunk)]
    return torch.cat(outs)


def _model_t(axis: Axis, x: Tensor, name: str) -> Tensor:
    """Coordinates in the data's units -> the model's ``t``; outside a bounded axis's extent is an error."""
    if not x.dtype.is_floating_point or not bool(torch.isfinite(x).all()):
        raise InputError(f"predict: {name} must hold finite float coordinates")
    x = x.double()
    if not axis.periodic and bool(((x < axis.lo - 1e-12) | (x > axis.hi + 1e-12)).any()):
        raise InputError(
            f"predict: {name} has coordinates outside the axis's extent [{axis.lo:g}, {axis.hi:g}]; the model "
            "knows the operator there only"
        )
    return axis.to_t(x)


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
