"""Every boundary answers in one line: each program of ``examples/`` (and the law checker) against bad input.

The catalogue below runs each program as a subprocess (cwd a fresh temporary directory) on inputs a
hostile or careless user gives -- bad seeds, rates, sizes past their bounds or past the memory budget,
thread counts, output paths, a run directory of another program, planted and damaged checkpoints,
checkpoints whose metadata is missing, partial or of another task, class or version -- and asserts what
the project promises at its command lines: exit status 2, exactly one line on stderr naming the problem,
no traceback, and no file written outside ``--out``. Every case fails while its arguments are checked,
before any data is generated, so the catalogue runs in seconds per program.

A checkpoint is data, not orders: checkpoints of every task whose config asks for absurd sizes (past
their bounds, or within them but past the budget) are refused by :func:`training.load` in one line naming
the file and the field, each timed (under a second) and its memory growth measured (under 100 MB).

Every case also leaves ``--out`` as it found it -- absent if it was, its files unchanged if not: a run directory is
claimed only once every check has passed. (How long a refusal takes is measured by ``benchmarks/refusals.py``
beside the same program's ``--help``, not asserted here: on a shared machine a wall time is noise.) Among the
cases: a resume of other data or under another budget, a ``--out`` that is a user's folder or whose ``.program`` is
a link to ``/etc/passwd``, a FIFO where a checkpoint or a data file should be, HDF5 files whose values live in other
files or would grow past the memory budget, values a float32 model cannot square, and numbers that underflow.

A property test then mutates a real (tiny) checkpoint -- keys dropped, types and shapes changed, NaN
injected, an impossible step -- and asserts that resuming from it is one :class:`CheckpointError` that
names the file, and that ``load`` refuses it the same way. The library's own entry points (``predict``,
``solve``, ``load``, the law checker, ListOps models) refuse what they cannot answer with the library's own error
types, each within a second.

A new program joins by one line in :data:`PROGRAMS` (its module, the options it has, quick arguments).
"""

from __future__ import annotations

import copy
import errno
import hashlib
import importlib
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import training
from applicative import StructureError
from instances import Distribution
from operators.poisson import sources
from training import CheckpointError, load_checkpoint
from training.tasks import lm, poisson
from training.tasks.poisson import data, train
from training.tasks.poisson.config import PRESETS
from training.tasks.poisson.model import CHECKPOINT

ROOT = Path(__file__).resolve().parents[1]
OUT = "run"  # every case's --out, relative to its temporary working directory


@dataclass(frozen=True)
class Program:
    """A program under test: its module, quick arguments, the shared options it has, where it checkpoints, and the
    task its checkpoints hold (a :func:`training.load` task: ``meta`` names it)."""

    module: str
    quick: tuple[str, ...] = ()
    has: frozenset[str] = frozenset()
    checkpoint: str | None = None  # relative to --out
    task: str | None = None


TRAINING = frozenset({"config", "out", "checkpoint"})
TASK = TRAINING | {"meta", "sizes"}  # a training.load task's program: its checkpoints record meta; a model's sizes
DATA = TASK | {"data"}  # and its checkpoints record the training data's fingerprint
QUICK = ("--preset", "tiny", "--no-progress")
# fmt: off
#: every program with a command line: a new one joins by one line
PROGRAMS = [
    Program("examples.poisson", (*QUICK, "--threads", "1"), DATA | {"threads", "cache"}, "checkpoint.pt", "poisson"),
    Program("examples.darcy", (*QUICK, "--threads", "1"), TASK | {"threads"}, "checkpoint.pt", "darcy"),
    Program("examples.lm", QUICK, DATA, "checkpoint.pt", "lm"),
    Program("examples.tree_listops", (*QUICK, "--models", "vector"), DATA | {"threads"}, "vector/checkpoint.pt", "tree_listops"),  # noqa: E501
    Program("examples.cross_modal", QUICK, TRAINING | {"threads"}, "checkpoint.pt"),
    Program("examples.uncertainty", QUICK, frozenset({"config", "threads", "json"})),
    Program("examples.observer", QUICK, TRAINING | {"threads"}, "checkpoint.pt"),
    Program("examples.graph_signal", ("--steps", "1")),
    Program("examples.quantum", (), frozenset({"seed"})),
    Program("examples.circuits", (*QUICK, "--models", "dag"), TRAINING | {"threads", "json"}, "dag/checkpoint.pt"),
    Program("examples.graph_hops", (*QUICK, "--models", "ours"), TRAINING | {"threads"}, "ours/checkpoint.pt"),
    Program("examples.semirings", (), frozenset({"seed"})),
    Program("examples.pde_data", ("--burgers-counts", "1", "1", "--ns-counts", "1", "1"), frozenset({"threads", "cache"})),  # noqa: E501
    Program("applicative.laws", ("instances:LOG", "--examples", "1")),  # the law checker
    Program("examples.operator", ("--train", str(ROOT / "tests" / "data" / "operator_tiny.npz"), *QUICK, "--threads", "1"), TRAINING | {"threads"}, "checkpoint.pt"),  # noqa: E501
]
# fmt: on

Prepare = Callable[[Path, Program], None]


@dataclass(frozen=True)
class Case:
    """A bad input: the options a program needs for it, the arguments, what stderr must say, a setup step."""

    name: str
    needs: frozenset[str]
    argv: tuple[str, ...]
    says: str
    prepare: Prepare | None = None
    outside: tuple[str, ...] = field(default=())  # what the setup itself put outside --out
    alone: bool = False  # without the program's quick arguments
    never: str | None = None  # what stderr must not say (a file's contents)


def _plant(blob: Any) -> Prepare:
    """A run of this very program in ``--out`` whose checkpoint is ``blob`` (the checkpoint swapped, or damaged)."""

    def prepare(cwd: Path, program: Program) -> None:
        assert program.checkpoint is not None
        path = cwd / OUT / program.checkpoint
        path.parent.mkdir(parents=True)
        _own(cwd, program)
        torch.save(blob, path)

    return prepare


def _own(cwd: Path, program: Program) -> None:
    """``--out`` exists and is a run of ``program`` (its ``.program`` says so)."""
    (cwd / OUT).mkdir(exist_ok=True)
    (cwd / OUT / ".program").write_text(f"python -m {program.module}\n")


def _plant_run(steps: int = 0, data: bool = False) -> Prepare:
    """A checkpoint of this program's own quick run (its tiny config and meta), written under ``steps`` more
    steps and stopped at step 1, or (``data``) on other data: what a resume must refuse."""

    def prepare(cwd: Path, program: Program) -> None:
        assert program.task is not None
        config = training.describe(importlib.import_module(f"training.tasks.{program.task}").PRESETS["tiny"])
        if program.task == "tree_listops":
            config["model"] = "vector"
        config["steps"] += steps
        blob = {**_RUN, "config": config, "meta": training.registry.spec_of(program.task).meta()}
        if data:
            blob["data"] = {"source": "other.npz", "x_shape": "4x16", "x_dtype": "float32", "digest": "0" * 32}
        _plant(blob)(cwd, program)

    return prepare


def _fifo(name: str, owned: bool = False) -> Prepare:
    """A FIFO at ``name`` (relative to the case's directory): a reader that opened it would wait for ever."""

    def prepare(cwd: Path, program: Program) -> None:
        if owned:
            _own(cwd, program)
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(cwd / name)

    return prepare


def _odd_checkpoint(kind: str) -> Prepare:
    """A run of this program whose checkpoint is a FIFO (``fifo``: a reader would wait for ever) or a directory."""

    def prepare(cwd: Path, program: Program) -> None:
        assert program.checkpoint is not None
        _own(cwd, program)
        path = cwd / OUT / program.checkpoint
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()

    return prepare


def _owner_link(target: str) -> Prepare:
    """``--out`` whose ``.program`` is a symbolic link to ``target`` (``/etc/passwd``)."""

    def prepare(cwd: Path, program: Program) -> None:
        (cwd / OUT).mkdir()
        (cwd / OUT / ".program").symlink_to(target)

    return prepare


def _folder(cwd: Path, program: Program) -> None:
    """``--out`` is a user's own folder: files, and no ``.program``."""
    (cwd / OUT).mkdir()
    (cwd / OUT / "thesis.tex").write_text("\\documentclass{article}\n")


def _plant_meta(meta: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Prepare:
    """A run's checkpoint whose ``meta`` is ``meta(the program's task's own meta)`` (``None``: no meta at all)."""

    def prepare(cwd: Path, program: Program) -> None:
        assert program.task is not None
        said = meta(training.registry.spec_of(program.task).meta())
        _plant(_RUN if said is None else {**_RUN, "meta": said})(cwd, program)

    return prepare


def _other(meta: dict[str, Any]) -> dict[str, Any]:
    """The meta of another task than ``meta``'s."""
    return training.registry.spec_of("darcy" if meta["task"] != "darcy" else "poisson").meta()


def _owned(by: str) -> Prepare:
    """``--out`` exists and holds a run of the program ``by``."""

    def prepare(cwd: Path, program: Program) -> None:
        (cwd / OUT).mkdir()
        (cwd / OUT / ".program").write_text(by + "\n")

    return prepare


class _Payload:
    """Unpickling this runs ``open("pwned", "w")``: what a planted checkpoint would try."""

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, ("pwned", "w"))


def _file(name: str, mode: int | None = None, directory: bool = False, text: str = "not a directory") -> Prepare:
    def prepare(cwd: Path, program: Program) -> None:
        path = cwd / name
        if directory:
            path.mkdir()
        else:
            path.write_text(text)
        if mode is not None:
            path.chmod(mode)

    return prepare


def _arrays(name: str, a: Any, u: Any) -> Prepare:
    """Write ``name`` (``.npz``) holding ``a`` and ``u`` into the case's working directory."""

    def prepare(cwd: Path, program: Program) -> None:
        np.savez(cwd / name, a=a, u=u)

    return prepare


def _link(name: str, target: str) -> Prepare:
    def prepare(cwd: Path, program: Program) -> None:
        (cwd / name).symlink_to(target)

    return prepare


def _h5(name: str, kind: str) -> Prepare:
    """An HDF5 file ``name`` whose outputs ``u`` are ``kind``: stored in another file (``external``), a view of another
    file (``virtual``), an external link, or (``bomb``) never written: a few KB that read back as 16 GB."""

    def prepare(cwd: Path, program: Program) -> None:
        import h5py

        a = np.sin(np.pi * np.arange(16) / 15)[None] * np.arange(1, 5)[:, None]
        with h5py.File(cwd / "other.h5", "w") as f:
            f["u"] = a
        with h5py.File(cwd / name, "w") as f:
            if kind == "bomb":
                for key in ("a", "u"):
                    f.create_dataset(key, shape=(1000, 1000, 1000), dtype="f8", chunks=(1, 100, 1000), compression=9)
                return
            f["a"] = a
            if kind == "external":
                f.create_dataset("u", shape=(4, 16), dtype="f8", external=[("/dev/urandom", 0, 4 * 16 * 8)])
            elif kind == "virtual":
                layout = h5py.VirtualLayout(shape=(4, 16), dtype="f8")
                layout[:] = h5py.VirtualSource(str(cwd / "other.h5"), "u", shape=(4, 16))
                f.create_virtual_dataset("u", layout)
            else:
                f["u"] = h5py.ExternalLink(str(cwd / "other.h5"), "u")

    return prepare


_X = np.arange(16) / 16  # i/P: the x = 1 end absent
_DIRICHLET = np.sin(np.pi * _X)[None, :, None] * np.sin(np.pi * _X)[None, None, :] * np.ones((4, 1, 1))
_PERIODIC = np.cos(2 * np.pi * np.arange(16) / 15)[None] * np.arange(1, 5)[:, None]  # i/(P-1): 0 and 1 both stored
_NAN_A = np.where(np.arange(16)[None, :] == 3, np.nan, np.ones((4, 16)))
_WAVES = np.sin(np.pi * np.arange(16) / 15)[None] * np.arange(1, 5)[:, None]  # zero at both ends: any layout's
_ZERO_SAMPLE = _WAVES * (np.arange(4) != 2)[:, None]  # sample 2 all zero: its relative error is 0/0
_PEAKS = np.abs(_WAVES).max(1)  # each sample's largest value


def _needs(*options: str) -> frozenset[str]:
    return frozenset(options)


_RUN = {"format": 1, "config": {"steps": 5}, "step": 1, "task": {}, "history": [], "elapsed": 0.0}
_NAN = {"model": {"w": torch.full((2,), torch.nan)}}
_RO = os.geteuid() != 0  # root writes anywhere: a read-only directory is no obstacle to it
# fmt: off
#: the shared catalogue: each case runs against every program that has the options it needs
CATALOGUE = [
    Case("unknown option", _needs(), ("--no-such-option",), "unrecognized arguments"),
    Case("seed past the generators", _needs("config"), ("--config", "seed=99999999999999999999999"), "seed="),
    Case("negative seed", _needs("config"), ("--config", "seed=-1"), "seed=-1: must be >= 0"),
    Case("huge learning rate", _needs("config"), ("--config", "lr=1e300"), "lr=1e+300: must be <= 10"),
    Case("steps past memory", _needs("config"), ("--config", "steps=1000000000000"), "steps=1000000000000: must be <= 100000000 (allowed: 1..100000000)"),  # noqa: E501
    Case("width past its bound", _needs("sizes"), ("--config", "width=1000000000"), "width=1000000000: must be <= 8192"),  # noqa: E501
    Case("hidden past its bound", _needs("sizes"), ("--config", "hidden=1000000000"), "hidden=1000000000: must be <= 65536"),  # noqa: E501
    Case("depth past its bound", _needs("sizes"), ("--config", "depth=1000000"), "depth=1000000: must be <= 256"),
    Case("heads past its bound", _needs("sizes"), ("--config", "heads=100000"), "heads=100000: must be <= 256"),
    Case("batch past its bound", _needs("sizes"), ("--config", "batch=10000000"), "batch=10000000: must be <= 65536"),
    Case("a model past the budget", _needs("meta"), ("--config", "width=8192", "--config", "hidden=65536", "--config", "depth=256"), "past the budget of 5.37e+08 parameters and 8 GiB; lower "),  # noqa: E501
    Case("a budget too small", _needs("meta"), ("--memory", "0.00001"), "past the budget of 671 parameters and 10.5 KiB; "),  # noqa: E501
    Case("no memory", _needs("config"), ("--memory", "0"), "argument --memory: 0.0 is out of range"),
    Case("memory not a number", _needs("config"), ("--memory", "lots"), "argument --memory: 'lots' is not a number"),
    Case("--out of another program", _needs("out"), (), "holds a run of python -m examples.other; python -m examples.", _owned("python -m examples.other")),  # noqa: E501
    Case("zero threads", _needs("threads"), ("--threads", "0"), "argument --threads: 0 is out of range"),
    Case("negative threads", _needs("threads"), ("--threads", "-1"), "argument --threads: -1 is out of range"),
    Case("empty --out", _needs("out"), ("--out", ""), "argument --out: empty"),
    Case("--out the current directory", _needs("out"), ("--out", "."), "the current directory"),
    Case("negative seed", _needs("seed"), ("--seed", "-1"), "argument --seed: -1 is out of range"),
    Case("huge seed", _needs("seed"), ("--seed", str(2**70)), "out of range"),
    Case("--cache at a file", _needs("cache"), ("--cache", "f"), "f is a file", _file("f"), ("f",)),
    *([Case("--cache read-only", _needs("cache"), ("--cache", "ro/c"), "not writable", _file("ro", 0o500, True), ("ro",))] if _RO else []),  # noqa: E501
    Case("--json at a directory", _needs("json"), ("--json", "d"), "d is a directory", _file("d", directory=True), ("d",)),  # noqa: E501
    Case("--json under a file", _needs("json"), ("--json", "f/r.json"), "is a file", _file("f"), ("f",)),
    Case("planted pickle", _needs("checkpoint"), (), "refused to load", _plant({"config": {}, "task": _Payload()})),
    Case("step not a number", _needs("checkpoint"), (), "its step is 'abc'", _plant({**_RUN, "step": "abc"})),
    Case("step past steps", _needs("checkpoint"), (), "beyond the 5 steps", _plant({**_RUN, "step": 10**12})),
    Case("task a tensor", _needs("checkpoint"), (), "task state is a Tensor", _plant({**_RUN, "task": torch.zeros(2)})),
    Case("config a list", _needs("checkpoint"), (), "config is a list", _plant({**_RUN, "config": [1]})),
    Case("NaN weights", _needs("checkpoint"), (), "task.model.w holds NaN", _plant({**_RUN, "task": _NAN})),
    # one rule for every reader: what training.load refuses, a resume refuses (tests/test_load.py: the same words)
    Case("checkpoint without meta", _needs("meta"), (), "does not record what it holds (no meta", _plant_meta(lambda m: None)),  # noqa: E501
    Case("empty meta", _needs("meta"), (), "its meta {} has no task (the task's name), model", _plant_meta(lambda m: {})),  # noqa: E501
    Case("meta without model, version", _needs("meta"), (), "has no model (its model class), version", _plant_meta(lambda m: {"task": m["task"]})),  # noqa: E501
    Case("meta of another version", _needs("meta"), (), "version 7), but this library reads", _plant_meta(lambda m: {**m, "version": 7})),  # noqa: E501
    Case("meta of another class", _needs("meta"), (), "(Other, version 1), but this library reads", _plant_meta(lambda m: {**m, "model": "mod.Other", "version": 1})),  # noqa: E501
    Case("another task's checkpoint", _needs("meta"), (), ", not task '", _plant_meta(_other)),
    # numbers mean what they say
    Case("lr underflows", _needs("config"), ("--config", "lr=1e-400"), "lr='1e-400': underflows to 0"),
    Case("lr subnormal", _needs("config"), ("--config", "lr=1e-310"), "a subnormal number loses its precision"),
    Case("lr overflows", _needs("config"), ("--config", "lr=1e400"), "lr='1e400': overflows"),
    # a resume checks what it resumes, and a run directory is claimed last
    Case("resume under another budget", _needs("meta"), (), "stopped at step 1 of its ", _plant_run(steps=5)),
    Case("resume on other data", _needs("data"), (), "it was trained on other.npz (x 4x16 float32), not on ", _plant_run(data=True)),  # noqa: E501
    Case("--out a user's folder", _needs("out"), (), "holds files (thesis.tex) and is no run of python -m examples.", _folder),  # noqa: E501
    Case("--out owned by a link", _needs("out"), (), "has a .program that is not a run's record", _owner_link("/etc/passwd"), never="root"),  # noqa: E501
    Case("a FIFO checkpoint", _needs("checkpoint"), (), "is a FIFO (a named pipe), not a checkpoint file", _odd_checkpoint("fifo")),  # noqa: E501
    Case("a directory checkpoint", _needs("checkpoint"), (), "is a directory, not a checkpoint file", _odd_checkpoint("dir")),  # noqa: E501
]
#: inputs only one program has
SPECIFIC = [
    ("examples.lm", Case("limit below a window", _needs(), ("--config", "limit=5"), "limit=5, context=")),
    ("examples.tree_listops", Case("expressions past memory", _needs(), ("--config", "train=2000000000"), "must be <= 2000000")),  # noqa: E501
    ("examples.uncertainty", Case("examples past memory", _needs(), ("--config", "train=2000000000"), "must be <= 10000000")),  # noqa: E501
    ("examples.quantum", Case("batch past memory", _needs(), ("--batch", "10000000000"), "argument --batch")),
    ("examples.quantum", Case("batch x states past memory", _needs(), ("--batch", "60000", "--qubits", "12"), "at most")),  # noqa: E501
    ("examples.semirings", Case("nodes past memory", _needs(), ("--nodes", "2000000"), "argument --nodes")),
    ("examples.semirings", Case("density not a probability", _needs(), ("--density", "nan"), "--density")),
    ("examples.graph_signal", Case("too few nodes", _needs(), ("--nodes", "2"), "argument --nodes")),
    ("examples.observer", Case("no such activation", _needs(), ("--activation", "relu"), "invalid choice")),
    ("applicative.laws", Case("no such module", _needs(), ("nosuch.module:X",), "no module named 'nosuch'", alone=True)),  # noqa: E501
    ("applicative.laws", Case("module does not parse", _needs(), ("broken:X",), "does not parse", _file("broken.py", text="def f(:\n"), ("broken.py",), True)),  # noqa: E501
    ("applicative.laws", Case("no such ring module", _needs(), ("instances:Vector", "--ring", "nosuch:R"), "no module named 'nosuch'", alone=True)),  # noqa: E501
    ("applicative.laws", Case("ring not a ring", _needs(), ("instances:Vector", "--ring", "instances:Chebyshev"), "not a ring", alone=True)),  # noqa: E501
    ("applicative.laws", Case("no such name", _needs(), ("instances:Nothing",), "no attribute 'Nothing'", alone=True)),
    ("examples.operator", Case("no such file", _needs(), ("--train", "absent.npz"), "absent.npz: no such file")),
    ("examples.operator", Case("unknown file type", _needs(), ("--train", "d.csv"), "unknown file type '.csv'", _file("d.csv", text="1,2"), ("d.csv",))),  # noqa: E501
    ("examples.operator", Case("no such key", _needs(), ("--output-key", "sol"), "no key 'sol'; the file holds a, u")),
    ("examples.operator", Case("NaN in the data", _needs(), ("--train", "n.npz", "--dims", "1"), "NaN or infinite (the first in sample 0)", _arrays("n.npz", _NAN_A, np.ones((4, 16))), ("n.npz",))),  # noqa: E501
    ("examples.operator", Case("counts differ", _needs(), ("--train", "c.npz", "--dims", "1"), "4 input samples (key 'a') but 3 outputs", _arrays("c.npz", np.ones((4, 16)), np.ones((3, 16))), ("c.npz",))),  # noqa: E501
    ("examples.operator", Case("log of zero", _needs(), ("--train", "b.npz", "--dims", "1", "--log-input", "true"), "input values are <= 0", _arrays("b.npz", np.zeros((4, 16)), np.ones((4, 16))), ("b.npz",))),  # noqa: E501
    ("examples.operator", Case("misread grid", _needs(), ("--train", "g.npz", "--boundary", "zero"), "nodes are likely i/P", _arrays("g.npz", _DIRICHLET, _DIRICHLET), ("g.npz",))),  # noqa: E501
    ("examples.operator", Case("end stored twice", _needs(), ("--train", "p.npz", "--layout", "periodic"), "stores the end twice", _arrays("p.npz", _PERIODIC, _PERIODIC), ("p.npz",))),  # noqa: E501
    ("examples.operator", Case("too few samples for the modes", _needs(), ("--config", "modes=40"), "fewer than the 40 coefficients")),  # noqa: E501
    ("examples.operator", Case("no such layout", _needs(), ("--layout", "uniform"), "--layout 'uniform': must be one of")),  # noqa: E501
    ("examples.operator", Case("no such boundary", _needs(), ("--boundary", "dirichlet"), "--boundary 'dirichlet': must be one of periodic, zero, free")),  # noqa: E501
    ("examples.operator", Case("extent not a range", _needs(), ("--extent", "0-1"), "--extent '0-1': expected LO:HI")),
    ("examples.operator", Case("a time in words", _needs(), ("--time", "soon"), "--time 'soon'")),
    ("examples.operator", Case("the old --budget", _needs(), ("--budget", "3000"), "a step count is --steps N, a time --time 10m")),  # noqa: E501
    ("examples.operator", Case("shifts on a bounded axis", _needs(), ("--augment", "shifts"), "no axis has boundary periodic")),  # noqa: E501
    # a data file is only itself
    ("examples.operator", Case("a FIFO as data", _needs(), ("--train", "f.npz"), "f.npz: is a FIFO (a named pipe), not a data file", _fifo("f.npz"), ("f.npz",))),  # noqa: E501
    ("examples.operator", Case("a directory as data", _needs(), ("--train", "d.npz"), "d.npz: is a directory, not a data file", _file("d.npz", directory=True), ("d.npz",))),  # noqa: E501
    ("examples.operator", Case("/dev/zero as data", _needs(), ("--train", "z.npy"), "z.npy: is a device, not a data file", _link("z.npy", "/dev/zero"), ("z.npy",))),  # noqa: E501
    ("examples.operator", Case("HDF5 stored elsewhere", _needs(), ("--train", "e.h5", "--dims", "1"), "key 'u' stores its values in other files ('/dev/urandom')", _h5("e.h5", "external"), ("e.h5", "other.h5"))),  # noqa: E501
    ("examples.operator", Case("HDF5 virtual dataset", _needs(), ("--train", "v.h5", "--dims", "1"), "key 'u' is a virtual dataset", _h5("v.h5", "virtual"), ("v.h5", "other.h5"))),  # noqa: E501
    ("examples.operator", Case("HDF5 external link", _needs(), ("--train", "l.h5", "--dims", "1"), "key 'u' is an external link to", _h5("l.h5", "link"), ("l.h5", "other.h5"))),  # noqa: E501
    ("examples.operator", Case("HDF5 bomb", _needs(), ("--train", "b.h5"), "take about 34,332 MiB in memory once read, over the budget of 8,192 MiB", _h5("b.h5", "bomb"), ("b.h5", "other.h5"))),  # noqa: E501
    ("examples.operator", Case("an output sample of zeros", _needs(), ("--train", "z.npz", "--dims", "1"), "sample 2 has outputs all zero: its relative error is 0/0", _arrays("z.npz", _WAVES, _ZERO_SAMPLE), ("z.npz",))),  # noqa: E501
    ("examples.operator", Case("data near 1e300", _needs(), ("--train", "h.npz", "--dims", "1"), f"sample 3's outputs reach {_PEAKS.max() * 1e300:.3g}, outside [1e-15, 1e+15]", _arrays("h.npz", _WAVES, _WAVES * 1e300), ("h.npz",))),  # noqa: E501
    ("examples.operator", Case("data near 1e-310", _needs(), ("--train", "t.npz", "--dims", "1"), f"sample 0's outputs reach {_PEAKS.min() * 1e-310:.3g}, outside [1e-15, 1e+15]", _arrays("t.npz", _WAVES, _WAVES * 1e-310), ("t.npz",))),  # noqa: E501
    # numbers mean what they say: names, extents, negative values
    ("examples.operator", Case("an empty layout", _needs(), ("--layout", ""), "argument --layout: --layout '': an empty value")),  # noqa: E501
    ("examples.operator", Case("an empty boundary", _needs(), ("--boundary", "zero,"), "--boundary 'zero,': an empty value")),  # noqa: E501
    ("examples.operator", Case("an extent too short", _needs(), ("--extent", "0:1e-320"), "its length 1e-320 is too short")),  # noqa: E501
    ("examples.operator", Case("an extent too wide", _needs(), ("--extent", "0:1e308"), "its ends must lie within ±1e+30")),  # noqa: E501
    ("examples.operator", Case("a negative extent parses", _needs(), ("--extent", "-1:1", "--budget", "soon"), "--budget soon: a step count")),  # noqa: E501
    ("examples.operator", Case("clip underflows", _needs(), ("--config", "clip=1e-400"), "clip='1e-400': underflows to 0")),  # noqa: E501
    # the law checker: sizes, and any way the target ends
    ("applicative.laws", Case("examples past their bound", _needs(), ("instances:Vector", "--examples", "1000000000"), "--examples 1000000000: must be in 1..100000", alone=True)),  # noqa: E501
    ("applicative.laws", Case("a Vector of 10^12", _needs(), ("huge:Huge",), "past the 4,194,304 the law checker draws", _file("huge.py", text="from instances import Vector\n\nclass Huge(Vector):\n    size = 10**12\n"), ("huge.py", "__pycache__"), True)),  # noqa: E501
    ("applicative.laws", Case("a target that exits", _needs(), ("quits:X",), "the check ended (exit status 0) before a verdict", _file("quits.py", text="import os\n\nos._exit(0)\n"), ("quits.py", "__pycache__"), True)),  # noqa: E501
    ("applicative.laws", Case("a target that interrupts", _needs(), ("kbi:X",), "raised KeyboardInterrupt; fix it", _file("kbi.py", text="raise KeyboardInterrupt\n"), ("kbi.py", "__pycache__"), True)),  # noqa: E501
]
# fmt: on


def _cases() -> list[tuple[Program, Case]]:
    by_module = {p.module: p for p in PROGRAMS}
    general = [(p, c) for p in PROGRAMS for c in CATALOGUE if c.needs <= p.has]
    return general + [(by_module[m], c) for m, c in SPECIFIC]


CASES = _cases()


@dataclass(frozen=True)
class Result:
    """A case's exit status, stderr, the files left in its working directory, ``--out`` before and after, its time."""

    code: int
    err: str
    files: set[str]
    before: dict[str, str]
    after: dict[str, str]
    seconds: float


def _snapshot(out: Path) -> dict[str, str]:
    """Everything under ``out`` (nothing if it is absent): each entry's kind and, for a file, its contents' digest."""
    found = {}
    for p in sorted([out, *out.rglob("*")]) if out.exists() or out.is_symlink() else []:
        rel = str(p.relative_to(out.parent))
        if p.is_symlink():
            found[rel] = f"link to {os.readlink(p)}"
        elif p.is_fifo():
            found[rel] = "fifo"
        elif p.is_dir():
            found[rel] = "directory"
        else:
            found[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


def _args(program: Program, case: Case) -> list[str]:
    out = [] if "out" not in program.has or "--out" in case.argv else ["--out", OUT]
    return [*([] if case.alone else program.quick), *out, *case.argv]


def _id(program: Program, case: Case) -> str:
    return f"{program.module.split('.')[-1]}: {case.name}"


def _collect(cwd: Path, code: int, stderr: str, before: dict[str, str], seconds: float) -> Result:
    files = {str(p.relative_to(cwd)) for p in cwd.rglob("*")}
    after = _snapshot(cwd / OUT)
    for p in cwd.rglob("*"):  # let pytest clean up what a case made read-only
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
    return Result(code, stderr, files, before, after, seconds)


def _run_all(cases: list[tuple[Program, Case]], base: Path) -> dict[str, Result]:
    """Each case in a process of its own, forked by ``tests/_fork_runner.py`` (torch imported once)."""
    jobs: list[dict[str, Any]] = []
    before = []
    for i, (program, case) in enumerate(cases):
        cwd = base / f"case{i}"
        cwd.mkdir(parents=True)
        if case.prepare is not None:
            case.prepare(cwd, program)
        before.append(_snapshot(cwd / OUT))
        streams = {k: str(base / f"case{i}.{k}") for k in ("stdout", "stderr")}
        jobs.append({"module": program.module, "argv": _args(program, case), "cwd": str(cwd), **streams})
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    runner = [sys.executable, str(ROOT / "tests" / "_fork_runner.py")]
    done = subprocess.run(runner, input=json.dumps(jobs), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    *_, times, codes = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    return {
        _id(*c): _collect(Path(j["cwd"]), code, Path(j["stderr"]).read_text(), b, t)
        for c, j, code, b, t in zip(cases, jobs, codes, before, times["seconds"], strict=True)
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    """Every case's exit status, stderr and the files left in its working directory."""
    return _run_all(CASES, tmp_path_factory.mktemp("boundaries"))


def _check(program: Program, case: Case, result: Result) -> None:
    err = result.err
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err[-2000:]
    assert result.code == 2, (result.code, err[-2000:])
    assert len(lines) == 1, err
    assert lines[0].startswith(f"python -m {program.module}: error: "), lines[0]
    assert case.says in lines[0], lines[0]
    assert case.never is None or case.never not in err, err
    outside = {f for f in result.files if f.split(os.sep)[0] not in (OUT, *case.outside)}
    assert not outside, f"written outside --out: {sorted(outside)}"
    assert "pwned" not in result.files  # a planted checkpoint ran nothing
    assert result.after == result.before, "--out changed by a refused run (claimed before its checks)"


@pytest.mark.parametrize(("program", "case"), CASES, ids=[_id(p, c) for p, c in CASES])
def test_bad_input_is_one_line(program: Program, case: Case, results: dict[str, Result]) -> None:
    _check(program, case, results[_id(program, case)])


#: a package's ``__main__``, a one-file program, the law checker: the others' entry points run with -m slow
FRESH = ("examples.poisson", "examples.quantum", "applicative.laws")


@pytest.mark.parametrize(
    "program",
    [pytest.param(p, marks=() if p.module in FRESH else pytest.mark.slow, id=p.module) for p in PROGRAMS],
)
def test_a_fresh_interpreter_answers_the_same(program: Program, tmp_path: Path) -> None:
    """The entry point itself, ``python -m MODULE``, in a fresh interpreter (one case per program; ~4 s each)."""
    case = CATALOGUE[0]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", program.module, *_args(program, case)]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    _check(program, case, _collect(tmp_path, done.returncode, done.stderr, {}, 0.0))


def test_every_program_is_in_the_catalogue() -> None:
    """A new program under examples/ must join :data:`PROGRAMS` (the two demos without options aside)."""
    found = {f"examples.{p.stem}" for p in (ROOT / "examples").glob("*.py") if p.stem != "__init__"}
    found |= {f"examples.{p.parent.name}" for p in (ROOT / "examples").glob("*/__main__.py")}
    silent = {"examples.quickstart", "examples.unlawful_distribution"}  # take no arguments, read no files
    assert found - silent == {p.module for p in PROGRAMS if p.module.startswith("examples.")}


# ---- a checkpoint is data, not orders: absurd sizes are refused before anything is allocated ----------------

#: fields made absurd, past their bounds (each alone), and sizes within the bounds that no laptop holds together
ABSURD = {"width": 10**9, "hidden": 10**9, "depth": 10**6, "heads": 10**6}
PAST_BUDGET = {"width": 8192, "hidden": 65536, "depth": 256}
#: the targets: refused in under a second, with under 100 MB of memory growth
SECONDS, GROWTH = 1.0, 100 * 2**20
#: a config within its bounds but past the budget is refused after its model is built on the meta device (the count
#: comes from the model itself), once for the estimate and once per field the refusal tries resetting to name the one
#: that drives it: about a second per build of 256 layers on a loaded two-core host
BUILT_SECONDS = 30.0


def _absurd(task: str, change: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint of ``task`` (its own meta, the tiny preset's config with ``change``) holding no weights at all."""
    module = importlib.import_module(f"training.tasks.{task}")
    config = {**training.describe(module.PRESETS["tiny"]), **change}
    state: dict[str, Any] = {"model": {}}
    if task == "tree_listops":
        config["model"] = "tree-mean"
    if task == "lm":
        state["vocab"] = "abcdefgh"
    if task == "operator":  # the data's shape it was built for: a line of one channel in, one out
        axis = {"layout": "nodes", "lo": 0.0, "hi": 1.0, "boundary": "free"}
        config["data"] = {"axes": [axis], "in_channels": 1, "out_channels": 1}
    return {"format": 1, "meta": training.registry.spec_of(task).meta(), "config": config, "task": state}


def _resident() -> tuple[int, bool]:
    """This process's resident bytes now, with its peak reset to it where Linux allows (``True``): then the peak
    read after a call is the call's own; otherwise the lifetime peak, which can only under-report growth."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident size (VmHWM) to the current one
        reset = True
    except OSError:
        reset = False
    return _status("VmRSS"), reset


def _peak() -> int:
    try:
        return _status("VmHWM")
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(key + ":"))
    return int(line.split()[1]) * 1024


def _refusal(run: Path) -> tuple[str, float, int]:
    """``training.load(run)``'s one-line refusal, the seconds it took and the memory it added."""
    before, _ = _resident()
    start = time.perf_counter()
    with pytest.raises(CheckpointError) as refused:
        training.load(run)
    seconds = time.perf_counter() - start
    return str(refused.value), seconds, max(0, _peak() - before)


ABSURD_CASES = [(t, {k: v}, f"{k}={v}: must be <=") for t in training.registry.BUILT_IN for k, v in ABSURD.items()]
ABSURD_CASES += [(t, PAST_BUDGET, "past the budget of") for t in training.registry.BUILT_IN]


@pytest.mark.parametrize(
    ("task", "change", "says"), ABSURD_CASES, ids=[f"{t}: {' '.join(c)}" for t, c, _ in ABSURD_CASES]
)
def test_an_absurd_checkpoint_is_refused_before_allocation(
    task: str, change: dict[str, Any], says: str, tmp_path: Path
) -> None:
    """A checkpoint whose config asks for a model no machine holds: one line naming the file and the field, in under
    100 MB and a second -- :data:`BUILT_SECONDS` for sizes within their bounds, which are counted on the meta device
    (the task's modules imported beforehand: the import is not the refusal's cost)."""
    training.registry.spec_of(task)
    run = tmp_path / "run"
    run.mkdir()
    torch.save(_absurd(task, change), run / "checkpoint.pt")
    message, seconds, growth = _refusal(run)
    assert message.startswith(f"{run / 'checkpoint.pt'}: ") and "\n" not in message, message
    assert says in message and any(f"{k}=" in message for k in change), message
    assert seconds < (BUILT_SECONDS if change is PAST_BUDGET else SECONDS), (seconds, message)
    assert growth < GROWTH, (growth, message)


def test_the_largest_absurd_checkpoint_costs_nothing(tmp_path: Path) -> None:
    """Every size at once, past every bound (the issue's 251 s and 6.9 GB): refused like the smallest."""
    huge = {"width": 10**15, "hidden": 10**15, "depth": 10**12, "heads": 10**9, "modes": 10**9, "batch": 10**12}
    for task in list(training.registry.BUILT_IN):
        fields = training.describe(importlib.import_module(f"training.tasks.{task}").PRESETS["tiny"])
        run = tmp_path / task
        run.mkdir()
        torch.save(_absurd(task, {k: v for k, v in huge.items() if k in fields}), run / "checkpoint.pt")
        message, seconds, growth = _refusal(run)
        assert "must be <=" in message and seconds < SECONDS and growth < GROWTH, (task, message, seconds, growth)


# ---- a real checkpoint, damaged: one CheckpointError naming the file -------------------------------------

TINY = PRESETS["tiny"].replace(steps=2, checkpoint_every=1)


class Finished(tuple[Path, sources.Splits, dict[str, Any]]):
    """A tiny finished Poisson run: its directory, its data and its checkpoint's contents."""

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"Finished({self[0]})"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    out = tmp_path_factory.mktemp("finished")
    splits = data.splits(TINY.n_train, TINY.n_test, TINY.seed, TINY.modes)
    train.train(TINY, splits, out, progress=False)
    return Finished((out, splits, load_checkpoint(out / CHECKPOINT)))


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a nest of dicts and lists (the containers themselves included)."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list | tuple) else ()
    out = [path] if path else []
    for k, v in items:
        out += _leaves(v, (*path, k))
    return out


def _get(blob: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        blob = blob[k]
    return blob


def _set(blob: Any, path: tuple[Any, ...], value: Any) -> None:
    parent = _get(blob, path[:-1])
    if isinstance(parent, tuple):  # tuples in a state (betas): replace the whole tuple
        grand, items = _get(blob, path[:-2]), list(parent)
        items[path[-1]] = value
        grand[path[-2]] = tuple(items)
    else:
        parent[path[-1]] = value


KINDS = ("drop", "retype", "reshape", "nan", "top")
WRONG = ("abc", [1.0], None, 2.5)  # values of the wrong type wherever they land
TOP: tuple[tuple[str, Any], ...] = (
    ("step", 10**12), ("step", -1), ("step", 2.5), ("step", "2"), ("config", [1]), ("task", torch.zeros(1)),
    ("history", {"a": 1}), ("elapsed", float("inf")), ("format", 2), ("job", 7),
)  # fmt: skip


def _damage(blob: dict[str, Any], kind: str, pick: int, value: int, where: float) -> str:
    """Damage ``blob`` in place so that no reader may accept it; says what was done.

    ``drop`` a key of the model, schedule or optimiser; ``retype`` a tensor or a plain value of the task
    to :data:`WRONG`; ``reshape`` a tensor; ``nan``: a NaN into a float tensor; ``top``: one of :data:`TOP`.
    """
    places = [("task", *p) for p in _leaves(blob["task"])]
    dicts = [p for p in places if isinstance(_get(blob, p), dict) and _get(blob, p) and p[-1] != "state"]
    keys = [(*p, k) for p in dicts for k in _get(blob, p) if p[:2] != ("task", "optimiser") or len(p) == 2]
    tensors = [p for p in places if isinstance(_get(blob, p), torch.Tensor)]
    floats = [p for p in tensors if _get(blob, p).is_floating_point() and _get(blob, p).numel()]
    plain = [p for p in places if type(_get(blob, p)) in (int, float, str) and p[2] != "state"]
    if kind == "drop":
        path = keys[pick % len(keys)]
        _get(blob, path[:-1]).pop(path[-1])
        return f"drop {path}"
    if kind == "retype":
        path, wrong = (tensors + plain)[pick % len(tensors + plain)], WRONG[value % len(WRONG)]
        if type(wrong) is type(_get(blob, path)):
            wrong = "abc"
        _set(blob, path, wrong)
        return f"{path} := {wrong!r}"
    if kind == "reshape":
        path = tensors[pick % len(tensors)]
        t = _get(blob, path)
        _set(blob, path, torch.zeros(*t.shape, 2, dtype=t.dtype))
        return f"reshape {path}"
    if kind == "nan":
        path = floats[pick % len(floats)]
        t = _get(blob, path).clone()
        t.view(-1)[int(where * (t.numel() - 1))] = torch.nan
        _set(blob, path, t)
        return f"NaN in {path}"
    key, bad = TOP[pick % len(TOP)]
    blob[key] = bad
    return f"{key} := {bad!r}"


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    pick=st.integers(0, 10**6),
    value=st.integers(0, 10),
    where=st.floats(0, 1),
)
def test_a_damaged_checkpoint_is_one_clear_error(
    kind: str,
    pick: int,
    value: int,
    where: float,
    finished: Finished,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Resuming from a damaged checkpoint, and loading it, is one CheckpointError naming the file."""
    _, splits, blob = finished
    damaged = copy.deepcopy(blob)
    what = _damage(damaged, kind, pick, value, where)
    run = tmp_path_factory.mktemp("damaged")
    path = run / CHECKPOINT
    torch.save(damaged, path)
    with pytest.raises(CheckpointError) as resumed:
        train.train(TINY, splits, run, progress=False)
    message = str(resumed.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, (what, message)
    if kind in ("top", "nan") or "'model'" in what:  # load() reads the model alone of the task's state
        with pytest.raises(CheckpointError, match=str(path)):
            poisson.load(run)


def test_the_intact_checkpoint_resumes_and_loads(finished: Finished) -> None:
    """The property test's control: the same checkpoint, undamaged, is accepted by both readers."""
    out, splits, _ = finished
    assert train.train(TINY, splits, out, progress=False).resumed_from == TINY.steps
    assert isinstance(poisson.load(out), poisson.PoissonModel)


def test_load_says_what_is_wrong_with_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="expected a run directory"):
        lm.load(None)  # type: ignore[arg-type]
    with pytest.raises(Exception, match="device 'bogus': not a device"):
        lm.load(tmp_path, device="bogus")
    if not torch.cuda.is_available():
        with pytest.raises(Exception, match="no CUDA device"):
            lm.load(tmp_path, device="cuda")
    with pytest.raises(CheckpointError, match="no checkpoint there"):
        lm.load(tmp_path)


# ---- writes that fail or race, and the API's own boundaries -------------------------------------------------


def test_a_full_disk_says_which_checkpoint_is_kept(
    finished: Finished, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, splits, _ = finished
    cfg = TINY.replace(steps=4)
    train.train(cfg, splits, tmp_path, progress=False, stop_after=2)

    def full(obj: object, f: object) -> None:
        Path(str(f)).write_bytes(b"half a file")  # what a full disk leaves behind
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", full)  # as the checkpoint writer sees it
    with pytest.raises(CheckpointError) as info:
        train.train(cfg, splits, tmp_path, progress=False)
    assert str(info.value).startswith(f"cannot write {tmp_path / CHECKPOINT} (No space left on device)")
    assert f"the last good checkpoint (step 2) is kept in {tmp_path / CHECKPOINT}" in str(info.value)
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / CHECKPOINT)["step"] == 2  # intact
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT]  # no temporary left behind


def test_two_runs_filling_one_new_cache_do_not_race(tmp_path: Path) -> None:
    """Two processes write the same new cache file at once: both finish, and the file reads back whole."""
    cache = tmp_path / "cache"
    # fresh interpreters, not fork(): a fork of this process (torch's OpenMP pool already running) can
    # deadlock in the child as soon as it computes
    code = (
        "from pathlib import Path; from training.tasks.poisson import data; "
        f"data.splits(8, 4, 0, 16, Path({str(cache)!r}))"
    )
    children = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT) for _ in range(2)]
    assert [c.wait(timeout=300) for c in children] == [0, 0]
    assert [p.name for p in cache.iterdir()] == ["poisson_n16_tr8_te4_s0.pt"]  # no temporaries left
    cached, fresh = data.splits(8, 4, 0, 16, cache), data.splits(8, 4, 0, 16)
    assert torch.equal(cached.train.g, fresh.train.g) and torch.equal(cached.ood.f, fresh.ood.f)


class _Exact:
    """A stand-in operator with ``modes`` (solve needs no trained model to check its arguments)."""

    modes = 8

    def __call__(self, c: torch.Tensor) -> torch.Tensor:
        return c


@pytest.mark.parametrize(
    ("source", "x", "grid", "says"),
    [
        (lambda x, y: x * y, torch.linspace(-1.5, 1, 5), None, "x spans [-1.5, 1], outside [-1, 1]"),
        (lambda x, y: x * y, torch.tensor([0.0, float("nan")]), None, "x holds NaN or infinite points"),
        (lambda x, y: x / 0 * y, torch.linspace(-1, 1, 5), None, "NaN or infinite numbers"),
        (torch.full((16, 16), torch.nan), torch.linspace(-1, 1, 5), "fine", "NaN or infinite numbers"),
        (torch.ones(16, 16), torch.linspace(-1, 1, 5), "equal", "has 1 distinct of 16"),
        (torch.ones(16, 16), torch.linspace(-1, 1, 5), "wide", "grid gx spans [-2, 2]"),
    ],
    ids=["outside", "nan-point", "nan-source", "nan-values", "degenerate-grid", "grid-outside"],
)
def test_solve_refuses_what_it_cannot_answer(source: Any, x: torch.Tensor, grid: str | None, says: str) -> None:
    grids = {
        "fine": (torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16)),
        "equal": (torch.zeros(16), torch.linspace(-1, 1, 16)),
        "wide": (torch.linspace(-2, 2, 16), torch.linspace(-1, 1, 16)),
    }
    with pytest.raises(ValueError, match=re.escape(says)):
        poisson.solve(_Exact(), source, x, torch.linspace(-1, 1, 3), grid=None if grid is None else grids[grid])


@pytest.mark.parametrize(
    ("probs", "says"),
    [("ab", "got the string 'ab'"), ([0.5, "a"], "a sequence of numbers"), (3, "a sequence of numbers")],
)
def test_distribution_of_what_is_not_probabilities_is_a_structure_error(probs: Any, says: str) -> None:
    with pytest.raises(StructureError, match=re.escape(says)):
        Distribution(probs)


# ---- the library's entry points: the library's own errors, each at once ------------------------------------

#: the most a library refusal may take (the caller's sizes are checked before anything is computed)
API_SECONDS = 1.0


def _quick(call: Callable[[], object], error: type[BaseException], says: str) -> None:
    """``call()`` raises ``error`` saying ``says``, in one line and within :data:`API_SECONDS`."""
    start = time.perf_counter()
    with pytest.raises(error) as refused:
        call()
    seconds = time.perf_counter() - start
    assert says in str(refused.value) and "\n" not in str(refused.value), str(refused.value)
    assert seconds < API_SECONDS, (seconds, str(refused.value))


def _operator_model() -> Any:
    from operators.layout import Axis
    from training.tasks.operator import PRESETS as OPERATOR
    from training.tasks.operator.model import build
    from training.tasks.operator.shape import Shape

    return build(OPERATOR["tiny"], Shape((Axis(),), 1, 1))


def test_predict_and_solve_refuse_what_is_no_model() -> None:
    from training.tasks.operator import predict

    x = torch.rand(1, 16)
    for model in (poisson.PoissonModel, None, object()):
        _quick(lambda m=model: predict(m, x), training.InputError, "predict: model must be a trained OperatorModel")
        _quick(
            lambda m=model: train.predict(m, x), training.InputError, "predict: model must be a trained PoissonModel"
        )
        _quick(
            lambda m=model: poisson.solve(m, lambda a, b: a * b, torch.zeros(3), torch.zeros(3)),
            training.InputError,
            "solve: the model must be a trained PoissonModel",
        )


@pytest.mark.parametrize("returned", ["abc", [[1, "a"]], object(), {"x": 1}], ids=["str", "list", "object", "dict"])
def test_solve_refuses_a_source_that_returns_no_numbers(returned: object) -> None:
    _quick(
        lambda: poisson.solve(_Exact(), lambda x, y: returned, torch.zeros(3), torch.zeros(3)),
        training.InputError,
        "solve: the source returned",
    )


def test_huge_grids_and_point_sets_are_refused_before_anything_is_computed() -> None:
    from training.tasks.operator import predict

    t = torch.linspace(-1, 1, 200_000)
    _quick(lambda: poisson.solve(_Exact(), lambda x, y: x * y, t, t), training.InputError, "past the memory budget")
    model = _operator_model()
    x = torch.rand(3, 16)
    small = training.Budget(max_bytes=2**20)  # 1 MiB: a million points of 3 samples take 45.8 MiB
    points, line = torch.rand(10**6, 1), torch.linspace(0, 1, 10**6)
    says = "3 sample(s) at 1,000,000 points x 1 channel(s) take 45.8 MiB, past the memory budget of 1 MiB"
    _quick(lambda: predict(model, x, points, budget=small), training.InputError, says)
    _quick(lambda: predict(model, x, [line], budget=small), training.InputError, says)


def test_predict_evaluates_many_points_in_pieces_as_at_once() -> None:
    """Points beyond one piece: the same values as each piece alone (the pieces change nothing but the memory)."""
    from training.tasks.operator import predict
    from training.tasks.operator import predict as predict_module

    module = sys.modules[predict_module.__module__]
    model = _operator_model()
    x = torch.rand(2, 16, dtype=torch.float64)
    points = torch.rand(3 * 1000 + 7, 1, dtype=torch.float64)
    whole = predict(model, x, points)
    pieces = [predict(model, x, points[i : i + 1000]) for i in range(0, len(points), 1000)]
    torch.testing.assert_close(whole, torch.cat(pieces, 1), rtol=1e-6, atol=1e-6)
    assert module.CELLS < len(points) * 100  # the pieces are exercised with a smaller CELLS too
    original = module.CELLS
    try:
        module.CELLS = 100
        torch.testing.assert_close(predict(model, x, points), whole, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(predict(model, x, [points[:, 0]]), whole, rtol=1e-6, atol=1e-6)
    finally:
        module.CELLS = original


def test_a_vocabulary_past_the_stored_weights_is_refused_before_the_build(tmp_path: Path) -> None:
    """An lm checkpoint whose stored vocabulary has 900,000 characters (the issue's 1.8 GB and 13.7 s), and one of
    60,000 beside weights for 8: both refused from the stored shapes, under a second and 100 MB."""
    from training.tasks.lm.model import SPEC, CharLM

    config = lm.PRESETS["tiny"]
    weights = CharLM(config, "abcdefgh").state_dict()
    for size, says in ((900_000, "its vocabulary holds 900,000 characters"), (60_000, "fewer than the")):
        run = tmp_path / str(size)
        run.mkdir()
        vocab = "".join(chr(0x100 + i) for i in range(size))
        blob = {**_RUN, "config": training.describe(config), "meta": SPEC.meta()}
        torch.save({**blob, "task": {"model": weights, "vocab": vocab}}, run / "checkpoint.pt")
        message, seconds, growth = _refusal(run)
        assert says in message and seconds < SECONDS and growth < GROWTH, (message, seconds, growth)


def test_a_listops_expression_past_its_size_is_refused_at_once() -> None:
    from training.tasks.tree_listops import PRESETS as LISTOPS
    from training.tasks.tree_listops.model import ListOpsModel

    model = ListOpsModel(LISTOPS["tiny"], "tree-mean")
    wide = ("SM", [1] * 200_000)
    _quick(lambda: model([wide]), training.InputError, "holds more than 16,384 operators and digits")
    _quick(lambda: model.predict([wide]), training.InputError, "holds more than 16,384 operators and digits")


def test_the_law_checker_refuses_a_size_it_cannot_draw() -> None:
    from applicative.laws import SizeError, run_laws
    from instances import Vector

    _quick(lambda: run_laws(Vector(10**12), max_examples=1), SizeError, "past the 4,194,304 the law checker draws")


def test_a_fifo_checkpoint_is_refused_by_load(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "checkpoint.pt")
    _quick(lambda: training.load(tmp_path), CheckpointError, "is a FIFO (a named pipe), not a checkpoint file")
