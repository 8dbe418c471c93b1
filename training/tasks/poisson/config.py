"""Configuration of the Poisson main job: one frozen dataclass and a few named presets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from training.config import (
    MAX_EXAMPLES,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MODES,
    MAX_WIDTH,
    Optimiser,
    between,
    document_bounds,
    optimiser_field,
)

Normalisation = Literal["softmax", "coefficient", "linear"]
ModelKind = Literal["vector", "chebyshev"]
DType = Literal["float32", "float64"]
Sources = Literal["decaying", "mixed"]
Sequence = Literal["x", "xy"]


@dataclass(frozen=True)
class Config(Optimiser):
    """Everything that determines a training run (and so its checkpoint); validated on construction.

    The optimiser's fields are :class:`training.config.Optimiser`'s (Adam on a one-cycle schedule, clipping), with
    8000 steps of 64 samples at a peak ``lr`` of ``1e-2`` here; the model's, the data's and the loss's:

    Attributes:
        modes: Chebyshev terms per axis of the source and the predicted solution.
        model: ``"vector"`` (a Vector of ``width`` channels) or ``"chebyshev"`` (a Chebyshev series of
            ``width`` terms) as the Transformer's model structure.
        width, hidden, heads, depth: the Transformer's sizes (``heads`` must divide ``width``).
        normalise: attention normalisation: the faithful continuous ``"softmax"``, the design
            source's ``"coefficient"`` softmax, or ``"linear"`` (scaled scores, no normalisation).
        eps: layer-norm epsilon; a large value makes the norm nearly linear (the operator is linear).
        n_train, n_test: data set sizes (the OOD set has ``n_test`` samples).
        dtype: ``"float32"`` or ``"float64"`` for the model.
        rank: terms of the exactly linear path ``Σ_r A_r f B_rᵀ`` beside the Transformer (``0``: none).
        out_modes: Chebyshev terms per axis of the predicted solution (``0``: ``modes``); the solution of
            an ``n``-mode source has more than ``n`` (its series is cut there otherwise).
        homogeneous: predict ``‖f‖ · model(f / ‖f‖)``: positively homogeneous, whatever the source's amplitude.
        odd: predict the Transformer's odd part ``(T(f) - T(-f)) / 2`` (:func:`models.odd_part`): ``model(-f) =
            -model(f)``, with ``homogeneous`` ``model(c f) = c model(f)`` for every real ``c``; the even-order
            terms of attention (``q``, ``k``, ``v`` all depend on ``f``) drop out. Twice the batch per step.
        correction: run the Transformer (a nonlinear correction when ``rank > 0``); off: the linear path alone.
        sequence: what the Transformer's sequence is: ``"x"`` (the first argument, with functions of ``y``
            as features: the 1D Funcformer) or ``"xy"`` (the whole 2D domain ``Pairs(X, Y)``, one channel as
            the features: attention integrates over the square).
        domain_modes: Chebyshev terms per axis of the functions the Funcformer maps (``0``: ``modes``): the source
            is zero-padded to ``domain_modes`` and the output has as many (at most ``out_modes`` are kept).
        key_size, value_size: query/key and value sizes per attention head (``0``: ``width // heads``, or the
            key size); a ``"vector"`` model only. Attention's rank along ``x`` is at most the key size per head.
        sources: the training law: ``"decaying"`` (``ρ = 0.7``, 12 of 16 modes) or ``"mixed"``
            (:func:`operators.poisson.families.training_sources`: every resolved mode excited).
        online: every batch is ``batch`` fresh sources drawn from the training law (with the run's sampler, so a
            resumed run draws the same ones) and solved exactly, instead of ``batch`` of the ``n_train`` fixed
            pairs (which a long run overfits); the ``n_train`` pairs then only set the output scale.
    """

    modes: int = between(16, 2, MAX_MODES)
    model: ModelKind = "vector"
    width: int = between(64, 1, MAX_WIDTH)
    hidden: int = between(128, 1, MAX_HIDDEN)
    heads: int = between(8, 1, MAX_HEADS)
    depth: int = between(1, 1, MAX_LAYERS)
    normalise: Normalisation = "linear"
    eps: float = field(default=100.0, metadata={"above": 0.0, "max": 1e6})
    n_train: int = between(2000, 1, MAX_EXAMPLES)
    n_test: int = between(200, 1, MAX_EXAMPLES)
    steps: int = optimiser_field("steps", 8000)
    batch: int = optimiser_field("batch", 64)
    lr: float = optimiser_field("lr", 1e-2)
    dtype: DType = "float32"
    rank: int = between(0, 0, MAX_MODES)
    out_modes: int = between(0, 0, MAX_MODES)
    homogeneous: bool = False
    odd: bool = False
    correction: bool = True
    sources: Sources = "decaying"
    sequence: Sequence = "x"
    domain_modes: int = between(0, 0, MAX_MODES)
    key_size: int = between(0, 0, MAX_WIDTH)
    value_size: int = between(0, 0, MAX_WIDTH)
    online: bool = False

    def consistent(self) -> str | None:
        return _consistent(self)


document_bounds(Config)


def _consistent(c: Config) -> str | None:
    if c.out_modes and c.out_modes < c.modes:
        return f"config fields out_modes={c.out_modes}, modes={c.modes}: out_modes must be 0 or at least modes"
    if c.domain_modes and c.domain_modes < c.modes:
        return f"config fields domain_modes={c.domain_modes}, modes={c.modes}: domain_modes must be 0 or at least modes"
    if (c.key_size or c.value_size) and c.model != "vector":
        return (
            f"config fields key_size={c.key_size}, value_size={c.value_size}, model={c.model}: "
            "sizes per head need model=vector"
        )
    if c.rank == 0 and not c.correction:
        return "config fields rank=0, correction=false: the model would be empty; set rank >= 1 or correction=true"
    return None


#: issue 12's operator learner: the linear path Σ_r A_r f B_rᵀ beside a 1D Funcformer, homogeneous, mixed sources
WITH_LINEAR_PATH = Config(rank=12, out_modes=24, homogeneous=True, sources="mixed")

#: the Funcformer alone (issue 17), no linear path; each value's measurements are in docs/notes/2026-11-poisson.md
FUNCFORMER = WITH_LINEAR_PATH.replace(
    rank=0,  # no linear path
    domain_modes=24,  # 24 x 24 functions: the output is not cut at the source's 16 modes
    width=96,
    heads=12,
    key_size=24,  # attention's rank is at most the key size per head; the operator needs full-rank terms
    value_size=24,
    online=True,  # a fresh batch of the training law every step
    odd=True,  # the odd part of the Transformer: attention's even-order terms drop out
    batch=8,  # at equal time, smaller batches and more steps won
    steps=30000,  # 24000 left two of three seeds at 1e-3 or above
    lr=5e-3,
)

PRESETS: dict[str, Config] = {
    # the main job: the Funcformer alone (see the README for its time and error beside its baselines)
    "default": FUNCFORMER,
    # the previous default: the linear path plus the Funcformer as a correction
    "linear-path": WITH_LINEAR_PATH,
    # a larger model for a GPU: more data and steps (not measured since issue 12)
    "gpu": FUNCFORMER.replace(n_train=8000, n_test=500, steps=20000, batch=128, lr=3e-3),
    # seconds: for tests and smoke runs
    "tiny": FUNCFORMER.replace(
        width=16, hidden=16, heads=2, key_size=8, value_size=8, n_train=64, n_test=16, steps=20, batch=8, eval_every=10
    ),
}
