"""``python -m examples.operator``: the Funcformer on your own operator data (:mod:`training.tasks.operator`)."""
