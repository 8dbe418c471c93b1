"""Arithmetic circuits mod 10 with shared subexpressions: the DAG fold against the tree fold on the unrolled tree.

* :mod:`.data` -- seeded circuits, as :class:`instances.DAG` batches and as unrolled :class:`instances.Expressions`;
* :mod:`.model` -- the classifiers: :class:`models.DAGFold` or :class:`models.TreeFold` with the same node cell,
  or the message-passing peer (:mod:`.gnn`, PyTorch Geometric: the ``bench`` extra);
* :mod:`.config`, :mod:`.train`, :mod:`.program` -- the run's hyper-parameters, the training task and what
  ``python -m examples.circuits`` does.
"""

from .config import MODELS, PRESETS, Config, ModelKind
from .model import Classifier

__all__ = ["MODELS", "PRESETS", "Classifier", "Config", "ModelKind"]
