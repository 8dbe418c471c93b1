"""The tasks the library ships: each one's model, config and data, and its :class:`~training.TaskSpec`.

A task's package holds what a trained model needs at prediction time (the model, its config, the data
helpers it reads); the programs that train them are in the checkout's ``examples/``.
"""
