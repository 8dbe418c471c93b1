"""Character-level causal language models on the standard library's documentation."""

from .config import PRESETS, Config
from .model import SPEC, CharLM, load

__all__ = ["PRESETS", "SPEC", "CharLM", "Config", "load"]
