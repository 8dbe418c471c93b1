"""Cross-modal attention: scattered points -> a function, a low-resolution image -> a function of two variables.

* :mod:`.config` -- the run's hyper-parameters and presets; :mod:`.data` -- seeded random smooth functions,
  sampled as scattered points or as an image;
* :mod:`.model` -- the two :class:`models.CrossModal` models; :mod:`.train` -- the training task and the
  held-out errors; :mod:`.baselines` -- scipy's interpolators and the Bayes-optimal estimate;
* :mod:`.program` -- what ``python -m examples.cross_modal`` does.
"""

from .config import PRESETS, TASKS, Config, TaskKind
from .model import GridModel, PointsModel

__all__ = ["PRESETS", "TASKS", "Config", "GridModel", "PointsModel", "TaskKind"]
