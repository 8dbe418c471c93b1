"""A graph task that needs two hops: the generic encoder as a graph Transformer against PyTorch Geometric.

* :mod:`.data` -- seeded random graphs and their two-hop labels; :mod:`.model` -- the encoder with
  :class:`instances.EdgeSoftmax` and PyG's TransformerConv and GATConv at about equal parameters;
* :mod:`.config`, :mod:`.train`, :mod:`.program` -- the run's hyper-parameters, the training task and what
  ``python -m examples.graph_hops`` does.
"""

from .config import MODELS, PRESETS, Config, ModelKind

__all__ = ["MODELS", "PRESETS", "Config", "ModelKind"]
