"""Arithmetic circuits mod 10 with shared subexpressions: ``python -m examples.circuits``."""
