"""One training loop for every example: validated configs, safe atomic checkpoints, resume, signals.

* :mod:`.config` -- a frozen dataclass config, parsed from ``FIELD=VALUE`` strings and validated
  field by field (types, ranges, literal choices) before any work;
* :mod:`.checkpoint` -- checkpoints hold tensors and plain data only: written atomically (a full disk
  says which checkpoint is kept), read by one reader (``weights_only=True``: a hostile file runs
  nothing) that checks structure, finiteness, ``step`` within ``steps`` and shapes against the model,
  and fails naming the file; :func:`~.checkpoint.load_model` is the ``load(run_dir)`` route;
* :mod:`.cli` -- the command-line boundary: argparse errors in one line, and option types
  (``threads``, ``seed``, ``out_dir``, ``writable_dir``, ``output_file``, ``bounded``) checked before any work;
* :mod:`.rundir` -- the run directory: created and tested for writing up front, locked against a
  second run;
* :mod:`.loop` -- :func:`fit`: progress bar, periodic evaluation, checkpoints, bit-identical resume,
  SIGINT/SIGTERM -> checkpoint then stop, divergence -> an error that says what was kept;
* :mod:`.distributed` -- data parallel under ``torchrun`` (DDP; gloo on CPU, NCCL on CUDA).

Every user error is a :class:`UserError`: one line at the command line, never a traceback.
"""

from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .cli import Parser, run_cli
from .config import ConfigError, at_least, between, describe, override, validate
from .distributed import SINGLE, Ranks, check_batch, device_of, setup, teardown
from .errors import UserError
from .loop import Diverged, Interrupted, Record, Schedule, Task, Trained, check_resume, fit, fit_config
from .rundir import RunDir, RunDirError

__all__ = [
    "SINGLE",
    "CheckpointError",
    "ConfigError",
    "Diverged",
    "Interrupted",
    "Parser",
    "Ranks",
    "Record",
    "RunDir",
    "RunDirError",
    "Schedule",
    "Task",
    "Trained",
    "UserError",
    "at_least",
    "between",
    "check_batch",
    "check_resume",
    "describe",
    "device_of",
    "fit",
    "fit_config",
    "load_checkpoint",
    "override",
    "run_cli",
    "save_checkpoint",
    "setup",
    "teardown",
    "validate",
]
