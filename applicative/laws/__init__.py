"""Law checking: one call checks a structure's laws with hypothesis.

Every structure -- built in or yours -- is checked by the same laws, declared
once as data next to the protocol they belong to:

* Functor (``_functor``): identity, composition.
* Applicative, monoidal form (``_functor``): ``fmap f (pure x) = pure (f x)``;
  naturality of ``pair``; left/right unit; associativity; symmetry of ``zip_with``.
* Counit (``_counit``): additivity, homogeneity, ``counit (pure x) = counit (pure 1) · x``,
  Fubini for nested values.
* Ring (``_ringlaws``): semiring axioms, and the fused ``sum`` equals the fold of ``add``.
* Derived algebra and fusion (``_fusion``): every fused kernel a structure
  overrides equals the base-class (generic) definition; ``mul_mm`` associative;
  ``mul_mv (mul_mm a b) v = mul_mv a (mul_mv b v)``; ``dot`` bilinear and symmetric.
* Attention (``_equivariance``): applying a structure isomorphism to the
  key/value positions leaves the output unchanged; applied to the query
  positions it carries the output along.

Representation of ``pair``. A value of type ``a`` is a field whose inner axis is
``Vector(p)`` (an element of ``R^p``); the product type ``a × b`` is ``R^(p+q)``,
so ``pair a b = zip_with (concatenate) a b``. The associator and unitors are
then identities on the representation and the laws compare tensors directly.
The unit laws use ``pure x`` for a drawn ``x`` (``pair (pure x) b = fmap (x,·) b``;
``x = ()`` is the textbook form), which is what exposes a ``pure`` that does
not fit the structure it is paired with.

Entry points: :func:`check_laws` (inside pytest; raises :class:`LawError` naming
each violated law, its tolerance and the shrunk counterexample),
:func:`run_laws` (returns a :class:`LawReport`; ``report.table()``), and
``python -m applicative.laws MODULE:NAME [--ring MODULE:NAME] [--examples N]``.
A structure takes 5-60 s on one CPU core at 100 examples per law; nothing is
written to the working directory unless ``database=PATH`` is given.
Strategies for users' own tests: :func:`fields`, :func:`structures`,
:func:`element_strategy`.

Equality is observational: two values are equal when their structures are
equal (``==``) and the tensors an :class:`Arbitrary` *observes* agree within
the :class:`Tolerance` -- exact for exact rings (the tropical rings on
integer-valued floats), ``rtol``/``atol`` otherwise (:data:`FLOAT_TOLERANCE`,
``1e-9`` in float64). A law that held to the last bit on every example is
reported *exact*, one that needed its tolerance *approximate* (with the
largest deviation seen). Laws run in float64.

How a structure supplies "how to draw one" (the protocol for structure authors)
-----------------------------------------------------------------------------
Write an :class:`Arbitrary` subclass next to your structure (hypothesis is not
imported by this; you draw through the :class:`Draw` facade, which shrinks)::

    from applicative.laws import Arbitrary, Draw, Elements

    class TreeArbitrary(Arbitrary[Tree]):
        kind = Tree                                   # lets `python -m applicative.laws m:Tree` find it
        def structure(self, draw: Draw) -> Tree:      # required: draw one structure
            ...
        def partner(self, s: Tree, draw: Draw) -> Structure:   # optional: what s may pair with
            ...                                       # (default: s itself; trees: another tree)
        def unit(self, s: Tree, draw: Draw) -> Structure:      # optional: the structure `pure` builds
            ...                                       # (default: s itself; trees: the one-leaf tree)
        def batch_shape(self, s: Tree) -> tuple[int, ...]:     # optional, default (2,)
        def value(self, axes, draw, batch, elements, degree) -> Tensor:  # optional
            ...                                       # default: draw.tensor((*batch, *sizes), elements, float64)
        def subspace(self, s, degree) -> str | None   # optional: say where value() restricts
        def observe(self, s, x, dim) -> Tensor        # optional: canonical form for comparison
        def isomorphism(self, s, draw) -> Isomorphism | None   # optional: for attention equivariance
        def tolerance(self, s, default) -> Tolerance  # optional: loosen for a truncated basis

Then ``check_laws(TreeArbitrary())`` in a test, or
``python -m applicative.laws instances.tree:Tree`` on the command line; once the
arbitrary is imported, ``check_laws(tree)`` for a structure object uses it too,
pinned to that object (one verdict: :func:`arbitrary_of` is the rule for both). A
structure object without one needs no arbitrary: ``check_laws(Vector(3))`` draws
values with the defaults. A Chebyshev-like structure whose products are truncated
receives ``degree`` (how many values the law multiplies together) in
:meth:`Arbitrary.value`, draws from the subspace where the law is exact, and
describes it in :meth:`Arbitrary.subspace`; the report prints that text.
"""

from typing import TYPE_CHECKING, Any

from ._arbitrary import EXACT, Arbitrary, Draw, Elements, Fixed, Isomorphism, Pinned, SizeError, Tolerance
from ._law import Case, Equation, Law
from ._pairs import PairsArbitrary
from ._report import LawReport, LawResult
from ._vector import VectorArbitrary

if TYPE_CHECKING:
    from ._equivariance import FLEX_LAWS
    from ._ringlaws import CAPABILITY_LAWS
    from ._runner import FLOAT_TOLERANCE, LAWS, LawError, check_laws, run_laws
    from ._strategies import arbitrary_of, element_strategy, fields, ring_elements, structures

# what needs hypothesis is imported on first use: a structure module can define its
# Arbitrary without pulling hypothesis into `import instances`
_LAZY = {
    **dict.fromkeys(("FLOAT_TOLERANCE", "LAWS", "LawError", "check_laws", "run_laws"), "._runner"),
    **dict.fromkeys(("CAPABILITY_LAWS",), "._ringlaws"),
    **dict.fromkeys(("FLEX_LAWS",), "._equivariance"),
    **dict.fromkeys(("arbitrary_of", "element_strategy", "fields", "ring_elements", "structures"), "._strategies"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CAPABILITY_LAWS",
    "EXACT",
    "FLEX_LAWS",
    "FLOAT_TOLERANCE",
    "LAWS",
    "Arbitrary",
    "Case",
    "Draw",
    "Elements",
    "Equation",
    "Fixed",
    "Isomorphism",
    "Law",
    "LawError",
    "LawReport",
    "LawResult",
    "PairsArbitrary",
    "Pinned",
    "SizeError",
    "Tolerance",
    "VectorArbitrary",
    "arbitrary_of",
    "check_laws",
    "element_strategy",
    "fields",
    "ring_elements",
    "run_laws",
    "structures",
]
