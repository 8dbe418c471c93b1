"""Darcy flow, ``-∇·(a∇u) = f`` on ``[0, 1]²`` with ``u = 0`` on the boundary: the solver and seeded data.

* :mod:`.solver` -- the five-point flux-form finite-difference solver (harmonic-mean faces);
* :mod:`.data` -- Gaussian random coefficients of two families and their solutions.

The data are nodes ``i/(P - 1)`` with ``u = 0`` at the ends (:class:`instances.layouts.Nodes`, boundary zero), and
the problem commutes with the square's eight symmetries (:mod:`operators.symmetry`).
"""

from .data import FAMILIES, DarcyData, Family, Splits, sample, splits
from .solver import DarcySolver

__all__ = ["FAMILIES", "DarcyData", "DarcySolver", "Family", "Splits", "sample", "splits"]
