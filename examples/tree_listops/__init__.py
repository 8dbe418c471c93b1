"""ListOps on trees: the Treeformer against a Vector Transformer over the flattened tokens, and a learned fold.

``python -m examples.tree_listops`` generates the data (seeded, no download), trains the models at equal
parameter count with the shared loop (checkpoints, resume) and prints their test accuracies (see
:mod:`examples.tree_listops.__main__`); :func:`load` returns a trained model from its run directory.
"""

from training.tasks.tree_listops import ListOpsModel, load

__all__ = ["ListOpsModel", "load"]
