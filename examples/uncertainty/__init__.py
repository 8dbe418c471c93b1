"""Regression with uncertainty: ``python -m examples.uncertainty`` over :mod:`training.tasks.uncertainty`."""
