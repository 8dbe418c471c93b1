"""Configuration of the Darcy job: one frozen dataclass and a few named presets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from operators.darcy.data import Family
from training.config import (
    MAX_BATCH,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MODES,
    MAX_STEPS,
    MAX_WIDTH,
    Checked,
    at_least,
    between,
    document_bounds,
)

Normalisation = Literal["softmax", "linear"]
DType = Literal["float32", "float64"]
Reader = Literal["interpolant", "grid"]
Sequence = Literal["x", "x+y", "xy"]
Activation = Literal["relu", "gelu"]


@dataclass(frozen=True)
class Config(Checked):
    """Everything that determines a training run (and so its checkpoint); validated on construction.

    Attributes:
        family: the coefficient family, ``"lognormal"`` (``a = e^g``) or ``"piecewise"`` (``a ∈ {3, 12}``).
        points: grid nodes per axis of ``[0, 1]²`` (data and evaluation); ``refine``: the solver's finer grid.
        modes: Chebyshev terms per axis of the input ``log a`` and of ``v`` in ``u = (1-x²)(1-y²) v``.
        width, hidden, heads, depth: the Funcformer's sizes (a Vector of ``width`` channels; ``heads | width``).
        normalise: attention normalisation, the continuous ``"softmax"`` or ``"linear"`` (scaled scores).
        activation: the MLPs' pointwise nonlinearity, ``"relu"`` (the design source's) or ``"gelu"``.
        eps: layer-norm epsilon.
        n_train, n_test: samples (the FNO paper trained on 1000).
        steps, batch, lr, weight_decay, warmup, clip: Adam with a one-cycle schedule, gradient-norm clipping.
        beta2: Adam's second-moment decay (torch's default 0.999; 0.95 forgets a spike's gradients sooner).
        smooth: weight ``λ`` of the smoothing penalty on the predicted series, per unit mean square of the
            exact ``u`` (:func:`~training.tasks.darcy.model.roughness`): the grid alone leaves the series
            between the nodes free (``0``: no penalty).
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
        seed: seeds the data, the initialisation and the batch order.
        dtype: the model's float type.
        reader: how ``log a`` reaches the network: ``"interpolant"`` (its ``modes x modes`` Chebyshev
            interpolant, the first design) or ``"grid"`` (cross-attention from learned queries on the
            Chebyshev domain onto the grid's samples, :class:`~training.tasks.darcy.model.GridReader`).
        sequence: the Transformer's sequence: ``"x"`` (features: functions of ``y``; the 1D Funcformer),
            ``"x+y"`` (two 1D Funcformers, one along ``x`` and one along ``y`` on the transposed input, their
            outputs summed: the square's two directions treated alike) or ``"xy"`` (the whole domain
            ``Pairs(X, Y)``, channels as features); ``"xy"`` needs ``reader="grid"``.
        domain_normalise: attention normalisation over the domain when ``sequence="xy"`` (``"linear"``: the
            Galerkin form, linear cost in the ``modes²`` positions).
        reader_normalise: the grid reader's attention normalisation (``"softmax"``: each query a local average).
        reader_width: the grid reader's channels (``0``: ``width``).
        reader_heads: the grid reader's attention heads (``0``: ``heads``; must divide the reader's channels).
        reader_window: the grid reader's locality: head ``h`` of ``H`` adds ``-β_h (t - s)²`` to the score of a query
            at ``t`` against a token at ``s`` (coordinates in ``[-1, 1]``), ``β_h = reader_window / 4^(H-1-h)``
            (``0``: no window; :class:`~training.tasks.darcy.model.GridReader`).
        window: the Funcformers' own locality along their sequence (``sequence="x"`` or ``"x+y"``): head ``h``
            of ``H`` adds ``-β_h (t - s)²`` to its scores, ``β_h = window / 4^(H-1-h)`` (``0``: none;
            :attr:`models.FuncformerConfig.window`).
        frequencies: Fourier features per axis of a grid token's coordinates (``reader="grid"``).
        channels: how many functions of ``(x, y)`` the grid reader hands the 1D Funcformer (``reader="grid"``,
            ``sequence="x"`` or ``"x+y"``): its features at each ``x`` are then ``Pairs(Y, Vector(channels))``,
            ``channels`` functions of ``y`` (``1``: one function, features ``Y``).
        homogeneous: build in the operator's symmetry ``u(c a) = u(a) / c`` (``c > 0``): the grid reader sees
            ``log a`` less its mean ``m`` over the grid, and the prediction is divided by ``e^m``
            (``reader="grid"``).
        augment: train on each batch moved by random symmetries of the square (rotations and reflections,
            :func:`~operators.darcy.data.symmetry`; the operator commutes with them, so every moved pair is
            another exact sample) -- eight times the distinct training pairs at no cost a step (``reader="grid"``).
    """

    family: Family = "piecewise"
    points: int = between(33, 3, 1025)
    refine: int = between(2, 1, 8)
    modes: int = between(20, 2, MAX_MODES)
    width: int = between(64, 1, MAX_WIDTH)
    hidden: int = between(128, 1, MAX_HIDDEN)
    heads: int = between(4, 1, MAX_HEADS)
    depth: int = between(3, 1, MAX_LAYERS)
    normalise: Normalisation = "softmax"
    activation: Activation = "relu"
    eps: float = field(default=1e-5, metadata={"above": 0.0, "max": 1e6})
    n_train: int = between(1000, 1, 10**6)
    n_test: int = between(100, 1, 10**6)
    steps: int = between(2000, 1, MAX_STEPS)
    batch: int = between(32, 1, MAX_BATCH)
    lr: float = field(default=3e-3, metadata={"above": 0.0})
    weight_decay: float = between(0.0, 0.0, 10.0)
    warmup: float = field(default=0.1, metadata={"min": 0.0, "max": 1.0})
    clip: float = between(1.0, 0.0, 1e6)
    beta2: float = field(default=0.999, metadata={"min": 0.0, "below": 1.0})
    smooth: float = between(0.0, 0.0, 1e6)
    eval_every: int = between(250, 1, MAX_STEPS)
    checkpoint_every: int = between(250, 1, MAX_STEPS)
    seed: int = at_least(0, 0)
    dtype: DType = "float32"
    reader: Reader = "interpolant"
    sequence: Sequence = "x"
    domain_normalise: Normalisation = "linear"
    reader_normalise: Normalisation = "softmax"
    reader_width: int = between(0, 0, MAX_WIDTH)
    reader_heads: int = between(0, 0, MAX_HEADS)
    reader_window: float = between(0.0, 0.0, 1e6)
    window: float = between(0.0, 0.0, 1e6)
    frequencies: int = between(8, 0, 1024)
    channels: int = between(1, 1, MAX_WIDTH)
    homogeneous: bool = False
    augment: bool = False

    @property
    def reader_shape(self) -> tuple[int, int]:
        """The grid reader's ``(channels, heads)``: ``reader_width`` and ``reader_heads``, ``0`` read as
        ``width`` and ``heads``."""
        return self.reader_width or self.width, self.reader_heads or self.heads

    def consistent(self) -> str | None:
        return _consistent(self)


document_bounds(Config)


def _consistent(c: Config) -> str | None:
    if c.modes + 2 > c.points:
        return (
            f"config fields modes={c.modes}, points={c.points}: the solution series has modes + 2 terms per axis, "
            "more than the grid can determine; lower modes or raise points"
        )
    channels, heads = c.reader_shape
    if c.reader == "grid" and channels % heads:
        return (
            f"config fields reader_width={c.reader_width}, reader_heads={c.reader_heads} (width={c.width}, "
            f"heads={c.heads}): the grid reader's {heads} heads must divide its {channels} channels; "
            "pick reader_heads dividing reader_width"
        )
    if c.reader == "grid" and c.frequencies == 0:
        return (
            "config fields frequencies=0, reader=grid: the grid reader's tokens carry Fourier features of their "
            "coordinates; set frequencies >= 1"
        )
    if c.sequence == "xy" and c.reader != "grid":
        return "config fields sequence=xy, reader=interpolant: the 2D-domain model reads the grid; set reader=grid"
    if c.channels > 1 and (c.reader != "grid" or c.sequence == "xy"):
        return (
            f"config fields channels={c.channels}, reader={c.reader}, sequence={c.sequence}: several channels are "
            "the grid reader's input to the 1D Funcformers; set reader=grid and sequence=x (or x+y), or channels=1"
        )
    if c.reader_window > 0 and (c.reader != "grid" or c.reader_normalise != "softmax"):
        return (
            f"config fields reader_window={c.reader_window}, reader={c.reader}, reader_normalise={c.reader_normalise}: "
            "the window weights the grid reader's softmax; set reader=grid and reader_normalise=softmax, or "
            "reader_window=0"
        )
    if c.window > 0 and (c.sequence == "xy" or c.normalise != "softmax"):
        return (
            f"config fields window={c.window}, sequence={c.sequence}, normalise={c.normalise}: the window weights the "
            "1D Funcformers' softmax along their sequence; set sequence=x (or x+y) and normalise=softmax, or window=0"
        )
    if c.homogeneous and c.reader != "grid":
        return (
            "config fields homogeneous=true, reader=interpolant: the symmetry is built into the grid route; "
            "set reader=grid"
        )
    if c.augment and c.reader != "grid":
        return "config fields augment=true, reader=interpolant: the symmetries move grid samples; set reader=grid"
    return None


PRESETS: dict[str, Config] = {
    "default": Config(),
    "lognormal": Config(family="lognormal"),
    # the grid route: log a read where it is given (the FNO's input); each value's measurements are in the lab
    # notes, docs/notes/2026-11-darcy.md ("The grid preset, field by field")
    "grid": Config(
        reader="grid",  # cross-attention from the Chebyshev domain onto the grid's samples
        sequence="x+y",  # a Funcformer along x and one along y: better on both families at equal parameters
        width=40,  # with hidden=120: the parameters of one Funcformer at the default sizes
        hidden=120,
        activation="gelu",  # better than relu on both families
        window=40.0,  # local attention along each sequence: lower piecewise error
        frequencies=4,  # coarse enough that the 65² error stays near the 33² error with the window on
        reader_width=32,
        reader_heads=2,  # the reader is most of the step: a quarter faster, errors unchanged
        channels=4,  # four functions of y per x for the Funcformer (one reads too little)
        lr=1e-2,  # the peak rate: 3e-3 trains too slowly
        beta2=0.95,  # torch's 0.999 let a loss spike at the peak rate stall a log-normal run
        smooth=0.25,  # at 1 the penalty held piecewise back; 0.25 still controls the series between the nodes
        homogeneous=True,  # u(c a) = u(a) / c built in
        augment=True,  # the square's symmetries: eight distinct pairs per sample
        reader_window=160.0,  # each reader head reads near its query
    ),
    # seconds: for tests and smoke runs
    "tiny": Config(
        points=17,
        refine=1,
        modes=8,
        width=16,
        hidden=16,
        heads=2,
        depth=1,
        n_train=32,
        n_test=8,
        steps=30,
        batch=8,
        lr=3e-3,
        eval_every=10,
        checkpoint_every=10,
    ),
}
