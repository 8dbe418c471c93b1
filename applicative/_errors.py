"""The library's one exception type."""

from __future__ import annotations


class StructureError(ValueError):
    """Values do not line up: mismatched structures, shapes, dtypes, devices or invalid data.

    Messages say what was expected, what came, and how to fix it.
    """
