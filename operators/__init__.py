"""The PDE side of operator learning: grids and their layouts, reference solvers, data generators and readers.

Pure numerics, between :mod:`models` and :mod:`training` (it imports neither ``training`` nor ``examples``):

* :mod:`.layout` -- the checks that a file's grid fits the axes declared for it (the layouts and boundaries
  themselves are values of :mod:`instances.layouts` and :mod:`instances.axes`, re-exported there);
* :mod:`.burgers`, :mod:`.kdv`, :mod:`.navier_stokes` -- pseudo-spectral solvers on the periodic domain, checked
  against exact solutions (Cole--Hopf, the KdV soliton, Taylor--Green), and seeded data generators (pairs, and
  Burgers trajectories on a ``(T, X)`` grid); :mod:`.flux_1d` -- the 1D time steppers they share (IF-RK4, ETDRK4).
* :mod:`.random_fields` -- FNO's Gaussian random fields (conventions stated); :mod:`.cache` -- the checked data cache;
  :mod:`.statistics` -- what generated data look like beside the exact figures.
* :mod:`.streams` -- data larger than memory: a file's pairs read a batch at a time (a ``Dataset``, seeded global
  batches sliced per rank, one streaming pass of statistics and checks); :mod:`.heat` -- the exact heat map, data
  of any size written a block at a time.
* :mod:`.poisson`, :mod:`.darcy` -- the exact Poisson solver on the square (Chebyshev collocation) and its source
  laws; the Darcy finite-difference solver and its random coefficients.
"""

from . import burgers as burgers
from . import kdv as kdv
from . import navier_stokes as navier_stokes
from . import random_fields as random_fields
from .burgers import BurgersData as BurgersData
from .cache import CacheError as CacheError
