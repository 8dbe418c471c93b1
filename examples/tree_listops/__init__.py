"""ListOps on trees: ``python -m examples.tree_listops`` over :mod:`training.tasks.tree_listops`."""
