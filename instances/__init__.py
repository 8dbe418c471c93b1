"""Structures and rings: vectors, Chebyshev series, trees, distributions; tropical semirings."""

from .chebyshev import Chebyshev, CoefficientSoftmax
from .distribution import Distribution, DistributionArbitrary
from .rings import MAX_PLUS, MIN_PLUS, MaxPlus, MinPlus
from .tree import NodeAlgebra, Tree, tree_field
from .vector import Vector

__all__ = [
    "MAX_PLUS",
    "MIN_PLUS",
    "Chebyshev",
    "CoefficientSoftmax",
    "Distribution",
    "DistributionArbitrary",
    "MaxPlus",
    "MinPlus",
    "NodeAlgebra",
    "Tree",
    "Vector",
    "tree_field",
]
