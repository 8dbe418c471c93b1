"""Darcy flow, ``-∇·(a∇u) = 1`` on ``[0, 1]²`` with ``u = 0`` on the boundary: solver, data and the Funcformer.

``python -m examples.darcy`` trains the operator ``a ↦ u`` for one coefficient family (see
:mod:`examples.darcy.__main__`); :func:`load` returns a trained model from its run directory.
"""

from training.tasks.darcy import DarcyModel, load

__all__ = ["DarcyModel", "load"]
