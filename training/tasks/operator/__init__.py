"""The operator task: input functions to output functions, sampled on a user's grid.

* :mod:`.config` -- the run's hyper-parameters, every field bounded;
* :mod:`.shape` -- the data's :class:`Shape` (axes, channels) a model is built for;
* :mod:`.model` -- :class:`OperatorModel` (a Fourier series on each periodic axis, a Chebyshev series on each
  bounded one, the Funcformers), with the grid reader in :mod:`.reader` and its cost in :mod:`.cost`;
* :mod:`.predict` -- :func:`predict`, which evaluates the predicted functions anywhere;
* :mod:`.train` -- the training task for the shared loop, and :func:`train`; :mod:`.rollout` -- time-stepping;
* :mod:`.program` -- what ``python -m examples.operator`` does; :mod:`.fno` -- neuraloperator's FNO as the peer;
  :mod:`.linear` -- the least-squares linear map on the same samples, the baseline a figure is read beside.

The data come as checked :class:`operators.dataset.Samples` (:func:`operators.dataset.samples` from arrays,
:func:`operators.dataset.from_file` from ``.pt``, ``.npz``, ``.mat`` or HDF5 files); ``python -m examples.operator``
is the command line.
"""

from training.errors import InputError

from .config import PRESETS, Config
from .model import SPEC, OperatorModel
from .predict import predict
from .shape import Shape
from .train import OperatorTask, Run, errors, train

__all__ = [
    "PRESETS",
    "SPEC",
    "Config",
    "InputError",
    "OperatorModel",
    "OperatorTask",
    "Run",
    "Shape",
    "errors",
    "predict",
    "train",
]
