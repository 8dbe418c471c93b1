r"""The Funcformer for Darcy flow: Chebyshev coefficients of :math:`\log a` in, a series for :math:`u` out.

Coordinates: the physical square :math:`[0, 1]^2` is the Chebyshev square :math:`[-1, 1]^2` through
:math:`t = 2x - 1`.

* Input: :math:`\log a`, standardised, interpolated at the ``n x n`` first-kind Chebyshev points (a DCT
  per axis; :func:`input_coefficients`) -- a ``Field[X, Y]`` with ``X = Y = Chebyshev(n)``. ``a`` is a
  function (:meth:`~operators.darcy.data.DarcyData.log_a_at`), so it is *sampled* at those points, not fitted
  from the grid. For the piecewise-constant family the interpolant of a jump oscillates (Gibbs) and
  converges only in :math:`L^2`; the network sees that series, never the exact interfaces.
* Input, ``reader="grid"`` (:class:`GridReader`): ``log a`` where it is given, its samples on the data's
  ``P x P`` grid -- the same numbers the FNO reads, where the interpolant above samples the coefficient
  function between the nodes. The grid is a structure (``Pairs(Uniform(P), Uniform(P))``, trapezoid
  weights; :mod:`operators.darcy.grid`), and learned queries on the Chebyshev domain cross-attend to its
  tokens, one axis at a time, giving ``width`` feature functions on ``Pairs(X, Y)``. A 65² grid is read by
  the same weights (the same integrals, sampled more densely).
* Network: with ``sequence="x"`` (default), :class:`models.funcformer.Funcformer` unchanged (the grid
  reader's channels are first collapsed to ``channels`` functions: the Funcformer's features at each ``x`` are
  ``Pairs(Y, Vector(channels))``, and its ``channels`` output functions are mixed into ``v``); with
  ``sequence="x+y"``, a second Funcformer along ``y`` reads the same functions transposed (features: functions
  of ``x`` at each ``y``) and its output, transposed back, is added (:meth:`DarcyModel.along`); with
  ``sequence="xy"``, the generic encoder over the whole domain ``Pairs(X, Y)`` with channels as features (the
  Transolver / Galerkin-Transformer shape;
  ``domain_normalise="linear"`` is the Galerkin form, linear in the ``n²`` positions).
* Output: the boundary condition is built in. The network's series :math:`v` is multiplied by the bubble
  :math:`b(x, y) = (1 - x^2)(1 - y^2)`, exactly in coefficient space: :math:`u = B v B^T` with
  :func:`bubble_matrix` ``B`` ``(n + 2, n)``, from :math:`(1 - t^2) T_k = T_k/2 - T_{k+2}/4 - T_{|k-2|}/4`.
  So :math:`u` is an ``(n + 2) x (n + 2)`` Chebyshev series vanishing on the boundary, evaluated on the
  grid for the loss.

Why two readers: the interpolant is cheap but oscillates across a jump (Gibbs); the grid reader keeps the
samples the FNO reads and learns its own smoothing, at a higher cost a step. The measurements that chose them
(and dropped a least-squares projection: Runge between uniform nodes) are in the lab notes,
``docs/notes/2026-11-darcy.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from applicative import (
    Field,
    LayerNorm,
    Linear,
    LinearAttention,
    MultiHeadAttention,
    Normalise,
    Pairs,
    ScaledSoftmax,
    add,
    kernels,
)
from instances import Chebyshev, Vector
from instances.chebyshev import bubble as bubble_matrix
from instances.chebyshev import coefficients, points, vandermonde
from models.funcformer import Funcformer, FuncformerConfig, window_keys, window_queries, window_slopes
from models.transformer import EncoderLayer
from operators.darcy import grid
from operators.darcy.data import DarcyData
from training import InputError, inputs, registry

from .config import Activation, Config, Normalisation
from .cost import cost

CHECKPOINT = "checkpoint.pt"


class X(Chebyshev):
    """The first argument ``t = 2x - 1`` of ``log a`` and of ``u``: the Transformer's sequence."""


class Y(Chebyshev):
    """The second argument ``t = 2y - 1``: the Transformer's features."""


def roughness(u: Tensor) -> Tensor:
    r"""``Σ_kl (k̂⁴ + l̂⁴) u_kl²`` per sample for coefficients ``u`` ``(..., m, m)``, ``k̂ = k / (m - 1)`` in ``[0, 1]``.

    The smoothing penalty of the training loss (``Config.smooth``). Uniform nodes do not determine a
    series of many terms: at 33 nodes per axis a 22-term series can be small at every node and large
    between them near the edges (Runge; the values at 65 nodes of a series fitted at 33 can be 1400 times
    its grid norm per axis), so a model trained on the grid alone leaves its error between the nodes
    uncontrolled. Least squares on the 33² log-normal grid with this penalty times ``λ`` per unit mean
    square of ``u`` (measured, 100 samples): ``λ = 0``: 3.4e-4 at the nodes, 5.1e-3 at 65²; ``λ = 0.03``:
    4.1e-4 and 5.1e-4.
    """
    m = u.shape[-1]
    k = torch.arange(m, dtype=u.dtype, device=u.device) / max(m - 1, 1)
    weight = k[:, None] ** 4 + k[None, :] ** 4
    return (weight * u.pow(2)).sum((-2, -1))


def input_coefficients(d: DarcyData, n: int) -> Tensor:
    """``log a`` of every sample, interpolated at the ``n x n`` first-kind points: coefficients ``(count, n, n)``."""
    x = (points(n) + 1) / 2
    return coefficients(coefficients(d.log_a_at(x, x), -1), -2)


def grid_matrix(n: int, grid_points: int) -> Tensor:
    """``V`` ``(points, n)``: ``T_k(2 x_i - 1)`` at the uniform nodes ``x_i`` of ``[0, 1]``, float64."""
    return vandermonde(torch.linspace(-1, 1, grid_points, dtype=torch.float64), n)


ACTIVATIONS: dict[Activation, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "gelu": nn.functional.gelu}


def _normalise(config: Config, kind: Normalisation | None = None) -> Normalise:
    scale = 1.0 / math.sqrt(config.width // config.heads)
    return ScaledSoftmax(scale) if (kind or config.normalise) == "softmax" else LinearAttention(scale)


class GridReader(nn.Module):
    """Standardised ``log a`` on a ``P x P`` grid -> ``width`` feature functions on the domain ``Pairs(X, Y)``.

    Two cross-attentions through :class:`~applicative.MultiHeadAttention`, one per axis (a separable
    reading: ``O(n P² + n² P)`` scores instead of ``n² P²`` for attention over the whole grid at once):

    1. along ``x``, one grid row ``y_j`` at a time: the queries are learned functions ``q_x(x)`` on
       ``X = Chebyshev(n)``; the keys and values are the row's tokens (``log a`` and Fourier features of
       ``x_i``, :func:`~operators.darcy.grid.line_tokens`, embedded and normalised) on
       :class:`~operators.darcy.grid.Uniform` ``(P)``, integrated with its trapezoid measure;
    2. along ``y``, at each Chebyshev point ``x_k``: learned queries ``q_y(y)`` on ``Y`` read the first
       readings (plus Fourier features of ``y_j``) along the grid's column.

    Each is one fused SDPA call with bias ``log w``; the readings are stored back as Chebyshev coefficients.
    With ``reader_window = β > 0`` head ``h`` of ``H`` also scores ``-β_h (t - s)²`` between a query at ``t`` and a
    token at ``s`` (``β_h = β / 4^(H-1-h)``, fixed, as ALiBi fixes its slopes): each head reads near its query
    from the first step, at widths ``1/sqrt(2β_h)`` down to about a grid cell, which learned Fourier features of
    eight frequencies cannot resolve (measured in the Funcformer guide).
    Any ``P`` is read with the same weights (the measure makes it the same integral, sampled more densely), as
    long as the scores are resolved by the grid: Fourier features of ``k`` periods across the square put
    ``(P - 1) / k`` nodes in each, and at 33² with ``k = 8`` (four nodes a period) a 65² grid gave log-normal a 1.7x
    larger error once the Funcformers attended locally; the grid preset stops at ``k = 4``.
    """

    window_x: Tensor | None
    window_y: Tensor | None

    def __init__(self, config: Config, domain: Pairs, dtype: torch.dtype) -> None:
        super().__init__()
        self.domain, self.frequencies = domain, config.frequencies
        channels, heads = config.reader_shape
        d, r = Vector(config.width), Vector(channels)
        f = Vector(2 * config.frequencies)
        self.embed: Linear[Vector, Vector] = Linear(Vector(1 + f.size), r, dtype=dtype)
        self.position: Linear[Vector, Vector] = Linear(f, r, dtype=dtype)
        self.norm_x: LayerNorm[Vector] = LayerNorm(r, eps=config.eps, dtype=dtype)
        self.norm_y: LayerNorm[Vector] = LayerNorm(r, eps=config.eps, dtype=dtype)
        head = Vector(r.size // heads)
        scale = 1 / math.sqrt(head.size)
        normalise = ScaledSoftmax(scale) if config.reader_normalise == "softmax" else LinearAttention(scale)
        self.attn_x = MultiHeadAttention(r, head, head, heads, normalise, dtype=dtype)
        self.attn_y = MultiHeadAttention(r, head, head, heads, normalise, dtype=dtype)
        self.query_x = nn.Parameter(0.1 * torch.randn(domain.a.size, r.size, dtype=dtype))
        self.query_y = nn.Parameter(0.1 * torch.randn(domain.b.size, r.size, dtype=dtype))
        self.lift: Linear[Vector, Vector] = Linear(r, d, dtype=dtype)
        # the window's query sides are fixed series (from the config, not learned); the keys depend on P
        betas = torch.tensor(window_slopes(config.reader_window, heads), dtype=torch.float64) / scale
        for name, axis in (("window_x", domain.a), ("window_y", domain.b)):
            q = window_queries(betas, axis).to(dtype) if len(betas) else None
            self.register_buffer(name, q, persistent=False)

    def window(self, query: Tensor | None, p: int, like: Tensor) -> tuple[Tensor, Tensor] | None:
        """Head ``h``'s Gaussian window ``-β_h (t - s)²`` between a query at ``t`` (the series ``query``, one of
        ``window_x``, ``window_y``) and the token at ``s`` (``p`` uniform nodes of ``[-1, 1]``) as position features
        (:func:`models.funcformer.gaussian_window`); ``None`` without a window."""
        return None if query is None else (query, window_keys(grid.Uniform(p), like.dtype, like.device))

    def forward(self, log_a: Tensor) -> Field[Pairs, Vector]:
        """``log_a`` ``(batch, P, P)`` (standardised; ``[b, i, j]`` at ``(x_i, y_j)``) -> ``(batch, n², width)``
        coefficients on the domain."""
        b, p = log_a.shape[0], log_a.shape[-1]
        nx, ny = self.domain.a.size, self.domain.b.size
        line, r = grid.Uniform(p), self.lift.inp
        # 1. along x, each row y_j a batch: tokens (b, P_y, P_x, 1 + 2K)
        tokens = Field(grid.line_tokens(log_a.mT, self.frequencies), (line, self.embed.inp))
        memory = self.norm_x(self.embed(tokens))
        q = Field(self.query_x.expand(b, p, nx, r.size), (self.domain.a, r))
        position = self.window(self.window_x, p, log_a)
        h = add(q, self.attn_x(q, memory, position=position)).tensor  # (b, P_y, n_x, R): along x
        # 2. along y, at each Chebyshev point x_k: keys (b, n_x, P_y, R)
        h = kernels.positions(self.domain.a, h, -2).transpose(-2, -3)
        fy = grid.fourier(p, self.frequencies, h.dtype, h.device)
        memory = self.norm_y(add(Field(h, (line, r)), self.position(Field(fy, (line, self.position.inp)))))
        q = Field(self.query_y.expand(b, nx, ny, r.size), (self.domain.b, r))
        position = self.window(self.window_y, p, log_a)
        g = add(q, self.attn_y(q, memory, position=position)).tensor  # (b, n_x points, n_y, R)
        c = kernels.stored(self.domain.a, g, -3).flatten(-3, -2)  # (b, n_x n_y, R): coefficients on Pairs(X, Y)
        return self.lift(Field(c, (self.domain, r)))


def centred(log_a: Tensor) -> tuple[Tensor, Tensor]:
    """``(log a - m, m)`` with ``m`` ``(batch, 1, 1)`` the mean of ``log a`` ``(batch, P, P)`` over the square: its
    integral by the grid's trapezoid measure, halved per axis.

    The integral, not the mean of the nodes: the nodes' mean over-weights the boundary by ``1/P`` and so moves with
    the resolution (1.5e-3 on average between 33² and the 65² grid of the same log-normal coefficients, a relative
    error the prediction's factor ``e^-m`` passes straight to ``u``), where the integral's estimate does not."""
    w = grid.trapezoid_weights(log_a.shape[-1], log_a.dtype, log_a.device) / 2
    m = torch.einsum("i,...ij,j->...", w, log_a, w)[..., None, None]
    return log_a - m, m


class DarcyModel(nn.Module):
    """``log a`` coefficients ``(batch, n, n)`` -> ``u`` coefficients ``(batch, n + 2, n + 2)`` (zero on the boundary).

    ``in_shift``, ``in_scale`` (standardising ``log a``) and ``out_scale`` are buffers: they travel in the
    state dict with the weights.
    """

    in_shift: Tensor
    in_scale: Tensor
    out_scale: Tensor
    bubble: Tensor
    grid: Tensor

    def __init__(self, config: Config, in_shift: float = 0.0, in_scale: float = 1.0, out_scale: float = 1.0) -> None:
        super().__init__()
        self.config = config
        self.dtype = getattr(torch, config.dtype)
        n, d = config.modes, Vector(config.width)
        self.x, self.y = X(n), Y(n)
        self.domain = Pairs(self.x, self.y)
        self.reader = GridReader(config, self.domain, self.dtype) if config.reader == "grid" else None
        self.net: Funcformer[X, Y | Pairs, Vector] | None = None
        self.net_y: Funcformer[Y, X | Pairs, Vector] | None = None
        self.collapse: Linear[Vector, Vector] | None = None
        self.combine: Linear[Vector, Vector] | None = None
        self.layers = nn.ModuleList()
        self.out: Linear[Vector, Vector] | None = None
        if config.sequence in ("x", "x+y"):
            cfg = FuncformerConfig(
                heads=config.heads,
                depth=config.depth,
                normalise=_normalise(config),
                eps=config.eps,
                activation=ACTIVATIONS[config.activation],
                window=config.window,
            )
            c, hidden = Vector(config.channels), Vector(config.hidden)
            features: Y | Pairs = self.y if c.size == 1 else Pairs(self.y, c)
            self.net = Funcformer(self.x, features, d, hidden, cfg, dtype=self.dtype)
            if config.sequence == "x+y":  # the same along y: functions of x at each y, on the transposed input
                across: X | Pairs = self.x if c.size == 1 else Pairs(self.x, c)
                self.net_y = Funcformer(self.y, across, d, hidden, cfg, dtype=self.dtype)
            if self.reader is not None:  # the reader's channels -> functions of (x, y), the Funcformer's input
                self.collapse = Linear(d, c, dtype=self.dtype)
            if c.size > 1:  # the Funcformer's output functions -> v
                self.combine = Linear(c, Vector(1), dtype=self.dtype)
        else:  # the generic encoder over the whole domain, channels as features
            normalise = _normalise(config, config.domain_normalise)
            self.layers.extend(
                EncoderLayer(
                    d,
                    Vector(config.hidden),
                    config.heads,
                    normalise=normalise,
                    norm_first=True,
                    activation=ACTIVATIONS[config.activation],
                    eps=config.eps,
                    dtype=self.dtype,
                )
                for _ in range(config.depth)
            )
            self.out = Linear(d, Vector(1), dtype=self.dtype)
        for name, value in (("in_shift", in_shift), ("in_scale", in_scale), ("out_scale", out_scale)):
            self.register_buffer(name, torch.tensor(value, dtype=torch.float64))
        self.register_buffer("bubble", bubble_matrix(n).to(self.dtype))
        self.register_buffer("grid", grid_matrix(n + 2, config.points).to(self.dtype))

    def inputs(self, d: DarcyData) -> Tensor:
        """What :meth:`forward` reads of the samples ``d``: ``log a`` coefficients, or ``log a`` on the grid."""
        return d.a.log() if self.reader is not None else input_coefficients(d, self.config.modes)

    def forward(self, log_a: Tensor) -> Tensor:
        """``log a`` ``(batch, n, n)`` coefficients, or ``(batch, P, P)`` grid samples with ``reader="grid"``
        (any ``P >= 3``) -> ``u`` coefficients ``(batch, n + 2, n + 2)``.

        Raises:
            InputError: ``log_a`` not a real tensor of that shape, or an empty batch.
        """
        self.check(log_a)
        c = log_a.to(self.dtype)
        if self.config.homogeneous:  # u(c a) = u(a) / c: read log a - m, divide the prediction by e^m
            c, m = centred(c)
            return self.solution(c) * torch.exp(-m)
        return self.solution(c)

    def check(self, log_a: object) -> None:
        """:meth:`forward`'s argument checked (an :class:`~training.InputError` naming it and the shape expected)."""
        n = self.config.modes
        if self.reader is None:
            shape = f"(batch, {n}, {n}) of the Chebyshev coefficients of log a"
            t = inputs.tensor("DarcyModel", "log_a", log_a, shape, 3)
            if t.shape[-2:] != (n, n):
                raise InputError(f"DarcyModel: log_a must have shape {shape}, got {tuple(t.shape)}")
            return
        shape = "(batch, P, P) of log a on a uniform grid of P >= 3 nodes per axis"
        t = inputs.tensor("DarcyModel", "log_a", log_a, shape, 3, least=(1, 3, 3))
        if t.shape[-1] != t.shape[-2]:
            raise InputError(f"DarcyModel: log_a must have shape {shape} (a square grid), got {tuple(t.shape)}")

    def solution(self, c: Tensor) -> Tensor:
        """The network alone: :meth:`forward` without the built-in symmetry."""
        n = self.config.modes
        if self.reader is None:  # the interpolant route is the 1D Funcformers' (config check)
            c = (c - self._constant(c)) / self.in_scale.to(self.dtype)
            v = self.along(c[..., None])[..., 0]
        else:
            h = self.reader((c - self.in_shift.to(self.dtype)) / self.in_scale.to(self.dtype))
            if self.collapse is not None:
                v = self.along(self.collapse(h).tensor.reshape(-1, n, n, self.config.channels))
                if self.combine is not None:
                    out = Field(v.reshape(-1, n * n, self.config.channels), (self.domain, self.combine.inp))
                    v = self.combine(out).tensor
                v = v.reshape(-1, n, n)
            else:
                for layer in self.layers:
                    h = layer(h)
                assert self.out is not None
                v = self.out(h).tensor.reshape(-1, n, n)
        v = v / self.out_scale.to(self.dtype)
        return self.bubble @ v @ self.bubble.mT

    def along(self, f: Tensor) -> Tensor:
        """The 1D Funcformers on ``f`` ``(batch, n_x, n_y, channels)`` coefficients (``[b, k, l, c]``: channel ``c``'s
        ``T_k(x) T_l(y)``) -> the same shape: the Funcformer along ``x`` (features: functions of ``y``), plus, with
        ``sequence="x+y"``, the one along ``y`` on the transpose (features: functions of ``x``), transposed back."""
        assert self.net is not None
        b, n, _, c = f.shape
        v = self.net(Field(f.reshape(b, n, n * c), (self.x, self.net.features))).tensor.reshape(b, n, n, c)
        if self.net_y is not None:
            t = f.transpose(1, 2).reshape(b, n, n * c)  # [b, l, (k, c)]: y the sequence
            w = self.net_y(Field(t, (self.y, self.net_y.features))).tensor.reshape(b, n, n, c)
            v = v + w.transpose(1, 2)
        return v

    def on_grid(self, u: Tensor, points: int | None = None) -> Tensor:
        """``u`` coefficients ``(..., n + 2, n + 2)`` at the ``points x points`` nodes of ``[0, 1]²``.

        ``points`` defaults to the config's (the training grid); any other evaluates the same series there.
        """
        g = self.grid if points in (None, self.config.points) else grid_matrix(u.shape[-1], points).to(u)
        return g @ u @ g.mT

    def _constant(self, c: Tensor) -> Tensor:
        """The constant function ``in_shift`` as coefficients (``T_0 T_0`` only), shaped like ``c``."""
        one = torch.zeros_like(c[0])
        one[0, 0] = 1.0
        return self.in_shift.to(c.dtype) * one


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> DarcyModel:
    """The trained model of a run directory (``python -m examples.darcy --out run_dir``), in eval mode."""
    model = registry.load(run_dir, device, task=SPEC.name)
    assert isinstance(model, DarcyModel)
    return model


#: the Darcy operator as :func:`training.load` knows it
SPEC = registry.TaskSpec(
    "darcy",
    1,
    DarcyModel,
    lambda blob: DarcyModel(Config(**blob["config"])),
    "examples.darcy",
    "a Darcy model",
    config=lambda fields: Config(**fields),
    cost=lambda fields, state: cost(fields),
)
