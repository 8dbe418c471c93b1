"""Structures and rings: vectors, Chebyshev series, trees, distributions, padded sequences; tropical semirings.

Each structure module writes only its contract (:mod:`applicative._structure`);
the law checker's arbitraries live in modules of their own beside it, which
import the structure (never the other way round).
"""

from ._chebarbitrary import ChebyshevArbitrary
from ._distribution_arbitrary import DistributionArbitrary
from ._padded_arbitrary import PaddedArbitrary
from ._tree_arbitrary import TreeArbitrary
from .chebyshev import Chebyshev, CoefficientSoftmax
from .distribution import Distribution
from .padded import Padded
from .rings import MAX_PLUS, MIN_PLUS, MaxPlus, MinPlus
from .tree import NodeAlgebra, Tree, tree_field
from .vector import Vector

__all__ = [
    "MAX_PLUS",
    "MIN_PLUS",
    "Chebyshev",
    "ChebyshevArbitrary",
    "CoefficientSoftmax",
    "Distribution",
    "DistributionArbitrary",
    "MaxPlus",
    "MinPlus",
    "NodeAlgebra",
    "Padded",
    "PaddedArbitrary",
    "Tree",
    "TreeArbitrary",
    "Vector",
    "tree_field",
]
