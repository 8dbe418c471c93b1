"""Poisson's equation on the square: exact spectral data and the Funcformer trained to solve it.

``python -m examples.poisson`` runs the main job (see :mod:`examples.poisson.__main__`).
"""
