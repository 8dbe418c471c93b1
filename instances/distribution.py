"""Finite distributions: outcomes ``{0, ..., n-1}`` with a probability measure ``p``.

A value on a :class:`Distribution` axis is a *random variable* on the finite
sample space: one value per outcome. This is the lawful reading of the design
source's ``Distribution`` -- the representable (reader-like) applicative over
a fixed probability space:

* ``pure x`` is the constant random variable ``ω ↦ x``;
* ``zip_with f X Y`` is ``ω ↦ f(X(ω), Y(ω))`` (``pair X Y`` is the joint
  variable ``(X, Y)``), defined for variables on the *same* space;
* ``counit X = E[X] = Σ_ω p(ω) X(ω)``, the expectation (over the real ring).

The probabilities are carried by the structure and may be per example: ``p``
has shape ``(*batch, n)``. As for trees (:mod:`instances.tree`), the batch
axes line up with the *leading* axes of the tensors the distribution acts on;
typed axes between that batch and the distribution's axis all see the same
distribution, so ``unsqueeze_batch(-1)`` is the identity.

The structure writes only its contract: the probabilities are its
per-example data and its measure (``log p``); every kernel is derived from
that (:mod:`applicative._kernels`): the contraction ``a diag(p) b``, attention
over outcomes as one fused kernel with additive bias ``log p``, heads on
outcomes with the factor ``diag(√p)``. The probabilities are copied at
construction, so changing the caller's tensor afterwards changes nothing.

The design source's own ``Distribution [(a, Float)]`` pairs by ``zipWith`` and
has ``pure x = [(x, 1.0)]``; it breaks the unit laws (``pair (pure x) d`` keeps
one outcome of ``d``). ``examples/unlawful_distribution.py`` shows the law
checker catching it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from applicative import Structure, StructureError

#: how far the probabilities may sum from 1 (relative to float32 rounding of n terms)
SUM_TOLERANCE = 1e-5


class Distribution(Structure):
    """``n`` outcomes with probabilities ``probs`` (shape ``(*batch, n)``, non-negative, summing to 1).

    Raises:
        StructureError: if the probabilities are empty, not finite, negative,
            or do not sum to 1 (within :data:`SUM_TOLERANCE`).
    """

    def __init__(self, probs: Tensor | Sequence[float]) -> None:
        p = probs if isinstance(probs, Tensor) else torch.tensor(list(probs), dtype=torch.float64)
        if p.ndim < 1 or p.shape[-1] < 1:
            raise StructureError(
                f"Distribution needs at least one outcome, got probabilities of shape {tuple(p.shape)}"
            )
        p = p.detach().clone() if p.dtype.is_floating_point else p.to(torch.float64)  # ours: the caller's may change
        if not bool(torch.isfinite(p).all()):
            raise StructureError(f"Distribution: probabilities must be finite, got {p.tolist()}")
        if bool((p < 0).any()):
            raise StructureError(
                f"Distribution: probabilities must be non-negative, got {p.tolist()}; "
                "pass torch.softmax(logits, -1) to turn scores into probabilities"
            )
        total = p.sum(-1)
        if not bool(torch.allclose(total, torch.ones_like(total), rtol=0.0, atol=SUM_TOLERANCE)):
            raise StructureError(
                f"Distribution: probabilities must sum to 1, got sums {total.tolist()}; normalise with p / p.sum(-1)"
            )
        self.probs = p
        self.size = p.shape[-1]

    # ---- the contract: per-example data and the measure ------------------------

    def data(self) -> tuple[Tensor, ...]:
        return (self.probs,)

    def with_data(self, data: tuple[Tensor, ...]) -> Distribution:
        d = Distribution.__new__(Distribution)
        d.probs, d.size = data[0], data[0].shape[-1]
        return d

    def static(self) -> Hashable:
        return (self.size, tuple(self.probs.shape))

    @property
    def batch_shape(self) -> torch.Size:
        return self.probs.shape[:-1]

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log p(ω)`` (``-inf`` for an outcome of probability zero)."""
        return self.probs.to(dtype=dtype, device=device).log()

    def __repr__(self) -> str:
        if self.probs.ndim == 1 and not self.probs.is_meta:
            return f"Distribution({[round(float(v), 4) for v in self.probs]})"
        return f"Distribution(batch={tuple(self.probs.shape[:-1])}, outcomes={self.size})"
