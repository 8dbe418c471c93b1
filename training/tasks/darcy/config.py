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
    # log a read where it is given: cross-attention from the Chebyshev domain onto the grid's samples, four
    # functions of y per x for the Funcformer (one: 1.89e-2 at 750 steps against 1.45e-2, log-normal, batch 32);
    # a peak rate of 1e-2 (3e-3: 1.73e-2 after 1500 steps at batch 16); homogeneous: u(c a) = u(a) / c built in
    # (1500 steps at batch 16: piecewise 3.77e-2 -> 3.19e-2, log-normal 9.94e-3 -> 1.05e-2); augment: the square's
    # symmetries (6000 steps, piecewise: 2.30e-2 -> 1.95e-2); beta2 0.95: a loss spike at the peak rate left a
    # log-normal run at 1.40e-2 with torch's 0.999, none at 0.95 (3.94e-3), seed 0 4.76e-3 -> 4.32e-3; smooth 1:
    # the series between the nodes (log-normal, 65² / 33² error, H200, seeds 0 / 1: 1.77 / 1.55 -> 1.47 / 1.31);
    # reader_window 160: each reader head reads near its query, at fixed widths (piecewise, 6000 steps, compiled:
    # 2.02e-2 -> 1.77e-2; 1.84e-2 at 40); sequence x+y: a Funcformer along x and one along y, width 40 and hidden
    # 120 to keep the parameters (125.7k against 125.3k; seed 0, piecewise 1.77e-2 -> 1.75e-2, log-normal
    # 3.37e-3 -> 3.17e-3); window 40 with frequencies 4: the Funcformers attend locally along their sequence, and
    # the reader's Fourier features stop at 4 periods, 8 nodes each at 33² (window 40 with 8 frequencies: piecewise
    # 1.51e-2, but the log-normal 65² error 1.74x the 33²; with 4: piecewise 1.57e-2, log-normal 2.72e-3, 1.03x);
    # activation gelu (seed 0, compiled, 6000 steps: piecewise 1.60e-2 -> 1.49e-2, log-normal 2.97e-3 -> 2.57e-3);
    # reader_heads 2: the reader is most of the step (6000 steps in 342 s against 461; piecewise 1.49e-2 -> 1.49e-2,
    # log-normal 2.57e-3 -> 2.77e-3, 65² / 33² 1.04); smooth 0.25: the penalty at 1 held piecewise back (6000
    # steps, seed 0: 1.49e-2 -> 1.43e-2 at 0.25 and at 0; seed 1: 1.49e-2 -> 1.41e-2, 1.40e-2 at 0), and 0.25
    # still carries log-normal to 65² (2.50e-3, 65² / 33² 1.13; at 0: 2.56e-3 but 1.69)
    "grid": Config(
        reader="grid",
        sequence="x+y",
        width=40,
        hidden=120,
        activation="gelu",
        window=40.0,
        frequencies=4,
        reader_width=32,
        reader_heads=2,
        channels=4,
        lr=1e-2,
        beta2=0.95,
        smooth=0.25,
        homogeneous=True,
        augment=True,
        reader_window=160.0,
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
