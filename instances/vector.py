"""Fixed-size vectors: re-exported from :mod:`applicative` (the structure every contract default describes)."""

from applicative import Vector

__all__ = ["Vector"]
