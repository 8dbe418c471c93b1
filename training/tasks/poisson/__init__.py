"""Poisson's equation on the square: exact spectral data, and the Funcformer operator that solves it.

:func:`load` returns a trained :class:`PoissonModel` from a run directory (``python -m examples.poisson``)
and :func:`solve` applies it to a source given as a callable or as values on a grid.
"""

from .config import PRESETS, Config
from .model import SPEC, PoissonModel, load, solve

__all__ = ["PRESETS", "SPEC", "Config", "PoissonModel", "load", "solve"]
