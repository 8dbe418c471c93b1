"""Darcy flow on the unit square: locally generated data, and the operator task's model trained on it."""

from .config import PRESETS, Config
from .model import SPEC, load

__all__ = ["PRESETS", "SPEC", "Config", "load"]
