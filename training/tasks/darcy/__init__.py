"""Darcy flow on the unit square: locally generated data and the Funcformer operator trained on it."""

from .config import PRESETS, Config
from .model import SPEC, DarcyModel, load

__all__ = ["PRESETS", "SPEC", "Config", "DarcyModel", "load"]
