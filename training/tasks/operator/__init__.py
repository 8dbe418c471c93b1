"""The operator task: input functions to output functions, sampled on a user's grid.

* :mod:`.config` -- the run's hyper-parameters, every field bounded;
* :mod:`.shape` -- the data's :class:`Shape` (axes, channels) a model is built for, and its record;
* :mod:`.model` -- :func:`~.model.build`: :class:`models.OperatorModel` from a config and a shape, and the
  task's :data:`SPEC` for :func:`training.load`;
* :mod:`.prediction` -- :func:`predict`, which evaluates the predicted functions anywhere;
* :mod:`.task` -- the training task for the shared loop, and :func:`train`; :mod:`.rollout` -- time-stepping;
* :mod:`.program` -- what ``python -m examples.operator`` does; :mod:`.fno` -- neuraloperator's FNO as the peer by
  each problem's recipe; :mod:`.peers` -- the same FNO configured the ordinary way (raw data, relative L², cosine);
  :mod:`.unet` -- a U-Net peer; :mod:`.paper_fno` -- the FNO paper's own FNO-1D, written from its equations;
  :mod:`.linear` -- the least-squares linear map on the same samples, the baseline a figure is read beside.

The data come as checked :class:`operators.dataset.Samples` (:func:`operators.dataset.samples` from arrays,
:func:`operators.dataset.from_file` from ``.pt``, ``.npz``, ``.mat`` or HDF5 files); ``python -m examples.operator``
is the command line. Darcy flow (``python -m examples.darcy``) is this task on generated data with the ``darcy``
preset.
"""

from models.operator import OperatorModel
from training.errors import InputError

from .config import PRESETS, Config
from .model import SPEC, build
from .prediction import predict
from .shape import Shape
from .task import OperatorTask, Run, errors, train

__all__ = [
    "PRESETS",
    "SPEC",
    "Config",
    "InputError",
    "OperatorModel",
    "OperatorTask",
    "Run",
    "Shape",
    "build",
    "errors",
    "predict",
    "train",
]
