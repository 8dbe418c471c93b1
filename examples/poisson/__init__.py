"""Poisson's equation on the square: exact spectral data and the Funcformer trained to solve it.

``python -m examples.poisson`` runs the main job (see :mod:`examples.poisson.__main__`);
:func:`load` returns a trained model from its run directory and :func:`solve` applies it to a source.
"""

from training.tasks.poisson import PoissonModel, load, solve

__all__ = ["PoissonModel", "load", "solve"]
