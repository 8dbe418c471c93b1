"""Runnable programs built on the library: ``python -m examples.poisson`` is the main job."""
