"""Darcy flow, ``-∇·(a∇u) = f`` on ``[0, 1]²`` with ``u = 0`` on the boundary: the solver and seeded data.

* :mod:`.solver` -- the five-point flux-form finite-difference solver (harmonic-mean faces);
* :mod:`.data` -- Gaussian random coefficients of two families, their solutions, the square's symmetries;
* :mod:`.grid` -- the data's uniform grid as a structure (trapezoid weights) and its tokens.
"""

from .data import FAMILIES, DarcyData, Family, Splits, sample, splits
from .solver import DarcySolver

__all__ = ["FAMILIES", "DarcyData", "DarcySolver", "Family", "Splits", "sample", "splits"]
