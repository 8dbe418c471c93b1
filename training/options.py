"""The options every training program shares, derived once from its config dataclass.

:func:`program` makes the parser: ``--preset``, ``--config FIELD=VALUE`` (repeatable), ``--steps N``,
``--out DIR``, ``--device``, ``--threads``, ``--memory GIB``, ``--no-progress``, ``--restart``; a program adds its
own options to it. ``--memory`` is the run's :class:`~training.budget.Budget` (``a.memory`` after :func:`parse`): a
model whose config would take more is refused before anything is built.
:class:`Shared` carries the shared options (out, device, threads, progress, memory) from a parsed command line into
a task's ``program`` module, which does the work; the program prints what it returns.
:func:`parse` then adds a shorthand ``--FIELD VALUE`` for every config field no option already uses
(``--lr 3e-3`` is ``--config lr=3e-3``; a program's own option of a field's name, such as a ``--family``
with choices, sets that field the same way), parses, and builds the config: the preset, then ``--config``
items, then the shorthands, then ``--steps``, validated field by field. Every mistake is one line
(:class:`~.cli.Parser`).

Why a hand-written layer rather than a parser derived by a library (tyro, jsonargparse): the configs
already validate themselves field by field with messages that name the field, the range and the fix;
this layer only routes strings to them, so every error stays one line and every program keeps its own
extra options beside the shared ones.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch

from .budget import DEFAULT_GIB, Budget
from .cli import Parser, gib, out_dir, threads
from .config import override
from .distributed import SINGLE, Ranks, device_of
from .errors import UserError
from .loop import FitOptions

C = TypeVar("C")
N = TypeVar("N", bound=str)
#: the options every program has; a config field of one of these names is set with --config only
SHARED = ("preset", "config", "steps", "out", "device", "threads", "memory", "no_progress", "restart")


@dataclass(frozen=True)
class Shared:
    """The shared options of one run, as a task's program takes them.

    Attributes:
        program: the command that runs it (``python -m examples.poisson``): its run directory's owner.
        out: the run directory (``None``: the program writes none).
        device: ``cpu``, ``cuda`` or ``cuda:N``; threads: torch CPU threads (``None``: by the load and the model).
        progress: show a progress bar or progress lines; memory: the run's memory :class:`~training.budget.Budget`.
        restart: start afresh in ``out``, whatever checkpoint it holds (``--restart``).
    """

    program: str
    out: Path | None = None
    device: str = "cpu"
    threads: int | None = None
    progress: bool = True
    memory: Budget = field(default_factory=Budget)
    restart: bool = False

    @classmethod
    def of(cls, a: argparse.Namespace, program: str) -> Shared:
        """The shared options of a :func:`program` parser's parsed namespace ``a``."""
        return cls(program, a.out, a.device, a.threads, not a.no_progress, a.memory, a.restart)

    def fit(self, ranks: Ranks = SINGLE) -> FitOptions:
        """What :func:`training.fit` takes of them (``progress``, ``threads``, ``budget``, ``restart``), and the
        ``ranks``."""
        return {
            "progress": self.progress,
            "threads": self.threads,
            "budget": self.memory,
            "ranks": ranks,
            "restart": self.restart,
        }


def program(
    prog: str,
    description: str,
    presets: Mapping[str, Any],
    *,
    out: str | None = None,
    out_help: str = "run directory: checkpoint, report and figures",
    cuda: bool = True,
) -> Parser:
    """A parser with the shared options of a training program whose configs are ``presets``.

    ``out`` is the default run directory (``None``: the program chooses after parsing, or writes none);
    ``cuda=False`` says the program runs on the CPU only (``--device cuda`` is then a one-line error).
    """
    p = Parser(prog=prog, description=description)
    p.add_argument("--preset", choices=sorted(presets), default="default", help="a named config to start from")
    p.add_argument("--config", action="append", default=[], metavar="FIELD=VALUE", help="override a config field")
    p.add_argument("--steps", metavar="N", help="training steps (shorthand for --config steps=N)")
    p.add_argument("--out", type=out_dir, default=None if out is None else Path(out), help=out_help)
    default_device = "cuda" if cuda and torch.cuda.is_available() else "cpu"
    p.add_argument(
        "--device",
        choices=None if cuda else ["cpu"],
        default=default_device,
        help=f"cpu, cuda or cuda:N (default {default_device})" if cuda else "cpu (this program runs on the CPU only)",
    )
    p.add_argument(
        "--threads",
        type=threads,
        default=None,
        help="torch CPU threads (default: the free cores by load average, at most 2 for a small model)",
    )
    p.add_argument(
        "--memory",
        type=gib,
        default=DEFAULT_GIB,
        metavar="GIB",
        help=f"the most memory the model may take to train, in GiB (default {DEFAULT_GIB:g}): a larger config is "
        "refused before anything is built",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    p.add_argument(
        "--restart",
        action="store_true",
        help="start afresh in --out: its checkpoint (another config, other data, another budget) is replaced",
    )
    p.set_defaults(_presets=presets)
    return p


def parse(p: argparse.ArgumentParser, argv: list[str] | None) -> tuple[Any, argparse.Namespace]:
    """The validated config and the parsed options of a :func:`program` parser (with per-field shorthands)."""
    presets: Mapping[str, Any] = p.get_default("_presets")
    fields = [f.name for f in dataclasses.fields(next(iter(presets.values())))]
    shorthands, taken = [], []
    for name in fields:
        names = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
        try:
            p.add_argument(*names, dest=f"field_{name}", metavar="VALUE", help=f"shorthand for --config {name}=VALUE")
        except argparse.ArgumentError:  # the program has an option of that name (--family with choices, say)
            if name not in SHARED:
                taken.append(name)
            continue
        shorthands.append(name)
    a = p.parse_args(argv)
    items = list(a.config)
    items += [f"{name}={getattr(a, f'field_{name}')}" for name in shorthands if getattr(a, f"field_{name}") is not None]
    items += [f"{name}={getattr(a, name)}" for name in taken if getattr(a, name, None) is not None]
    items += [] if a.steps is None else [f"steps={a.steps}"]
    if not isinstance(a.device, str) or not a.device.strip():
        raise UserError("argument --device: empty; name a device: cpu, cuda or cuda:N")
    device_of(a.device)  # exists on this machine: checked before any work
    a.memory = Budget.memory(a.memory)
    return override(presets[a.preset], items), a


def config_of(p: argparse.ArgumentParser, argv: list[str] | None, kind: type[C]) -> tuple[C, argparse.Namespace]:
    """:func:`parse`, with the config's type checked (for the type checker and for a program's tests)."""
    config, a = parse(p, argv)
    assert isinstance(config, kind)
    return config, a


def names(text: str, allowed: Sequence[N], option: str = "--models", noun: str = "model") -> list[N]:
    """A comma-separated option naming some of ``allowed``, each once (``--models dag,tree``), checked."""
    given = [m.strip() for m in text.split(",") if m.strip()]
    if not given:
        raise UserError(f"{option} {text!r}: name at least one of {', '.join(allowed)}")
    out: list[N] = []
    for name in given:
        kind = next((m for m in allowed if m == name), None)
        if kind is None:
            raise UserError(f"{option}: no {noun} {name!r}; the {noun}s are {', '.join(allowed)}")
        if kind in out:
            raise UserError(f"{option}: {name} named twice")
        out.append(kind)
    return out
