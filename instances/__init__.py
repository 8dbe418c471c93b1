"""Structures and rings: vectors, Chebyshev series, trees, distributions; tropical semirings."""

from .rings import MAX_PLUS, MIN_PLUS, MaxPlus, MinPlus
from .vector import Vector

__all__ = ["MAX_PLUS", "MIN_PLUS", "MaxPlus", "MinPlus", "Vector"]
