"""The derived kernels that are free functions of a structure, on raw tensors (the mathematics of
``applicative._kernels``).

A :class:`~applicative.Structure` keeps as methods only the kernels it may override (``pure``, ``fmap``,
``zip_with``, ``counit``, ``contract``, ``affine``). These are derived from its contract and nothing else, and
use those methods (overrides included):

* :func:`positions` ``(s, x, dim, points=None)`` -- ``P x``: stored values along ``dim`` at the positions
  (``points`` of them on an oversampled grid); the identity for a structure without a
  :attr:`~applicative.Structure.basis`;
* :func:`stored` ``(s, v, dim)`` -- ``S v``: values at positions back to the stored values;
* :func:`grid` ``(s)`` -- how many positions make the product of two stored values exact (``size`` without a basis);
* :func:`mass` ``(s, like)`` -- ``counit (pure 1) = Σ_j w_j``, shaped ``like.shape[:-1]``
  (``n`` for a vector, 2 for a series on ``[-1, 1]``);
* :func:`cleared` ``(s, x, dim)`` -- ``x`` with its values at the positions of weight zero (padding) set to
  ``0`` by selection, so that neither they nor their gradients reach anything;
* :func:`softmax` ``(s, x, dim)`` -- ``e^x / counit(e^x)`` along ``dim``, against the measure;
* :func:`layer_norm` ``(s, x, weight, bias, eps)`` -- layer norm over the last axis, mean and variance by the
  measure (``x`` ``(..., n)``, ``weight`` and ``bias`` ``(n,)`` or ``None``);
* :func:`batch_shape` ``(s)`` -- the batch of ``s``'s per-example data (a :class:`~applicative.DataStructure`'s),
  ``()`` for a structure without any.

On :class:`~applicative.Field` values use the typed operations of :mod:`applicative` instead
(:func:`~applicative.layer_norm`, :func:`~applicative.counit`, attention, ...).
"""

from ._kernels import batch_shape as batch_shape
from ._kernels import cleared as cleared
from ._kernels import grid as grid
from ._kernels import layer_norm as layer_norm
from ._kernels import mass as mass
from ._kernels import positions as positions
from ._kernels import softmax as softmax
from ._kernels import stored as stored

__all__ = ["batch_shape", "cleared", "grid", "layer_norm", "mass", "positions", "softmax", "stored"]
