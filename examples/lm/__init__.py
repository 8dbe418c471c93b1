"""Character-level language models from the generic parts, on text that ships with Python.

``python -m examples.lm --model gpt|relu|softplus|triangular`` trains a causal decoder (see :mod:`.__main__`).
"""

from training.tasks.lm import CharLM, load

__all__ = ["CharLM", "load"]
