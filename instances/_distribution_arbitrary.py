"""How the law checker draws distributions (:class:`DistributionArbitrary`)."""

from __future__ import annotations

import torch

from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

from .distribution import Distribution

_WEIGHTS = Elements(0.0, 4.0, integral=True)


class DistributionArbitrary(Arbitrary[Distribution]):
    """Draws distributions on 1-4 outcomes (some probabilities zero, sometimes per example)."""

    kind = Distribution

    def structure(self, draw: Draw) -> Distribution:
        n = draw.integers(1, 4)
        batch = (2,) if draw.booleans() else ()
        w = draw.tensor((*batch, n), _WEIGHTS, torch.float64)
        w[..., 0] += (w.sum(-1) == 0).to(w.dtype)  # at least one outcome with positive weight
        return Distribution(w / w.sum(-1, keepdim=True))

    def isomorphism(self, s: Distribution, draw: Draw) -> Isomorphism:
        perm = draw.permutation(s.size)
        index = torch.tensor(perm, dtype=torch.long)
        return Isomorphism(
            s,
            Distribution(s.probs.index_select(-1, index)),
            lambda x, dim: x.index_select(dim, index.to(x.device)),
            f"relabel outcomes {perm} (probabilities move with them)",
        )
