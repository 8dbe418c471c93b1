"""Poisson's equation on the square: ``python -m examples.poisson`` over :mod:`training.tasks.poisson`."""
