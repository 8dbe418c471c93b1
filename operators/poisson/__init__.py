"""Poisson's equation on the square, ``Δg = f`` on ``[-1, 1]²`` with ``g = 0`` on the boundary: exact data.

* :mod:`.solver` -- the batched Chebyshev collocation solver (fast diagonalisation);
* :mod:`.norms` -- ``L²`` norms and errors of functions given as Chebyshev coefficient matrices;
* :mod:`.sources` -- the seeded random sources of the training and held-out laws, and their exact solutions;
* :mod:`.families` -- source families beyond the training law (spectra, structure and amplitudes).
"""

from .norms import l2_norm_sq, pad, relative_l2
from .solver import PoissonSolver, evaluate_2d
from .sources import PoissonData, Splits, solutions, splits, training_law

__all__ = [
    "PoissonData",
    "PoissonSolver",
    "Splits",
    "evaluate_2d",
    "l2_norm_sq",
    "pad",
    "relative_l2",
    "solutions",
    "splits",
    "training_law",
]
