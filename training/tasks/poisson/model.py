"""The trained Poisson operator as a public object: build, load from a run directory, and solve.

``load(run_dir)`` returns a ready :class:`PoissonModel` from ``run_dir/checkpoint.pt`` (read with
``weights_only=True``; every scale is a buffer in the state dict, so a ``state_dict`` alone restores it
too). :func:`solve` takes a source as a callable ``f(x, y)`` or as values on a grid, and returns the
predicted solution ``g`` (``Δg = f``, ``g = 0`` on the boundary) on any grid::

    from training.tasks.poisson import load, solve
    model = load("runs/poisson")
    g = solve(model, lambda x, y: torch.sin(3 * x) * y, x=torch.linspace(-1, 1, 101), y=torch.linspace(-1, 1, 101))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from applicative import Field, LinearAttention, Normalise, Pairs, ScaledSoftmax, Structure
from instances import Chebyshev, CoefficientSoftmax, Vector
from instances.axes import X, Y
from instances.chebyshev import coefficients, points, vandermonde
from models.funcformer import Funcformer, FuncformerConfig, SeparableLinear, odd_part, unit_scaled
from operators.poisson.norms import l2_norm_sq, pad
from operators.poisson.sources import DEGREE
from training import Budget, InputError, inputs, registry
from training.budget import layer_activations, size

from .config import Config

CHECKPOINT = "checkpoint.pt"


def _normalise(config: Config, key_size: int) -> Normalise:
    scale = 1.0 / math.sqrt(key_size)
    if config.normalise == "softmax":
        return ScaledSoftmax(scale)
    if config.normalise == "coefficient":
        return CoefficientSoftmax(scale)
    return LinearAttention(scale)


class PoissonModel(nn.Module):
    """Source coefficients ``(batch, m, m')`` -> solution coefficients ``(batch, p, p)``, ``p = out_modes``.

    ``model(f) = L f + T(f)`` (times ``1 / out_scale``): ``L`` the exactly linear path
    :class:`~models.funcformer.SeparableLinear` (``config.rank`` terms; absent at ``0``), ``T`` the Funcformer
    (``config.correction``; its odd part with ``config.odd``), its ``modes x modes`` output zero-padded to ``p``.
    With ``config.homogeneous`` the whole is applied as ``‖f‖ · model(f / ‖f‖)`` (L² norm): ``model(c f) =
    c model(f)`` for every ``c > 0`` (every real ``c`` with ``config.odd``).

    Sources of any size are accepted: a series of more than ``modes`` terms per axis is cut to ``modes``
    (:meth:`read`: its higher modes are dropped; ``Δ⁻¹`` damps them like ``1/k²``), a shorter one zero-padded.
    ``out_scale`` is a buffer: it travels in the state dict with the weights.
    """

    out_scale: Tensor

    def __init__(self, config: Config, out_scale: float = 1.0) -> None:
        super().__init__()
        self.config = config
        dtype = getattr(torch, config.dtype)
        n = config.modes
        self.out_modes = config.out_modes or n
        self.x, self.y = X(n), Y(n)
        model = Vector(config.width) if config.model == "vector" else Chebyshev(config.width)
        key_size = config.key_size or config.width // config.heads
        cfg = FuncformerConfig(
            heads=config.heads,
            depth=config.depth,
            normalise=_normalise(config, key_size),
            eps=config.eps,
            key=Vector(config.key_size) if config.key_size else None,
            value=Vector(config.value_size) if config.value_size else None,
        )
        self.net: Funcformer[Structure, Structure, Vector | Chebyshev]
        m = config.domain_modes or n  # the Funcformer's functions: the source zero-padded to m x m
        self.domain = Pairs(X(m), Y(m))
        if config.sequence == "xy":
            # the 2D domain as the sequence (one axis of m·m positions), one channel as the features
            self.net = Funcformer(self.domain, Vector(1), model, Vector(config.hidden), cfg, dtype=dtype)
        else:  # the sequence is x, the features functions of y
            self.net = Funcformer(self.domain.a, self.domain.b, model, Vector(config.hidden), cfg, dtype=dtype)
        p = self.out_modes
        self.linear = SeparableLinear((n, n), (p, p), config.rank, dtype=dtype) if config.rank else None
        self.register_buffer("out_scale", torch.tensor(out_scale, dtype=torch.float64))
        self.dtype = dtype

    def read(self, f: Tensor) -> Tensor:
        """``f`` ``(batch, m, m')`` cut or zero-padded to the model's ``modes x modes``, in its dtype.

        Raises:
            InputError: ``f`` not a real tensor ``(batch, m, m')`` with every size at least 1, or not finite in
                the model's dtype.
        """
        inputs.tensor("PoissonModel", "f", f, "(batch, m, m') of source coefficients", 3)
        inputs.finite("PoissonModel", "f", f, self.dtype)
        return pad(f, self.config.modes).to(self.dtype)

    def operator(self, f: Tensor) -> Tensor:
        """The unscaled map on ``(batch, modes, modes)`` sources: linear path plus correction."""
        out = f.new_zeros(f.shape[0], self.out_modes, self.out_modes)
        if self.linear is not None:
            out = out + self.linear(f)
        if self.config.correction:
            t = odd_part(self.transformer, f) if self.config.odd else self.transformer(f)
            out = out + pad(t, self.out_modes)
        return out

    def transformer(self, f: Tensor) -> Tensor:
        """The Funcformer alone on ``(batch, modes, modes)`` sources -> coefficient matrices."""
        m = self.domain.a.size
        f = pad(f, m)
        if self.config.sequence == "xy":
            u = Field(f.flatten(-2).unsqueeze(-1), (self.domain, Vector(1)))
            out = self.net(u).tensor.squeeze(-1)
            return out.reshape(*out.shape[:-1], m, m)  # (batch, m·m) -> (batch, m, m)
        return self.net(Field(f, (self.domain.a, self.domain.b))).tensor

    def forward(self, f: Tensor) -> Tensor:
        """``f`` ``(batch, m, m')`` -> predicted ``g`` ``(batch, out_modes, out_modes)`` (the model's dtype)."""
        u = self.read(f)
        if self.config.homogeneous:
            u = unit_scaled(self.operator, u, l2_norm_sq(u.double()).sqrt().to(u.dtype))
        else:
            u = self.operator(u)
        return u / self.out_scale.to(u.dtype)


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> PoissonModel:
    """The trained model of a run directory (``python -m examples.poisson --out run_dir``), in eval mode."""
    model = registry.load(run_dir, device, task=SPEC.name)
    assert isinstance(model, PoissonModel)
    return model


def activations(fields: Mapping[str, Any], state: Mapping[str, Any]) -> int:
    """Values one training sample keeps for the backward pass (an estimate): the Funcformer's layers over its
    sequence (``x``: ``m`` positions, features ``m`` functions' coefficients; ``xy``: ``m²`` positions, one feature),
    twice with ``odd`` (the sample and its negative)."""
    c = Config(**fields)
    m = c.domain_modes or c.modes
    sequence, features = (m * m, 1) if c.sequence == "xy" else (m, m)
    one = c.depth * layer_activations(1, sequence, c.width, c.hidden, c.heads) + 4 * sequence * features
    return one * (2 if c.odd else 1)


def data_bytes(fields: Mapping[str, Any]) -> int:
    """The data a training run holds: the splits' sources and solutions (train, held-out and out-of-distribution),
    and the solver's response matrix ``modes² x out_modes²`` with its unit sources at degree ``DEGREE`` (float64)."""
    c = Config(**fields)
    n, out = c.modes, c.out_modes or c.modes
    examples = c.n_train + 2 * c.n_test
    return 8 * examples * (n * n + out * out) + 8 * n * n * (n * n + out * out + 2 * DEGREE * DEGREE)


#: the Poisson operator as :func:`training.load` knows it
SPEC = registry.TaskSpec(
    "poisson",
    1,
    PoissonModel,
    lambda blob: PoissonModel(Config(**blob["config"])),
    "examples.poisson",
    "a Poisson model",
    config=lambda fields: Config(**fields),
    activations=activations,
    data=data_bytes,
)


Source = Callable[[Tensor, Tensor], Tensor] | Tensor


def source_coefficients(n: int, source: Source, x: Tensor | None = None, y: Tensor | None = None) -> Tensor:
    """The ``n x n`` Chebyshev coefficients of a source: a callable ``f(x, y)`` or values ``(..., len(x), len(y))``.

    A callable is sampled at the first-kind Chebyshev points (and interpolated); values on a grid
    ``x x y`` are fitted by least squares (at least ``n`` points per axis).
    """
    if callable(source):
        t = points(n)
        xx, yy = torch.meshgrid(t, t, indexing="ij")
        returned = source(xx, yy)
        try:
            values = torch.as_tensor(returned, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise InputError(
                f"solve: the source returned {type(returned).__name__} {returned!r:.40}, not numbers; a source takes "
                "tensors x, y and returns a tensor of real numbers f(x, y) of their broadcast shape"
            ) from None
        if values.shape[-2:] != (n, n):
            raise InputError(f"solve: the source returned shape {tuple(values.shape)} on an {n} x {n} grid")
        _check_finite(values, "the source's values at the Chebyshev points")
        return coefficients(coefficients(values, -1), -2)
    if x is None or y is None or source.shape[-2:] != (len(x), len(y)):
        raise InputError(
            "solve: values of a source need their grid: solve(model, values, x, y, grid=(gx, gy)) with values "
            "of shape (..., len(gx), len(gy))"
        )
    _check_finite(source, "the source's values")
    for name, axis in (("gx", x), ("gy", y)):
        _check_points(axis, f"grid {name}")
        distinct = int(torch.unique(axis).numel())
        if distinct < n:
            raise InputError(
                f"solve: fitting {n} x {n} coefficients needs at least {n} distinct points per axis; grid {name} "
                f"has {distinct} distinct of {len(axis)}: sample the source at more points"
            )
    vx, vy = vandermonde(x.double(), n), vandermonde(y.double(), n)  # (px, n), (py, n)
    fitted: Tensor = torch.linalg.pinv(vx) @ source.double() @ torch.linalg.pinv(vy).mT
    return fitted


def _check_finite(values: Tensor, what: str) -> None:
    bad = ~torch.isfinite(values)
    if bool(bad.any()):
        raise InputError(
            f"solve: {what} hold {int(bad.sum())} NaN or infinite numbers of {values.numel()}; "
            "a source must be finite on [-1, 1]²"
        )


def _check_grid(px: int, py: int, budget: Budget | None, sources: int = 1) -> None:
    """The solutions of ``sources`` on ``px x py`` points (float64; twice while formed) within ``budget``."""
    if budget is not None and not isinstance(budget, Budget):
        raise InputError(f"solve: budget must be a training.Budget (e.g. Budget.memory(16)), got {budget!r:.60}")
    need, limit = 2 * 8 * px * py * sources, (budget or Budget()).max_bytes
    if need > limit:
        raise InputError(
            f"solve: {sources} source(s) on a grid of {px:,} x {py:,} points take {size(need)}, past the memory "
            f"budget of {size(limit)}; ask for fewer points (solve on pieces of the grid), or pass "
            "budget=Budget.memory(GIB)"
        )


def _check_points(t: Tensor, what: str) -> None:
    """Points where a series is evaluated or fitted: a 1-D tensor of finite numbers in ``[-1, 1]``."""
    if not isinstance(t, Tensor) or t.ndim != 1 or t.numel() == 0:
        shape = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
        raise InputError(f"solve: {what} must be a non-empty 1-D tensor of points in [-1, 1], got {shape}")
    if not bool(torch.isfinite(t).all()):
        raise InputError(f"solve: {what} holds NaN or infinite points; give points in [-1, 1]")
    lo, hi = float(t.min()), float(t.max())
    if lo < -1.0 - 1e-12 or hi > 1.0 + 1e-12:
        raise InputError(
            f"solve: {what} spans [{lo:.6g}, {hi:.6g}], outside [-1, 1], the square the model solves on (a Chebyshev "
            f"series grows without bound outside it); map a domain [a, b] to it with 2 (t - a) / (b - a) - 1"
        )


@torch.no_grad()
def solve(
    model: Callable[[Tensor], Tensor],
    source: Source,
    x: Tensor,
    y: Tensor,
    *,
    grid: tuple[Tensor, Tensor] | None = None,
    budget: Budget | None = None,
) -> Tensor:
    """The predicted solution ``g`` on the grid ``x x y``: ``(..., len(x), len(y))``, float64.

    Args:
        model: an operator on ``(batch, n, n)`` coefficients (a :class:`PoissonModel`, or any other).
        source: a callable ``f(x, y)`` (broadcasting tensors), or values ``(..., px, py)`` on ``grid``.
        x, y: where to evaluate ``g``.
        grid: the points ``(x, y)`` of ``source``'s values (when ``source`` is a tensor).
        budget: the memory the solution may take (default :class:`~training.Budget`: 8 GiB), checked from the grid's
            size before anything is computed.

    Raises:
        InputError: a model, source, grid or point that cannot be answered (each named), or a grid past ``budget``.
    """
    n = model.config.modes if isinstance(model, PoissonModel) else getattr(model, "modes", 0)
    if isinstance(model, type) or not callable(model) or type(n) is not int or n < 1:
        got = f"the class {model.__name__}" if isinstance(model, type) else f"a {type(model).__name__}"
        raise InputError(
            f"solve: the model must be a trained PoissonModel (training.tasks.poisson.load(run_dir)), or an operator "
            f"with an int `modes` attribute, got {got}"
        )
    _check_points(x, "x")
    _check_points(y, "y")
    _check_grid(len(x), len(y), budget)
    gx, gy = grid if grid is not None else (None, None)
    c = source_coefficients(n, source, gx, gy)
    batch = c.shape[:-2]
    _check_grid(len(x), len(y), budget, math.prod(batch))
    device = next(iter(model.parameters())).device if isinstance(model, nn.Module) else torch.device("cpu")
    g = model(c.reshape(-1, n, n).to(device)).double().cpu()
    g = g.reshape(*batch, *g.shape[-2:])
    vx, vy = vandermonde(x.double(), g.shape[-2]), vandermonde(y.double(), g.shape[-1])
    return vx @ g @ vy.mT
