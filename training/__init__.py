"""One training loop for every task: validated configs, safe atomic checkpoints, resume, signals.

* :mod:`.config` -- a frozen dataclass config, parsed from ``FIELD=VALUE`` strings and validated
  field by field (types, ranges, literal choices) before any work;
* :mod:`.checkpoint` -- checkpoints hold tensors and plain data only: written atomically (a full disk
  says which checkpoint is kept), read by one reader (``weights_only=True``: a hostile file runs
  nothing) that checks structure, finiteness, ``step`` within ``steps`` and shapes against the model,
  and fails naming the file;
* :mod:`.cli` -- the command-line boundary: argparse errors in one line, and option types
  (``threads``, ``seed``, ``out_dir``, ``writable_dir``, ``output_file``, ``bounded``) checked before any work;
* :mod:`.rundir` -- the run directory: every check before anything is written, locked against a
  second run, owned by one program;
* :mod:`.schedule` -- the one-cycle learning-rate schedule as a pure function of a run's progress
  (:class:`OneCycle` drives it by step count, for any length);
* :mod:`.fingerprint` -- what a run trained on, recorded in its checkpoints: a resume on other data is refused;
* :mod:`.loop` -- :func:`fit`: periodic evaluation, checkpoints, bit-identical resume, divergence -> an error
  that says what was kept; :mod:`.progress` -- its progress bar or lines; :mod:`.signals` -- SIGINT/SIGTERM ->
  checkpoint then stop (:class:`Interrupted`);
* :mod:`.distributed` -- data parallel under ``torchrun`` (DDP; gloo on CPU, NCCL on CUDA);
* :mod:`.options` -- the options every training program shares (``--preset``, ``--config``, ``--steps``,
  ``--out``, ``--device``, ``--threads``, ``--no-progress``, and ``--FIELD`` for each config field);
* :mod:`.threads` -- the default thread count, by the model's size;
* :mod:`.denormals` -- subnormal floats flushed to zero on the CPU during a run (their arithmetic is slow);
* :mod:`.registry` -- what a checkpoint holds (task, model class, config, version) and :func:`load`, the one
  route from a run directory to a ready model, for every task in :mod:`training.tasks` or :func:`register` ed;
  :func:`check_meta`, the one rule by which resuming and loading both read a checkpoint's metadata;
* :mod:`.budget` -- a memory :class:`Budget`: a model's parameters and memory estimated from its config
  alone (:class:`Estimate`), a data file's from its header (:func:`~.budget.check_arrays`), refused past the
  budget in one line before anything is allocated.

Every user error is a :class:`UserError`: one line at the command line, never a traceback.
"""

from .budget import Budget, BudgetError, Estimate
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .cli import Parser, run_cli
from .config import Checked, ConfigError, at_least, between, describe, override, validate
from .denormals import denormals_flushed, flush_denormals
from .distributed import SINGLE, Ranks, check_batch, device_of, setup, teardown
from .errors import DataError, InputError, UserError
from .fingerprint import fingerprint
from .loop import (
    Collapsed,
    Diverged,
    FitOptions,
    Optimised,
    Record,
    Schedule,
    Task,
    Trained,
    Watched,
    check_resume,
    fit,
    fit_config,
)
from .registry import TaskSpec, check_meta, load, register, task_names
from .rundir import RunDir, RunDirError
from .schedule import OneCycle
from .signals import Interrupted
from .threads import default_threads

__all__ = [
    "SINGLE",
    "Budget",
    "BudgetError",
    "Checked",
    "CheckpointError",
    "Collapsed",
    "ConfigError",
    "DataError",
    "Diverged",
    "Estimate",
    "FitOptions",
    "InputError",
    "Interrupted",
    "OneCycle",
    "Optimised",
    "Parser",
    "Ranks",
    "Record",
    "RunDir",
    "RunDirError",
    "Schedule",
    "Task",
    "TaskSpec",
    "Trained",
    "UserError",
    "Watched",
    "at_least",
    "between",
    "check_batch",
    "check_meta",
    "check_resume",
    "default_threads",
    "denormals_flushed",
    "describe",
    "device_of",
    "fingerprint",
    "fit",
    "fit_config",
    "flush_denormals",
    "load",
    "load_checkpoint",
    "override",
    "register",
    "run_cli",
    "save_checkpoint",
    "setup",
    "task_names",
    "teardown",
    "validate",
]
