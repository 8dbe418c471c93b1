"""Character-level language models: ``python -m examples.lm`` over :mod:`training.tasks.lm`."""
