"""How the law checker draws quantum states (:class:`QuantumArbitrary`)."""

from __future__ import annotations

import torch

from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

from .quantum import Quantum

_PARTS = Elements(-3.0, 3.0, integral=True)
_PHASES = Elements(-3.0, 3.0)


class QuantumArbitrary(Arbitrary[Quantum]):
    """Draws states on 1-4 basis states (some amplitudes zero, complex phases, sometimes per example)."""

    kind = Quantum

    def structure(self, draw: Draw) -> Quantum:
        n = draw.integers(1, 4)
        batch = (2,) if draw.booleans() else ()
        parts = draw.tensor((*batch, n, 2), _PARTS, torch.float64)
        psi = torch.complex(parts[..., 0], parts[..., 1])
        psi[..., 0] += (psi.abs().sum(-1) == 0).to(psi.dtype)  # at least one basis state with an amplitude
        return Quantum(psi / psi.abs().square().sum(-1, keepdim=True).sqrt())

    def isomorphism(self, s: Quantum, draw: Draw) -> Isomorphism:
        perm = draw.permutation(s.size)
        index = torch.tensor(perm, dtype=torch.long)
        phases = draw.tensor((s.size,), _PHASES, torch.float64)
        target = Quantum(s.amplitudes.index_select(-1, index) * torch.polar(torch.ones_like(phases), phases))
        return Isomorphism(
            s,
            target,
            lambda x, dim: x.index_select(dim, index.to(x.device)),
            f"relabel basis states {perm} and change their phases by {[round(float(p), 3) for p in phases]}",
        )
