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
that (:mod:`applicative.kernels`): the contraction ``a diag(p) b``, attention
over outcomes as one fused kernel with additive bias ``log p``, heads on
outcomes with the factor ``diag(√p)``. The probabilities are copied at
construction, so changing the caller's tensor afterwards changes nothing.

The design source's own ``Distribution [(a, Float)]`` pairs by ``zipWith`` and
has ``pure x = [(x, 1.0)]``; it breaks the unit laws (``pair (pure x) d`` keeps
one outcome of ``d``). ``examples/unlawful_distribution.py`` shows the law
checker catching it.

Combining distributions
-----------------------
*Independent product* (the source's cartesian pairing of lists). Variables on
*different* spaces pair on the product space ``Ω₁×Ω₂`` with ``p₁⊗p₂``:
:func:`product` gives a :class:`Product` whose :attr:`Product.joint` is a
plain :class:`Distribution` on ``n₁·n₂`` outcomes (outcome ``(i, j)`` at
``i·n₂ + j``), with lift maps ``X ↦ X∘π₁`` (:meth:`Product.lift_left`) and
``Y ↦ Y∘π₂`` (:meth:`Product.lift_right`). ``zip_with f (lift_left X)
(lift_right Y)`` is ``(ω₁, ω₂) ↦ f(X(ω₁), Y(ω₂))``, the independent pairing;
every law of the joint is a law of :class:`Distribution`. The lifts are
applicative morphisms that keep expectations (``E[X∘π₁] = E[X]``), and
``E[f(X) g(Y)] = E[f(X)] E[g(Y)]``. A value nested as ``Field[..., D₁, D₂]``
(a ``D₁`` of ``D₂`` values: the composite applicative, whose counits are
Fubini's) is already a variable on ``Ω₁×Ω₂``; :meth:`Product.flatten` puts
it on the joint's one axis. ``product(d1, d2)`` is memoised on ``d1``: asking
twice gives the same joint, so variables lifted separately still pair
(structures compare by identity of their tensors).

*Pushforward, merging equal outcomes* (the step the source says Haskell's
``Applicative`` cannot take without an equality constraint). :func:`pushforward`
turns a scalar variable ``X`` into the distribution of its values,
``P(X = v) = Σ_{ω: X(ω)=v} p(ω)``, as a field of the distinct values on a
new :class:`Distribution`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from applicative import Capability, DataStructure, Field, Structure, StructureError, per_example

#: how far the probabilities may sum from 1 (relative to float32 rounding of n terms)
SUM_TOLERANCE = 1e-5


def _as_probabilities(probs: object) -> Tensor:
    """``probs`` (a sequence of numbers) as a float64 tensor, or a :class:`StructureError` saying what came."""
    shown = repr(probs)[:80]
    if isinstance(probs, str | bytes):
        raise StructureError(
            f"Distribution: probabilities must be numbers, got the string {shown}; pass e.g. Distribution([0.5, 0.5])"
        )
    try:
        return torch.tensor(list(probs), dtype=torch.float64)  # type: ignore[call-overload]
    except (TypeError, ValueError, RuntimeError) as e:
        raise StructureError(
            f"Distribution: probabilities must be a tensor or a sequence of numbers, got {shown} "
            f"({str(e).splitlines()[0] if str(e) else type(e).__name__}); pass e.g. Distribution([0.5, 0.5])"
        ) from None


class Distribution(DataStructure):
    """``n`` outcomes with probabilities ``probs`` (shape ``(*batch, n)``, non-negative, summing to 1).

    Raises:
        StructureError: if the probabilities are empty, not finite, negative,
            or do not sum to 1 (within :data:`SUM_TOLERANCE`).
    """

    #: ``(*batch, n)`` the probabilities of the outcomes
    probs: Tensor = per_example(event_dims=1)

    def __init__(self, probs: Tensor | Sequence[float]) -> None:
        self.probs = _checked_probs(probs)
        self.size = self.probs.shape[-1]

    # ---- the contract: the measure ---------------------------------------------

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log p(ω)`` (``-inf`` for an outcome of probability zero)."""
        return self.probs.to(dtype=dtype, device=device).log()

    def product(self, other: Distribution) -> Product:
        """The independent product ``self ⊗ other`` (memoised: the same :class:`Product` every time)."""
        return product(self, other)

    def __repr__(self) -> str:
        return _repr(self)


def _repr(d: Distribution) -> str:
    if d.probs.ndim == 1 and not d.probs.is_meta:
        return f"Distribution({[round(float(v), 4) for v in d.probs]})"
    return f"Distribution(batch={tuple(d.probs.shape[:-1])}, outcomes={d.size})"


def _checked_probs(probs: Tensor | Sequence[float]) -> Tensor:
    """``probs`` as a fresh float tensor ``(*batch, n)``: finite, non-negative, summing to 1; or a named error."""
    p = probs if isinstance(probs, Tensor) else _as_probabilities(probs)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise StructureError(f"Distribution needs at least one outcome, got probabilities of shape {tuple(p.shape)}")
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
    return p


# ---- combining: the independent product -------------------------------------------


@dataclass(frozen=True, eq=False)
class Product:
    """``Ω₁×Ω₂`` with ``p₁⊗p₂``: the joint space of two independent distributions and the lifts onto it.

    Attributes:
        left, right: the factors, ``n₁`` and ``n₂`` outcomes.
        joint: the product distribution on ``n₁·n₂`` outcomes, outcome ``(i, j)`` at ``i·n₂ + j``;
            its batch is the broadcast of the factors' batches.
    """

    left: Distribution
    right: Distribution
    joint: Distribution

    def lift_left(self, x: Field[*tuple[Structure, ...]]) -> Field[*tuple[Structure, ...]]:
        """``X ∘ π₁``: the axis of ``x`` on :attr:`left` becomes the joint axis (each value repeated ``n₂`` times)."""
        i, t = self._axis(x, self.left, "lift_left")
        d = t.ndim - len(x.axes) + i
        return self._on_joint(x, i, t.repeat_interleave(self.right.size, d))

    def lift_right(self, y: Field[*tuple[Structure, ...]]) -> Field[*tuple[Structure, ...]]:
        """``Y ∘ π₂``: the axis of ``y`` on :attr:`right` becomes the joint axis (the values tiled ``n₁`` times)."""
        i, t = self._axis(y, self.right, "lift_right")
        d = t.ndim - len(y.axes) + i
        tiled = t.unsqueeze(d).expand(*t.shape[:d], self.left.size, *t.shape[d:])
        return self._on_joint(y, i, tiled.flatten(d, d + 1))

    def flatten(self, xy: Field[*tuple[Structure, ...]]) -> Field[*tuple[Structure, ...]]:
        """A variable nested as ``(..., left, right, ...)`` (``Z(ω₁)(ω₂)``) on the joint axis: ``(..., n₁·n₂, ...)``."""
        s = xy.structures
        pairs = [i for i in range(len(s) - 1) if s[i] == self.left and s[i + 1] == self.right]
        if len(pairs) != 1:
            raise StructureError(
                f"Product.flatten: expected exactly one pair of adjacent axes ({self.left!r}, {self.right!r}) "
                f"in {xy!r}, found {len(pairs)}; nest the variable as left-of-right values (outer(x, y))"
            )
        i, t = pairs[0], xy.tensor
        d = t.ndim - len(s) + i
        return Field(t.flatten(d, d + 1), (*s[:i], self.joint, *s[i + 2 :]), xy.ring)

    def _axis(self, x: Field[*tuple[Structure, ...]], factor: Distribution, op: str) -> tuple[int, Tensor]:
        hits = [i for i, s in enumerate(x.structures) if s == factor]
        if len(hits) != 1:
            raise StructureError(
                f"Product.{op}: expected exactly one axis on {factor!r} in {x!r}, found {len(hits)}; "
                "lift a variable of this product's factor (product(d1, d2).lift_left takes variables on d1)"
            )
        return hits[0], x.tensor

    def _on_joint(self, x: Field[*tuple[Structure, ...]], i: int, t: Tensor) -> Field[*tuple[Structure, ...]]:
        s = x.structures
        return Field(t, (*s[:i], self.joint, *s[i + 1 :]), x.ring)


def product(left: Distribution, right: Distribution) -> Product:
    """The independent product of ``left`` and ``right`` (see :class:`Product`); the same object on every call."""
    if not isinstance(right, Distribution):
        raise StructureError(f"product: {left!r} pairs with another Distribution, got {right!r}")
    # Keyed by equality, which for structures means the same data (never compared by value): an entry is the
    # product of exactly these probabilities (a pure function of both), so it cannot change a result; it keeps
    # the product -- and its joint, a new construction -- the same object across calls, so that variables
    # lifted in separate calls lie on one joint axis.
    memo: dict[Distribution, Product] = left.__dict__.setdefault("_products", {})
    if right not in memo:
        memo[right] = _product(left, right)
    return memo[right]


def _product(left: Distribution, right: Distribution) -> Product:
    p, q = _left_aligned(left.probs, right.probs)
    dtype = torch.promote_types(p.dtype, q.dtype)
    joint = p.to(dtype).unsqueeze(-1) * q.to(dtype).unsqueeze(-2)  # (*batch, n1, n2)
    return Product(left, right, Distribution(joint.flatten(-2)))


def _left_aligned(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``(*batch_a, n)`` and ``(*batch_b, m)`` with their batches lined up on the *leading* axes, broadcast.

    Per-example data belongs to the leading axes (the module docstring), so the shorter batch is
    padded with size-1 axes on its right before torch's (right-aligned) broadcasting.
    """
    rank = max(a.ndim, b.ndim) - 1
    a = a.reshape(*a.shape[:-1], *([1] * (rank - a.ndim + 1)), a.shape[-1])
    b = b.reshape(*b.shape[:-1], *([1] * (rank - b.ndim + 1)), b.shape[-1])
    batch = torch.broadcast_shapes(a.shape[:-1], b.shape[:-1])  # type: ignore[no-untyped-call]
    return a.expand(*batch, a.shape[-1]), b.expand(*batch, b.shape[-1])


# ---- combining: the pushforward that merges equal outcomes ----------------------------


def pushforward(x: Field[Distribution], atol: float = 0.0) -> Field[Distribution]:
    """The distribution of a scalar random variable's values: ``P(X = v) = Σ_{X(ω)=v} p(ω)``.

    Args:
        x: values ``(*batch, n)`` on a :class:`Distribution` axis (its only typed axis, real ring).
        atol: values are merged when they are equal (``atol=0``, exact float equality; ``-0.0 == 0.0``),
            or, sorted, within ``atol`` of their neighbour (a chain of close values merges into one).

    Returns:
        The distinct values ``(*batch, m)``, ascending, on a new :class:`Distribution` of their
        probabilities; ``m`` is the largest number of distinct values in the batch, and an example with
        fewer is padded with outcomes of probability 0 holding its largest value. A merged outcome holds
        the smallest value of its group. Outcomes of probability 0 keep their values (with probability 0).
        The probabilities are the structure's data, copied (no gradient flows through them).

    Raises:
        StructureError: for a field with other typed axes, another ring, or non-finite values.
    """
    s = x.structures
    if len(s) != 1 or not isinstance(s[0], Distribution) or not x.ring.has(Capability.SOFTMAX):
        raise StructureError(
            f"pushforward: expected a real scalar random variable, a Field whose only axis is a Distribution, "
            f"got {x!r}; push forward each component separately (fmap over the outer axes)"
        )
    if not x.tensor.dtype.is_floating_point or not bool(torch.isfinite(x.tensor).all()):
        raise StructureError(f"pushforward: the values must be finite floats, got {x.tensor.dtype} {x.tensor}")
    if atol < 0:
        raise StructureError(f"pushforward: atol must be >= 0, got {atol}")
    d = s[0]
    v, p = _left_aligned(x.tensor, d.probs.to(dtype=x.tensor.dtype, device=x.tensor.device))
    batch = v.shape[:-1]
    values, order = v.sort(-1)
    sorted_p = p.gather(-1, order)
    new = torch.ones_like(values, dtype=torch.bool)
    new[..., 1:] = values[..., 1:] - values[..., :-1] > atol
    group = new.long().cumsum(-1) - 1  # (*batch, n): the distinct value each outcome goes to
    m = int(group.max()) + 1 if group.numel() else 1
    probs = sorted_p.new_zeros(*batch, m).scatter_add(-1, group, sorted_p)
    positions = torch.arange(d.size, device=v.device).expand(*batch, d.size)
    last = torch.full((*batch, m), d.size - 1, dtype=torch.long, device=v.device)
    first = last.scatter_reduce(-1, group, positions, "amin")  # a group's first sorted outcome; padding: the last
    return Field(values.gather(-1, first), (Distribution(probs),), x.ring)
