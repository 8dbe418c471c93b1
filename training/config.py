"""Configs: a frozen dataclass, overridden by ``FIELD=VALUE`` strings, validated field by field.

A field's type annotation says how its text is parsed (``int``, ``float``, ``str``, ``bool`` or a
``Literal`` of allowed strings); ``field(metadata=...)`` bounds it: ``min``/``max`` (inclusive),
``above``/``below`` (exclusive) -- :func:`between` on both sides, as every numeric field of the
project's configs is (the shared upper bounds: :data:`MAX_WIDTH`, :data:`MAX_HIDDEN`, :data:`MAX_HEADS`,
:data:`MAX_LAYERS`, :data:`MAX_MODES`, :data:`MAX_STEPS`, :data:`MAX_BATCH`, :data:`MAX_EXAMPLES`).
Floats must be finite. Every config also keeps the project's conventions (:data:`CONVENTIONS`): a
``seed`` within the generators' range, an ``lr`` no larger than :data:`LR_LIMIT`, and no integer past
:data:`INT_LIMIT`. Every problem is a :class:`ConfigError` naming the field, the value and the allowed
range -- raised before any work is done, alike for a preset, the command line and a checkpoint's config.

A bound says what a field may be on its own; whether the sizes together fit in memory is the
budget's question (:mod:`training.budget`), asked from the config before any tensor is made.
:func:`document_bounds` appends a config's ranges to its docstring, so the docstring states them.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Self, TypeVar, cast

import torch

from .errors import UserError
from .schedule import OneCycle

C = TypeVar("C")


#: the largest integer a config field may hold unless a convention says otherwise: any count or size past it
#: (examples, steps, widths) would not fit in memory, and torch indexes with it
INT_LIMIT = 2**31 - 1
#: channels: a model's width, a state size, a head's key or value size, features per token
MAX_WIDTH = 8192
#: an MLP's hidden size
MAX_HIDDEN = 65536
#: attention heads
MAX_HEADS = 256
#: layers (encoder depth)
MAX_LAYERS = 256
#: Chebyshev terms (or grid nodes) per axis of a function
MAX_MODES = 512
#: optimiser steps, and the cadences counted in steps (evaluation, checkpoints, warm-up): 10^8 steps of a
#: millisecond each are more than a day
MAX_STEPS = 10**8
#: examples per optimiser step
MAX_BATCH = 2**16
#: examples in a generated data set
MAX_EXAMPLES = 10**7
#: the largest learning rate any config accepts: past it, every optimiser here overflows rather than learns
LR_LIMIT = 10.0
#: bounds that a field of this name has in every config, on top of its own
CONVENTIONS: dict[str, dict[str, float]] = {
    "seed": {"min": 0, "max": 2**63 - 1},  # what torch.Generator.manual_seed and numpy's default_rng take
    "lr": {"max": LR_LIMIT},
}


class ConfigError(UserError):
    """A config value that is not allowed (or a ``--config`` item that cannot be read)."""


def at_least(default: Any, least: float) -> Any:
    """A dataclass field with ``default`` whose value must be ``>= least`` (checked by :func:`validate`)."""
    return dataclasses.field(default=default, metadata={"min": least})


def between(default: Any, least: float, most: float) -> Any:
    """A dataclass field with ``default`` whose value must lie in ``least..most`` (checked by :func:`validate`)."""
    return dataclasses.field(default=default, metadata={"min": least, "max": most})


def _fields(config: object) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    return _fields_of(type(config))


def _fields_of(kind: type) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(kind)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(kind)}


def _parse(name: str, hint: Any, text: str) -> Any:
    if typing.get_origin(hint) is Literal:
        return text  # checked against the choices by validate
    try:
        if hint is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return text.lower() in ("true", "1")
        if hint is int:
            return int(text)
        if hint is float:
            return _number_of(name, text)
    except ValueError:
        kind = {bool: "true or false", int: "an integer", float: "a number"}[hint]
        raise ConfigError(f"config field {name}={text!r}: must be {kind}") from None
    return text


def _number_of(name: str, text: str) -> float:
    """``text`` as a float, refusing a decimal that underflows to zero or overflows to infinity (``1e-400`` is no 0)."""
    x = float(text)
    mantissa = re.split(r"[eE]", text.strip().lstrip("+-"), maxsplit=1)[0]
    written = bool(re.fullmatch(r"[0-9_.]+", mantissa))  # a decimal number, not nan or inf by name
    if written and x == 0 and re.search(r"[1-9]", mantissa):
        raise ConfigError(
            f"config field {name}={text!r}: underflows to 0 (below {sys.float_info.min:.3g}, the smallest normal "
            "float); give 0 for none, or a larger value"
        )
    if written and math.isinf(x):
        raise ConfigError(
            f"config field {name}={text!r}: overflows (past {sys.float_info.max:.3g}); give a finite value"
        )
    return x


def override(config: C, items: Sequence[str]) -> C:
    """``config`` with ``FIELD=VALUE`` items applied (parsed by each field's type), then validated."""
    fields = _fields(config)
    changes: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq:
            raise ConfigError(f"--config {item!r}: expected FIELD=VALUE, e.g. --config lr=3e-3")
        if name not in fields:
            raise ConfigError(f"--config {name}: no such config field; the fields are {', '.join(fields)}")
        changes[name] = _parse(name, fields[name][1], text.strip())
    new: C = dataclasses.replace(config, **changes)  # type: ignore[type-var]
    validate(new)
    return new


def validate(config: object, extra: Callable[[Any], str | None] | None = None) -> None:
    """Raise :class:`ConfigError` for the first field whose value is not allowed (then ``extra``'s complaint)."""
    for name, (f, hint) in _fields(config).items():
        value = getattr(config, name)
        problem = _problem(hint, value, _bounds(name, hint, f.metadata))
        if problem is not None:
            raise ConfigError(f"config field {name}={value!r}: {problem}")
    if extra is not None and (problem := extra(config)) is not None:
        raise ConfigError(problem)


def _bounds(name: str, hint: Any, own: Any) -> dict[str, float]:
    """A field's own bounds, narrowed by the conventions for its name and :data:`INT_LIMIT` for integers."""
    bounds = dict(own)
    convention = CONVENTIONS.get(name, {})
    limit = convention.get("max", INT_LIMIT if hint is int else None)
    if limit is not None:
        bounds["max"] = min(bounds.get("max", limit), limit)
    if "min" in convention:
        bounds["min"] = max(bounds.get("min", convention["min"]), convention["min"])
    return bounds


def _problem(hint: Any, value: Any, bounds: Any) -> str | None:
    if typing.get_origin(hint) is Literal:
        choices = typing.get_args(hint)
        return None if value in choices else f"must be one of {', '.join(map(repr, choices))}"
    if hint is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if hint is int and (not isinstance(value, int) or isinstance(value, bool)):
        return "must be an integer"
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        if not math.isfinite(value):
            return "must be finite"
        if value != 0 and abs(value) < sys.float_info.min:
            return (
                f"must be 0 or at least {sys.float_info.min:.3g} in size: a subnormal number loses its precision, and "
                "training flushes it to 0"
            )
    if hint in (int, float):
        if "min" in bounds and value < bounds["min"]:
            return f"must be >= {bounds['min']}"
        if "max" in bounds and value > bounds["max"]:
            why = " (a size past it cannot fit in memory)" if bounds["max"] == INT_LIMIT else _allowed(bounds)
            return f"must be <= {bounds['max']}{why}"
        if "above" in bounds and value <= bounds["above"]:
            return f"must be > {bounds['above']}"
        if "below" in bounds and value >= bounds["below"]:
            return f"must be < {bounds['below']}"
    return None


def _allowed(bounds: Any) -> str:
    """`` (allowed: 1..8192)`` for a field bounded on both sides by ``min`` and ``max`` ('' otherwise)."""
    if "min" in bounds and "max" in bounds:
        return f" (allowed: {_number(bounds['min'])}..{_number(bounds['max'])})"
    return ""


def _number(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else f"{x:g}"


def ranges(kind: type) -> dict[str, str]:
    """Each numeric field's allowed values in words (``"1..8192"``, ``"> 0 and <= 10"``), conventions included."""
    out = {}
    for name, (f, hint) in _fields_of(kind).items():
        if hint not in (int, float):
            continue
        b = _bounds(name, hint, f.metadata)
        if set(b) == {"min", "max"}:
            out[name] = f"{_number(b['min'])}..{_number(b['max'])}"
            continue
        signs = {"min": ">=", "above": ">", "max": "<=", "below": "<"}
        out[name] = " and ".join(f"{sign} {_number(b[k])}" for k, sign in signs.items() if k in b)
    return out


def document_bounds(kind: type[C]) -> type[C]:
    """Append to ``kind``'s docstring the range of each numeric field (from its metadata: one source of truth).

    Call it after a config class (``document_bounds(Config)``); the ranges read as the error does.
    """
    listed = ", ".join(f"``{name}`` {r}" for name, r in ranges(kind).items())
    kind.__doc__ = (kind.__doc__ or "").rstrip() + (
        "\n\n    Bounds (inclusive unless marked; checked alike for a preset, ``--config`` and a checkpoint): "
        f"{listed}.\n"
    )
    return kind


def describe(config: object) -> dict[str, Any]:
    """The config as plain data (for checkpoints and reports)."""
    return dataclasses.asdict(config)  # type: ignore[call-overload,no-any-return]


def differences(old: dict[str, Any], new: dict[str, Any], ignore: tuple[str, ...] = ()) -> list[str]:
    """``field: old -> new`` for each field that differs (``ignore``-d fields aside)."""
    keys = [k for k in {**old, **new} if k not in ignore]
    return [f"{k}: {old.get(k, '(none)')!r} -> {new.get(k, '(none)')!r}" for k in keys if old.get(k) != new.get(k)]


class Checked:
    """What every config dataclass shares: validated on construction, and :meth:`replace` a validated copy.

    Subclass it with a frozen dataclass (``@dataclass(frozen=True) class Config(Checked): ...``). Fields are
    checked one by one (:func:`validate`), then the rules across fields: :func:`heads_divide` for a config
    with ``width`` and ``heads``, then the config's own :meth:`consistent`.
    """

    def __post_init__(self) -> None:
        validate(self, lambda c: heads_divide(c) or c.consistent())

    def consistent(self) -> str | None:
        """A rule across fields that this config breaks, in words naming the fields (``None``: none)."""
        return None

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (validated)."""
        return cast(Self, dataclasses.replace(cast(Any, self), **changes))


def heads_divide(config: object) -> str | None:
    """A config's ``heads`` must divide its ``width`` (the model splits into heads); the problem, or ``None``."""
    width, heads = getattr(config, "width", None), getattr(config, "heads", None)
    if type(width) is int and type(heads) is int and heads > 0 and width % heads:
        return f"config fields width={width}, heads={heads}: heads must divide width (the model splits into heads)"
    return None


def batch_within(config: Any, examples: str) -> str | None:
    """For a config whose ``batch`` is drawn without replacement from its ``train`` examples: the problem when
    ``batch`` exceeds ``train`` (``examples`` names them in the message), or ``None``."""
    if config.batch > config.train:
        return f"config fields batch={config.batch} > train={config.train}: a batch is drawn from the {examples}"
    return None


#: the optimiser's fields and their one set of bounds (inclusive; ``lr`` and ``seed`` are bounded above by the
#: :data:`CONVENTIONS` every config keeps): every task's config declares the ones it has with :func:`optimiser_field`,
#: so that ``lr`` or ``clip`` means one thing with one range everywhere
OPTIMISER_BOUNDS: dict[str, dict[str, float]] = {
    "steps": {"min": 1, "max": MAX_STEPS},
    "batch": {"min": 1, "max": MAX_BATCH},
    "lr": {"min": 1e-12},
    "beta2": {"min": 0.0, "max": 0.999999},
    "weight_decay": {"min": 0.0, "max": 10.0},
    "warmup": {"min": 0.0, "max": 1.0},
    "clip": {"min": 0.0, "max": 1e6},
    "eval_every": {"min": 1, "max": MAX_STEPS},
    "checkpoint_every": {"min": 1, "max": MAX_STEPS},
    "seed": {"min": 0},
}


def optimiser_field(name: str, default: Any) -> Any:
    """A config field of the optimiser's (:data:`OPTIMISER_BOUNDS`) with ``default``: its bounds are the shared ones."""
    return dataclasses.field(default=default, metadata=dict(OPTIMISER_BOUNDS[name]))


@dataclasses.dataclass(frozen=True)
class Optimiser(Checked):
    """How a run is optimised: Adam on a one-cycle schedule, shared by the configs that train that way (a task's
    config subclasses it and restates a default with :func:`optimiser_field`).

    Attributes:
        steps, batch: optimisation steps and samples per step.
        lr: Adam's peak rate on the one-cycle schedule (warm-up, then cosine annealing).
        beta2: Adam's second-moment decay (torch's 0.999; a smaller one forgets a spike's gradients sooner).
        weight_decay: Adam's (L2) weight decay.
        warmup: the fraction of the steps the rate rises over.
        clip: the largest gradient norm a step may take (``0``: no clipping).
        eval_every, checkpoint_every: steps between held-out evaluations / checkpoints.
        seed: seeds the initialisation and the batch order (and a task's data, where it generates them).
    """

    steps: int = optimiser_field("steps", 2000)
    batch: int = optimiser_field("batch", 32)
    lr: float = optimiser_field("lr", 1e-3)
    beta2: float = optimiser_field("beta2", 0.999)
    weight_decay: float = optimiser_field("weight_decay", 0.0)
    warmup: float = optimiser_field("warmup", 0.1)
    clip: float = optimiser_field("clip", 1.0)
    eval_every: int = optimiser_field("eval_every", 250)
    checkpoint_every: int = optimiser_field("checkpoint_every", 250)
    seed: int = optimiser_field("seed", 0)

    def adam(self, parameters: Iterable[torch.nn.Parameter]) -> tuple[torch.optim.Adam, OneCycle]:
        """Adam (``betas = (0.9, beta2)``, ``weight_decay``) on ``parameters`` and its one-cycle schedule over
        ``steps`` (peak ``lr``, ``warmup`` the rising fraction): ``(optimiser, schedule)``."""
        optimiser = torch.optim.Adam(parameters, lr=self.lr, betas=(0.9, self.beta2), weight_decay=self.weight_decay)
        return optimiser, OneCycle(optimiser, self.lr, self.steps, self.warmup)


document_bounds(Optimiser)
