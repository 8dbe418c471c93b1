"""Cross-modal attention: ``python -m examples.cross_modal`` over :mod:`training.tasks.cross_modal`."""
