"""Darcy flow on the unit square: ``python -m examples.darcy`` over :mod:`training.tasks.darcy`."""
