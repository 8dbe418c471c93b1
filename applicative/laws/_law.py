"""Laws as data: :class:`Law`, the per-example :class:`Case`, and observational equality.

A law is a named equation ``lhs = rhs`` between two values built from drawn
inputs. :func:`compare` decides it: the structures must be equal and the
observed tensors (see :meth:`Arbitrary.observe`) agree within a
:class:`Tolerance` -- infinities must match exactly, NaNs match NaNs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from .._data import same_values
from .._field import Field
from .._ring import Capability, Ring
from .._structure import Structure
from .._tensor import broadcast_shape
from .._vector import Vector
from ._arbitrary import Arbitrary, Draw, Elements, Tolerance

AnyField = Field[*tuple[Any, ...]]


@dataclass(frozen=True)
class Equation:
    """The two sides of a law on one example."""

    lhs: AnyField
    rhs: AnyField


@dataclass(frozen=True)
class Law:
    """One law: a name, its statement, the protocol area, and how to build its two sides.

    ``applies(case)`` returns ``None`` if the law applies, else the reason it does not.
    """

    area: str
    name: str
    statement: str
    build: Callable[[Case], Equation]
    applies: Callable[[Case], str | None] = lambda case: None


def real_only(case: Case) -> str | None:
    """Applicability for laws that only make sense over the real numbers (softmax, layer norm)."""
    if case.ring.has(Capability.SOFTMAX):
        return None
    return f"needs an ordered ring with exp (the real ring), not {case.ring!r}"


@dataclass(frozen=True)
class PointFn:
    """A drawn scalar function for functor laws: its name, the function on ``R^p`` rows, its degree."""

    name: str
    fn: Callable[[Tensor], Tensor]
    degree: int | None

    def on(self, x: AnyField) -> AnyField:
        return x.with_tensor(self.fn(x.tensor))

    def __repr__(self) -> str:
        return self.name


@dataclass
class Case:
    """One example of one law: draws inputs through the arbitrary and records them for the report."""

    arb: Arbitrary[Any]
    ring: Ring
    elements: Elements
    draw: Draw
    commutative: bool
    inputs: list[tuple[str, object]] = field(default_factory=list)
    subspaces: set[str] = field(default_factory=set)
    _s: Structure | None = None

    @property
    def s(self) -> Structure:
        """The structure under test, drawn once per example."""
        if self._s is None:
            self._s = self.arb.structure(self.draw)
            self.note("structure", self._s)
        return self._s

    @property
    def batch(self) -> tuple[int, ...]:
        return self.arb.batch_shape(self.s)

    def note(self, label: str, what: object) -> None:
        """Record an input; formatted (tensors as nested lists) only if the law fails."""
        self.inputs.append((label, what))

    def describe(self) -> str:
        """The recorded inputs, one per line."""
        return "\n".join(f"    {label} = {_show(what)}" for label, what in self.inputs)

    def vec(self, n: int) -> Structure:
        """An anonymous ``Vector(n)`` (the inner type ``R^n`` of values)."""
        return Vector(n)

    def partner(self) -> Structure:
        t = self.arb.partner(self.s, self.draw)
        if t is not self.s:
            self.note("partner", t)
        return t

    def unit(self) -> Structure:
        t = self.arb.unit(self.s, self.draw)
        if t is not self.s:
            self.note("pure builds", t)
        return t

    def value(self, label: str, axes: tuple[Structure, ...], degree: int | None = 1) -> AnyField:
        """Draw a value with typed ``axes`` (batch from the arbitrary)."""
        return self._value(label, axes, degree, self.batch)

    def unbatched(self, label: str, axes: tuple[Structure, ...], degree: int | None = 1) -> AnyField:
        """Draw a value with no batch axes (a weight)."""
        return self._value(label, axes, degree, ())

    def raw(self, label: str, axes: tuple[Structure, ...], degree: int | None = 1) -> Tensor:
        """Draw an unbatched tensor laid out like a value with ``axes`` (a weight matrix), not checked as a field."""
        t = self.arb.value(axes, self.draw, (), self.elements, degree)
        self.note(label, (list(axes), t))
        return t

    def _value(self, label: str, axes: tuple[Structure, ...], degree: int | None, batch: tuple[int, ...]) -> AnyField:
        t = self.arb.value(axes, self.draw, batch, self.elements, degree)
        for a in axes:
            where = self.arb.subspace(a, degree)
            if where is not None:
                self.subspaces.add(where)
        x = Field(t, axes, self.ring)
        self.note(label, (list(axes), t))
        return x

    def inner(self, label: str, p: int, degree: int | None = 1) -> AnyField:
        """A batch of inner values in ``R^p`` (no structure under test)."""
        return self.value(label, (self.vec(p),), degree)

    def scalar(self, label: str) -> Tensor:
        """A batch of ring elements, shape ``batch``."""
        t = self.draw.tensor(self.batch, self.elements, torch.float64)
        self.note(label, t)
        return t

    def size(self, label: str, lo: int = 1, hi: int = 3) -> int:
        n = self.draw.integers(lo, hi)
        self.note(label, n)
        return n

    def function(self, label: str, allow_transcendental: bool = True) -> PointFn:
        """Draw a scalar function from a small family (affine, mixing, square, tanh)."""
        if self.elements.integral:
            a = float(self.draw.integers(-3, 3))
            b = float(self.draw.integers(-3, 3))
        else:
            a, b = self.draw.floats(-2, 2), self.draw.floats(-2, 2)
        family = [
            PointFn(f"x ↦ {a:g}·x + {b:g}", lambda x: a * x + b, 1),
            PointFn("x ↦ x + roll(x)", lambda x: x + x.roll(1, -1), 1),
            PointFn(f"x ↦ x² + {b:g}", lambda x: x * x + b, 2),
        ]
        if allow_transcendental:
            family.append(PointFn(f"x ↦ tanh({a:g}·x)", lambda x: torch.tanh(a * x), None))
        f = self.draw.choice(family)
        self.note(label, f.name)
        return f


def _show(what: object) -> str:
    if isinstance(what, Tensor):
        return str(what.tolist())
    if isinstance(what, tuple):
        return " ".join(_show(w) for w in what)
    return repr(what) if not isinstance(what, str) else what


def compose_degree(*degrees: int | None) -> int | None:
    """Degree of a composite polynomial (``None`` if any part is transcendental)."""
    out = 1
    for d in degrees:
        if d is None:
            return None
        out *= d
    return out


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one equation: ok, the largest deviation seen, and why not ok."""

    ok: bool
    max_error: float
    why: str = ""


def compare(eq: Equation, arb: Arbitrary[Any], tol: Tolerance) -> Verdict:
    """Observational equality of the two sides within ``tol``."""
    ls, rs = eq.lhs.structures, eq.rhs.structures
    if len(ls) != len(rs) or not all(a == b or same_values(a, b) for a, b in zip(ls, rs, strict=True)):
        return Verdict(False, float("inf"), f"structures differ: lhs on {list(ls)!r}, rhs on {list(rs)!r}")
    k = len(ls)
    a, b = eq.lhs.tensor, eq.rhs.tensor
    for i, s in enumerate(ls):
        a, b = arb.observe(s, a, i - k), arb.observe(s, b, i - k)
    try:
        shape = broadcast_shape(a.shape, b.shape)
        a, b = a.expand(shape), b.expand(shape)
    except RuntimeError:
        return Verdict(False, float("inf"), f"shapes differ: lhs {tuple(a.shape)}, rhs {tuple(b.shape)}")
    a, b = a.double(), b.double()
    nan = a.isnan() & b.isnan()
    inf = a.isinf() | b.isinf()
    bad_inf = inf & (a != b)
    finite = ~(nan | inf)
    err = torch.where(finite, (a - b).abs(), torch.zeros_like(a))
    err = torch.where(a.isnan() ^ b.isnan(), torch.full_like(a, float("inf")), err)
    bound = tol.atol + tol.rtol * torch.where(finite, b.abs(), torch.zeros_like(b))
    worst = err.max().item() if err.numel() else 0.0
    over = (err > bound) | bad_inf
    if bool(over.any()):
        idx = tuple(int(j) for j in over.nonzero()[0])
        why = (
            f"at index {idx}: lhs = {a[idx].item()!r}, rhs = {b[idx].item()!r} "
            f"(|difference| = {(a[idx] - b[idx]).abs().item():.3g}, allowed {bound[idx].item():.3g})"
        )
        return Verdict(False, float("inf") if bool(bad_inf.any()) else worst, why)
    return Verdict(True, worst)
