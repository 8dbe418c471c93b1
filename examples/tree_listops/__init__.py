"""ListOps on trees: the Treeformer against a Vector Transformer over the flattened tokens.

``python -m examples.tree_listops`` generates the data (seeded, no download),
trains both models at equal parameter count and prints both test accuracies.
"""
