r"""The operator model: functions sampled on a grid in, functions of the domain out, evaluable anywhere.

Built from the grid's axes (:class:`~instances.axes.Axis`: one or two, each with its layout, extent and boundary),
the channels in and out, and its sizes:

* **Structures.** Each axis's functions are a series on ``t ∈ [-1, 1]`` that its boundary chooses
  (:meth:`~instances.axes.Boundary.series`): a :class:`~instances.Fourier` series on a periodic axis, a
  :class:`~instances.Chebyshev` series on a bounded one. The domain is one of them (1D) or their product (2D).
* **Reader** (:class:`~models.operator.GridReader`). The samples, wherever the layout put them, are read by
  cross-attention from learned queries on the domain's series, one axis at a time; the samples' measure is the
  layout's quadrature, so any resolution is read by the same weights. On a grid of periodic axes
  ``reading.kind = "fourier"`` reads the samples' exact discrete Fourier coefficients instead
  (:class:`~models.operator.FourierReader`).
* **Network** (:class:`~models.operator.AlongAxes`). The reader's ``width`` channels are collapsed to ``channels``
  functions, and a Funcformer along each axis maps them (in 2D the two outputs summed; with ``axial`` each axis's
  Funcformer at every point of the other, composed). With ``convolution`` each
  layer along a periodic axis adds a learned circular convolution of its input (per channel, frequency by
  frequency: :attr:`models.FuncformerConfig.convolution`); with ``plane`` on two periodic axes each function is
  also convolved with a learned kernel of the plane around the Funcformers.
* **Grid path** (:class:`~models.operator.GridPath`, ``grid_path = w > 0``; off by default). The network's functions
  evaluated at the input's grid samples and the standardised samples themselves pass through a pointwise MLP of
  width ``w`` there (a nonlinearity at the grid's resolution, as an FNO's pointwise path), and the result, fitted
  back onto the domain's series by the layouts' quadrature, is added to the functions before the head.
* **Output** (:class:`~models.operator.SeriesHead`). The ``channels`` functions are mixed into the output channels (a
  constant function's bias, ``b T_0``); each axis's boundary imposes what it imposes (``"zero"``: the factor ``1 - t²``,
  exactly in coefficient space, two more terms). The prediction is a function: :meth:`OperatorModel.at` evaluates it
  anywhere. With ``decoder = w > 0`` (:class:`~models.operator.PointDecoder`) the output at each point is instead an
  MLP of width ``w`` of the ``channels`` functions' values there (the FNO's projection, at any point): no longer a
  series, so not bounded by the series' length (a front steeper than ``modes`` terms allow); :meth:`OperatorModel.at`
  evaluates it anywhere as before, and the forward pass returns the series it decodes.

Inputs and outputs are standardised by buffers fitted on training samples (:meth:`OperatorModel.fit_scales`), which
travel in the state dict with the weights (the output's in the head, :class:`~models.operator.SeriesHead`). Two
options build in what a problem's physics says, for a preset to turn on: ``log_input`` (read ``log`` of positive
inputs spanning scales, such as a conductivity) and ``homogeneous`` (``u(c a) = c^d u(a)`` for ``c > 0`` with degree
``d``: the reader sees ``log a`` less its mean ``m`` over the domain, and the output is multiplied by ``e^{d m}``;
Darcy flow: ``d = -1``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import Tensor, nn

from applicative import InputError, Linear, ScaledSoftmax
from instances import Vector
from instances.axes import Axis

from ..funcformer import FuncformerConfig
from ._along import AlongAxes
from ._decoder import PointDecoder, decoder_width
from ._fourier_reader import FourierReader
from ._grid_path import GridPath
from ._head import SeriesHead
from ._reader import GridReader, Reading
from ._series import at_grid, at_points, domain_mean

#: the grid reader's default sizes
READING = Reading()


class OperatorModel(nn.Module):
    """Input samples ``(batch, *grid, in_channels)`` -> output series ``(batch, out_channels, *sizes)``.

    ``grid`` may be any resolution of the axes' layouts. :meth:`values` evaluates the series on a grid of the same
    layouts, :meth:`at` and :meth:`at_points` anywhere (with a ``decoder``, the forward pass returns the ``channels``
    functions' series ``(batch, channels, *n)``, which these decode). The buffers ``in_shift``, ``in_scale``
    ``(in_channels,)`` (and the head's ``out_shift``, ``out_scale``) standardise inputs and outputs
    (:meth:`fit_scales`). Its parts, each replaceable: :attr:`reader`, :attr:`along`, :attr:`collapse`,
    :attr:`grid` (``None`` when off), :attr:`head`.

    Args:
        axes: one :class:`~instances.axes.Axis` per grid axis (one or two).
        in_channels, out_channels: the functions in and out.
        modes: coefficients per axis of the network's series (:meth:`~instances.axes.Boundary.length`: a periodic
            axis takes the odd number ``modes + 1 - modes % 2``); a ``"zero"`` boundary adds two.
        width, hidden: the Funcformers' model channels and MLP width.
        heads, depth: the Funcformers' attention heads (dividing ``width``) and encoder layers. The sizes' defaults
            are the operator config's (:class:`training.tasks.operator.Config`: six layers of 28, MLPs of 84).
        attend_every: layers ``0, k, 2k, …`` attend (``k = attend_every``), the others are their MLP and
            convolution alone (:attr:`models.FuncformerConfig.attend_every`); ``1``, the default: every layer.
        channels: the functions the reader hands each Funcformer per point of its sequence.
        activation: the MLPs' nonlinearity.
        window: the Funcformers' locality along their sequence (``0``: none; :attr:`models.FuncformerConfig.window`).
        convolution: a learned circular convolution in each Funcformer layer along each periodic axis
            (:attr:`models.FuncformerConfig.convolution`; bounded axes have none). On by default, as in the operator
            config.
        axial: on a grid of two axes, each axis's Funcformer at every point of the other axis, the two composed
            (:class:`~models.operator.AlongAxes`' axial form: a state per point of the plane) instead of the factored
            form (a state per point of one axis for all of the other's functions). Two axes only.
        interleaved: the axial form's layers alternate between the axes, the state of the plane carried whole
            between them (``False``: each axis's Funcformer whole, composed, as the axial form was built before).
        plane: on a grid of two periodic axes, a learned convolution of the plane per function before, between
            (the composed axial form only) and after the Funcformers (:class:`~models.operator.AlongAxes`: a
            multiplier that need not factor into one per axis); elsewhere nothing. Off by default, as in the operator
            config.
        positional: each Funcformer adds a learned function of its axis' coordinate after its embedding
            (:attr:`models.FuncformerConfig.positional`). Off, with the Fourier reader on periodic axes, no weight
            depends on where it acts, as the physics of Burgers or KdV does not; a map that depends on where it acts
            (a forcing fixed in space) needs it on.
        norms: the layer norms in each Funcformer layer (:attr:`models.FuncformerConfig.norms`); off (the default), each
            residual block is ``h + f(h)``, as in an FNO's layers (the grid reader keeps its own).
        eps: layer-norm epsilon.
        reading: the grid reader's sizes (:class:`~models.operator.Reading`).
        log_input: read ``log`` of the inputs (all must be positive).
        homogeneous: the degree ``d`` of ``u(c a) = c^d u(a)`` built in (``0``: off; needs ``log_input``).
        grid_path: the width ``w`` of the pointwise path at the input grid's samples (:class:`GridPath`; ``0``:
            off, no parameters, the model as without it). On, every input axis needs at least as many samples as
            the domain's series has terms.
        decoder: the width ``w`` of the pointwise decoder's MLP (:class:`PointDecoder`) in place of the series head
            (``0``: the :class:`SeriesHead`; ``-1``, the default as in the operator config: chosen from the axes by
            :func:`~models.operator.decoder_width`, ``64`` on periodic axes and ``0`` on bounded ones or with
            ``homogeneous``). A width ``> 0`` not with ``homogeneous`` (its scaling would have to pass through the
            MLP).
        dtype: the parameters' float type.

    Raises:
        InputError: an argument out of its range or two that contradict each other.
    """

    in_shift: Tensor
    in_scale: Tensor

    def __init__(
        self,
        axes: Sequence[Axis],
        in_channels: int,
        out_channels: int,
        *,
        modes: int = 20,
        width: int = 28,
        hidden: int = 84,
        heads: int = 4,
        depth: int = 6,
        attend_every: int = 1,
        channels: int = 4,
        activation: Callable[[Tensor], Tensor] = nn.functional.gelu,
        window: float = 40.0,
        convolution: bool = True,
        axial: bool = False,
        interleaved: bool = True,
        plane: bool = False,
        positional: bool = True,
        norms: bool = False,
        eps: float = 1e-5,
        reading: Reading = READING,
        log_input: bool = False,
        homogeneous: float = 0.0,
        grid_path: int = 0,
        decoder: int = -1,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        _check(axes, in_channels, out_channels, modes, width, heads, channels, window, reading, log_input, homogeneous)
        _check_sizes({"attend_every": attend_every})
        for name, w, least in (("grid_path", grid_path, 0), ("decoder", decoder, -1)):
            if type(w) is not int or w < least:
                auto = ", -1: chosen from the axes" if least < 0 else ""
                raise InputError(f"OperatorModel: {name} must be an int >= {least} (0: off{auto}), got {w!r:.40}")
        decoder = decoder_width(decoder, [a.boundary for a in axes], homogeneous)
        if axial and len(axes) != 2:
            raise InputError(
                f"OperatorModel: axial=True on a grid of {len(axes)} axis: the axial form runs each axis's Funcformer "
                "at every point of the other; use axial=False on a 1D grid"
            )
        if decoder > 0 and homogeneous != 0:
            raise InputError(
                f"OperatorModel: decoder={decoder} with homogeneous={homogeneous}: the scaling u(c a) = c^d u(a) does "
                "not pass through the decoder's MLP; use decoder=0 for a homogeneous model"
            )
        self.axes, self.in_channels, self.out_channels = tuple(axes), in_channels, out_channels
        self.modes, self.channels, self.log_input, self.homogeneous = modes, channels, log_input, homogeneous
        self.dtype = dtype
        self.domain = tuple(a.boundary.series(modes, i == 0) for i, a in enumerate(self.axes))
        self.reader: GridReader | FourierReader = (
            FourierReader(self.domain, in_channels, width, dtype=dtype)
            if reading.kind == "fourier"
            else GridReader(self.axes, self.domain, in_channels, width, reading, eps=eps, dtype=dtype)
        )
        config = FuncformerConfig(
            heads=heads,
            depth=depth,
            normalise=ScaledSoftmax(1.0 / math.sqrt(width // heads)),
            eps=eps,
            activation=activation,
            window=window,
            convolution=convolution,
            positional=positional,
            norms=norms,
            attend_every=attend_every,
        )
        self.along = AlongAxes(
            self.domain, channels, width, hidden, config, axial=axial, interleaved=interleaved, plane=plane, dtype=dtype
        )
        self.collapse: Linear[Vector, Vector] = Linear(Vector(width), Vector(channels), dtype=dtype)
        boundaries = [a.boundary for a in self.axes]
        self.head: SeriesHead | PointDecoder = (
            PointDecoder(self.domain, boundaries, channels, out_channels, decoder, activation, dtype=dtype)
            if decoder > 0
            else SeriesHead(self.domain, boundaries, channels, out_channels, dtype=dtype)
        )
        self.register_buffer("in_shift", torch.zeros(in_channels, dtype=torch.float64))
        self.register_buffer("in_scale", torch.ones(in_channels, dtype=torch.float64))
        # built last, so the other parts draw the same initial weights with the path on or off
        self.grid: GridPath | None = None
        if grid_path > 0:
            n = [s.size for s in self.domain]
            self.grid = GridPath(self.axes, n, channels, in_channels, grid_path, activation, dtype=dtype)

    @property
    def dims(self) -> int:
        """The grid's dimensions (one or two axes)."""
        return len(self.axes)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Coefficients per axis of the forward pass's series: the output's, or with a decoder the series it
        decodes."""
        if isinstance(self.head, PointDecoder):
            return tuple(s.size for s in self.domain)
        return tuple(a.boundary.coefficients(self.modes) for a in self.axes)

    @property
    def shifts_outputs(self) -> bool:
        """Whether the outputs are standardised about their mean: not where a boundary vanishes (a shift would break
        it) nor for a ``homogeneous`` model (a shift would break that)."""
        return not any(a.boundary.vanishes for a in self.axes) and self.homogeneous == 0

    # ---- the data's transforms -------------------------------------------------------------------

    def check(self, inputs: object, who: str = "OperatorModel") -> Tensor:
        """``inputs`` as ``(batch, *grid, in_channels)`` (a grid of one channel may drop its channel axis), or an
        :class:`~applicative.InputError` naming ``who`` and what is wrong: not a float tensor, another number of axes
        or channels, an empty batch, an axis sampled too sparsely for its layout."""
        if not isinstance(inputs, Tensor):
            raise InputError(f"{who}: inputs must be a tensor (batch, *grid, channels), got {type(inputs).__name__}")
        dims, c = self.dims, self.in_channels
        x = inputs[..., None] if inputs.ndim == dims + 1 and c == 1 else inputs
        if x.ndim != dims + 2 or x.shape[-1] != c:
            want = f"(batch, {', '.join('xy'[:dims])}, {c})"
            raise InputError(f"{who}: inputs of shape {tuple(inputs.shape)}, expected {want}")
        if not x.dtype.is_floating_point:
            raise InputError(f"{who}: inputs of dtype {x.dtype}, expected floats; convert with inputs.double()")
        if x.shape[0] == 0:
            raise InputError(f"{who}: an empty batch of inputs; pass at least one sample")
        for i, a in enumerate(self.axes):
            if x.shape[1 + i] < max(a.smallest(), 2):
                p, kind = x.shape[1 + i], a.layout.name
                raise InputError(f"{who}: axis {'xy'[i]} has {p} sample(s); the {kind} layout needs more")
            n = self.domain[i].size
            if isinstance(self.reader, FourierReader) and x.shape[1 + i] < n:
                raise InputError(
                    f"{who}: axis {'xy'[i]} has {x.shape[1 + i]} samples, fewer than the Fourier reader's {n} "
                    "coefficients; give finer data or fewer modes"
                )
            if self.grid is not None and x.shape[1 + i] < n:
                raise InputError(
                    f"{who}: axis {'xy'[i]} has {x.shape[1 + i]} samples, fewer than the {n} terms the grid path fits "
                    "to them; give finer data, fewer modes, or grid_path=0"
                )
        return x

    def read(self, inputs: Tensor) -> tuple[Tensor, Tensor | None]:
        """What the reader sees of raw inputs ``(batch, *grid, in_channels)``: ``log`` with ``log_input``, less the
        mean ``m`` over the domain with ``homogeneous``; returns ``(x, m)`` (``m`` ``(batch,)`` or ``None``)."""
        x = inputs.double().log().to(self.dtype) if self.log_input else inputs.to(self.dtype)
        if self.homogeneous == 0:
            return x, None
        m = domain_mean(x[..., 0], self.axes)
        return x - m.reshape(-1, *([1] * (x.ndim - 1))), m

    @torch.no_grad()
    def fit_scales(self, inputs: Tensor, outputs: Tensor) -> None:
        """Standardise from training samples: inputs to mean 0 and standard deviation 1 per channel (after ``log``
        and centring), outputs by their root-mean-square per channel -- and by their mean too unless a boundary
        vanishes (a shift would break it) or the model is ``homogeneous`` (a shift would break that)."""
        x, m = self.read(inputs)
        y = outputs.double()
        if m is not None:
            y = y * torch.exp(-self.homogeneous * m.double()).reshape(-1, *([1] * (y.ndim - 1)))
        flat_x, flat_y = x.double().reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
        self.in_shift.copy_(flat_x.mean(0))
        self.in_scale.copy_(flat_x.std(0).clamp_min(1e-12))
        mean = flat_y.mean(0) if self.shifts_outputs else torch.zeros_like(self.head.out_shift)
        self.head.out_shift.copy_(mean)
        self.head.out_scale.copy_((flat_y - mean).pow(2).mean(0).rsqrt().nan_to_num(1.0, 1.0, 1.0))

    # ---- the network ------------------------------------------------------------------------------

    def forward(self, inputs: Tensor) -> Tensor:
        """Raw inputs ``(batch, *grid, in_channels)`` (any resolution of the layouts) -> output coefficients
        ``(batch, out_channels, *sizes)`` (with a decoder: the series it decodes, ``(batch, channels, *sizes)``)."""
        x, m = self.read(self.check(inputs))
        x = (x - self.in_shift.to(self.dtype)) / self.in_scale.to(self.dtype)
        h = self.reader(x)
        n, c, b = [s.size for s in self.domain], self.channels, x.shape[0]
        f = self.collapse(h).tensor  # (b, |domain|, c)
        g = self.along(f.reshape(b, *n, c))  # (b, *n, c)
        if self.grid is not None:
            g = g + self.grid(g, x)
        v: Tensor = self.head(g)  # (b, C_out, *sizes); with a decoder (b, C, *n)
        if m is not None:
            v = v * torch.exp(self.homogeneous * m).reshape(-1, *([1] * (v.ndim - 1)))
        return v

    # ---- the output as a function ----------------------------------------------------------------

    def values(self, coefficients: Tensor, grid: Sequence[int]) -> Tensor:
        """Output coefficients ``(batch, C_out, *sizes)`` at the samples of a grid of the model's layouts with
        ``grid`` samples per axis: ``(batch, *grid, C_out)``."""
        ts = [a.t(p, coefficients.dtype, coefficients.device) for a, p in zip(self.axes, grid, strict=True)]
        return self.at(coefficients, ts)

    def at(self, coefficients: Tensor, ts: Sequence[Tensor]) -> Tensor:
        """Output coefficients at model coordinates ``ts`` (one 1-D tensor of ``t`` per axis: a tensor grid):
        ``(batch, *(len(t) for t in ts), C_out)``."""
        if isinstance(self.head, PointDecoder):
            return self.head.at_grid(coefficients, ts)
        return at_grid(coefficients, [a.boundary for a in self.axes], ts)

    def at_points(self, coefficients: Tensor, points: Tensor) -> Tensor:
        """Output coefficients at scattered model coordinates ``points`` ``(M, dims)``: ``(batch, M, C_out)``."""
        if isinstance(self.head, PointDecoder):
            return self.head.at_points(coefficients, points)
        return at_points(coefficients, [a.boundary for a in self.axes], points)


def _check(
    axes: Sequence[Axis],
    c_in: int,
    c_out: int,
    modes: int,
    width: int,
    heads: int,
    channels: int,
    window: float,
    reading: Reading,
    log_input: bool,
    homogeneous: float,
) -> None:
    """The constructor's arguments, checked together (an :class:`~applicative.InputError` naming them)."""
    if not 1 <= len(axes) <= 2 or not all(isinstance(a, Axis) for a in axes):
        raise InputError(f"OperatorModel: axes must be one or two instances.axes.Axis, got {len(axes)!r} item(s)")
    sizes = {"in_channels": c_in, "out_channels": c_out, "modes": modes, "width": width, "heads": heads}
    _check_sizes(sizes | {"channels": channels, "reading.width": reading.width, "reading.heads": reading.heads})
    for name, (n, h) in {
        "width, heads": (width, heads),
        "reading.width, reading.heads": (reading.width, reading.heads),
    }.items():
        if n % h:
            raise InputError(f"OperatorModel: {name} = {n}, {h}: the heads must divide the channels")
    if (window > 0 or reading.window > 0) and modes < 3:
        raise InputError(
            f"OperatorModel: modes={modes} with a window ({window}, reading {reading.window}): a window on (t - s)² "
            "needs series that hold t²; set modes >= 3, or both windows to 0"
        )
    if homogeneous != 0 and not log_input:
        raise InputError(
            f"OperatorModel: homogeneous={homogeneous} without log_input: u(c a) = c^d u(a) is built on log inputs"
        )
    if reading.kind == "fourier" and not all(a.boundary.periodic for a in axes):
        kinds = ", ".join(a.boundary.name for a in axes)
        raise InputError(
            f"OperatorModel: reading.kind='fourier' on axes with boundaries ({kinds}): the Fourier reader needs every "
            "axis periodic; use reading.kind='attention'"
        )


def _check_sizes(sizes: Mapping[str, object]) -> None:
    """Each of ``sizes`` an ``int >= 1`` (an :class:`~applicative.InputError` naming the first that is not)."""
    for name, n in sizes.items():
        if type(n) is not int or n < 1:
            raise InputError(f"OperatorModel: {name} must be an int >= 1, got {n!r:.40}")
