"""How the law checker draws independent products of distributions (:class:`ProductArbitrary`).

A drawn structure is ``product(d1, d2).joint``: two distributions on 1-3
outcomes each (some probabilities zero, each factor sometimes per example),
so the laws run on joints of up to 9 outcomes whose measure is ``p₁⊗p₂``.
Relabelling the outcomes of each factor is an isomorphism onto another product:
outcome ``(a, b)`` of the target is ``(σ₁(a), σ₂(b))`` of the source.

No ``kind`` is declared (the joint is a plain :class:`Distribution`, whose
arbitrary is :class:`~instances.DistributionArbitrary`); name it directly:
``python -m applicative.laws instances._product_arbitrary:ProductArbitrary``.
"""

from __future__ import annotations

import torch

from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

from .distribution import Distribution, product

_WEIGHTS = Elements(0.0, 4.0, integral=True)


def _factor(draw: Draw) -> Distribution:
    n = draw.integers(1, 3)
    batch = (2,) if draw.booleans() else ()
    w = draw.tensor((*batch, n), _WEIGHTS, torch.float64)
    w[..., 0] += (w.sum(-1) == 0).to(w.dtype)  # at least one outcome with positive weight
    return Distribution(w / w.sum(-1, keepdim=True))


class ProductArbitrary(Arbitrary[Distribution]):
    """Draws ``product(d1, d2).joint`` for two independently drawn factors."""

    def __init__(self) -> None:
        #: the factors of each joint drawn here (the joint itself does not know them); keyed by the joint
        self._factors: dict[Distribution, tuple[Distribution, Distribution]] = {}

    def structure(self, draw: Draw) -> Distribution:
        p = product(_factor(draw), _factor(draw))
        self._factors[p.joint] = (p.left, p.right)
        return p.joint

    def isomorphism(self, s: Distribution, draw: Draw) -> Isomorphism | None:
        factors = self._factors.get(s)
        if factors is None:  # not drawn here
            return None
        left, right = factors
        p1, p2 = draw.permutation(left.size), draw.permutation(right.size)
        i1, i2 = torch.tensor(p1, dtype=torch.long), torch.tensor(p2, dtype=torch.long)
        index = (i1.unsqueeze(-1) * right.size + i2).flatten()  # target (a, b) <- source (σ₁(a), σ₂(b))
        target = product(
            Distribution(left.probs.index_select(-1, i1)), Distribution(right.probs.index_select(-1, i2))
        ).joint
        return Isomorphism(
            s,
            target,
            lambda x, dim: x.index_select(dim, index.to(x.device)),
            f"relabel the factors' outcomes {p1} x {p2} (probabilities move with them)",
        )
