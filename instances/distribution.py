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

The contraction is the metric ``diag(p)``: ``contract(a, b) = a diag(p) b``,
so attention over outcomes lowers to one fused kernel with additive bias
``log p`` and heads on outcomes factor as ``L = diag(√p)``.

The design source's own ``Distribution [(a, Float)]`` pairs by ``zipWith`` and
has ``pure x = [(x, 1.0)]``; it breaks the unit laws (``pair (pure x) d`` keeps
one outcome of ``d``). ``examples/unlawful_distribution.py`` shows the law
checker catching it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Real, Ring, Structure, StructureError
from applicative.laws import Arbitrary, Draw, Elements, Isomorphism

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
        if not p.dtype.is_floating_point:
            p = p.to(torch.float64)
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

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Distribution)
            and other.probs.shape == self.probs.shape
            and bool(torch.equal(other.probs.to(self.probs), self.probs))
        )

    def __hash__(self) -> int:
        return hash((Distribution, tuple(self.probs.shape)))

    def __repr__(self) -> str:
        if self.probs.ndim == 1:
            return f"Distribution({[round(float(v), 4) for v in self.probs]})"
        return f"Distribution(batch={tuple(self.probs.shape[:-1])}, outcomes={self.size})"

    @property
    def batch_shape(self) -> torch.Size:
        return self.probs.shape[:-1]

    def check(self, x: Tensor, dim: int, where: str) -> None:
        super().check(x, dim, where)
        q = min(dim % x.ndim, len(self.batch_shape))
        try:
            torch.broadcast_shapes(x.shape[:q], self.batch_shape[:q])  # type: ignore[no-untyped-call]
        except RuntimeError:
            raise StructureError(
                f"{where}: the tensor's leading axes {tuple(x.shape[:q])} do not broadcast with the batch of "
                f"{self!r} {tuple(self.batch_shape)} (distributions line up with the leading axes of a tensor)"
            ) from None

    def _weighted(self, x: Tensor, dim: int, transform: str = "p") -> tuple[Tensor, int, Tensor]:
        """``(x, d, w)``: ``x`` padded to at least the batch rank, its axis ``d``, and ``p`` shaped to broadcast.

        ``w`` has ``p``'s batch axes first, ``p``'s outcomes at ``d`` and ones
        elsewhere; ``transform`` is ``"p"``, ``"sqrt"`` or ``"log"``.
        """
        d = dim % x.ndim
        q = len(self.batch_shape)
        if d < q:  # a tensor without the batch (a parameter) is shared by every example
            x = x.reshape(*([1] * (q - d)), *x.shape)
            d = q
        p = self.probs.to(dtype=x.dtype, device=x.device)
        p = p.sqrt() if transform == "sqrt" else p.log() if transform == "log" else p
        w = p.reshape(*self.batch_shape, *([1] * (d - q)), self.size, *([1] * (x.ndim - d - 1)))
        return x, d, w

    # ---- Applicative: values at outcomes ------------------------------------

    def pure(self, x: Tensor, dim: int) -> Tensor:
        d = dim % (x.ndim + 1)
        return x.unsqueeze(d).expand(*x.shape[:d], self.size, *x.shape[d:])

    def unsqueeze_batch(self, dim: int) -> Structure:
        q = len(self.batch_shape)
        pos = dim if dim >= 0 else q + 1 + dim
        if not 0 <= pos <= q:
            raise StructureError(f"{self!r}.unsqueeze_batch: axis {dim} out of range for batch rank {q}")
        return self if pos == q else Distribution(self.probs.unsqueeze(pos))

    # ---- Counit: the expectation ---------------------------------------------

    def counit(self, x: Tensor, dim: int, ring: Ring) -> Tensor:
        if not isinstance(ring, Real):
            raise StructureError(
                f"Distribution: the counit is an expectation, defined over the real ring, not {ring!r}"
            )
        x, d, w = self._weighted(x, dim)
        return (x * w).sum(d)

    # ---- fused kernels: the metric diag(p) -------------------------------------

    def contract(self, a: Tensor, b: Tensor, ring: Ring) -> Tensor:
        if not isinstance(ring, Real):
            return super().contract(a, b, ring)
        a, _, w = self._weighted(a, -1)
        return torch.matmul(a * w, b)  # (..., m, n) diag(p) (..., n, k)

    def affine(self, x: Tensor, weight: Tensor, bias: Tensor | None, ring: Ring) -> Tensor:
        if not isinstance(ring, Real) or weight.ndim != 2:
            return super().affine(x, weight, bias, ring)
        x, _, w = self._weighted(x, -1)
        return nnf.linear(x * w, weight, bias)

    def sdpa_factor(self, x: Tensor) -> Tensor | None:
        x, _, w = self._weighted(x, -1, "sqrt")
        return x * w

    def sdpa_log_measure(self, like: Tensor) -> Tensor | None:
        _, _, w = self._weighted(like, -2, "log")  # outcomes are the keys' positions, axis -2
        return w.squeeze(-1)


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
