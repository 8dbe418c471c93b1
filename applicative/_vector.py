"""Fixed-size vectors: the index set ``{0, ..., n-1}`` with the counting measure.

The simplest structure and the one every contract default describes: values
stored at their positions, every position weighing one, positions in order.
Every kernel is derived (:mod:`applicative._kernels`), and over the real ring
the derived kernels are torch's own: ``contract`` is ``matmul``, ``affine`` is
``nn.functional.linear``, ``softmax``, ``layer_norm`` and attention likewise.

Declared nominally, one class per axis, so that mypy tells axes apart::

    class Model(Vector):
        size = 64

``Vector(n)`` makes an anonymous axis of size ``n`` (equal to any other
anonymous ``Vector(n)``, never to ``Model``).
"""

from __future__ import annotations

from typing import ClassVar

from ._sized import Sized
from ._structure import Structure


class Vector(Sized):
    """A vector of ``size`` values; ``pure`` is a broadcast, ``counit`` is a sum."""

    ordered: ClassVar[bool] = True

    def stack(self, copies: int) -> Structure:
        return Vector(self.size * copies)
