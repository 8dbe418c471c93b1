"""A memory budget: what a model or a data file will take, known from its config or header before any allocation.

A model's size is a function of its config alone. Its parameter count ``P`` is the model's own, built from the
config on torch's meta device (shapes, no storage: :func:`meta_parameters`, :meth:`~training.TaskSpec.estimate`);
its memory is

* to load it (inference): ``P · s`` bytes, ``s`` the bytes of its dtype (4 for float32);
* to train it: ``4 P s`` (the weights, their gradients and Adam's two moments) plus the activations one
  batch keeps for the backward pass ``A s`` (an estimate, within a small factor: :func:`layer_activations`)
  plus the data set held in memory.

A :class:`Budget` bounds the parameters and the bytes; :func:`check` compares an :class:`Estimate` with it and
refuses past it in one line naming the file (or the option), the config field that drives the estimate (the
one whose reset to its default lowers the estimate most) and the estimate -- before anything is allocated.
The default budget fits a laptop (8 GiB: :data:`DEFAULT_GIB`); a caller raises it with a named argument
(``training.load(run, budget=Budget.memory(64))``, ``--memory 64`` on a command line).

A data file is checked from its header in the same spirit (:func:`array_headers`, :func:`check_arrays`): the
declared shape times the dtype's size (``Π shape · itemsize`` bytes), its dtype numeric, no count zero, the
file long enough to hold what it declares, the total within the budget -- all before a value is read; and
after reading, :func:`check_finite`. The order that keeps a hostile file harmless: bounds on each field
(:mod:`training.config`), then the budget, then allocation.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from torch import Tensor, nn

from .errors import DataError, UserError

GIB = 2**30
#: the default budget, in GiB: a laptop's memory with room for the rest of the machine
DEFAULT_GIB = 8.0
#: bytes per parameter of an Adam run in float32: the weight, its gradient and two moments
TRAINING_BYTES_PER_PARAMETER = 16
#: what each dtype a config names takes per value
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


class BudgetError(UserError):
    """A model or a file past the memory budget: the message names the file or option, the field and the estimate."""


@dataclass(frozen=True)
class Budget:
    """The most a model (or a data file) may take: ``max_parameters`` parameters and ``max_bytes`` bytes.

    The default fits a laptop (:data:`DEFAULT_GIB` GiB, and the parameters an Adam run trains in that much
    memory: ``max_bytes / 16``). :meth:`memory` gives the same proportions for another amount of memory.

    Raises:
        BudgetError: a bound that is not a positive integer.
    """

    max_parameters: int = int(DEFAULT_GIB * GIB) // TRAINING_BYTES_PER_PARAMETER
    max_bytes: int = int(DEFAULT_GIB * GIB)

    def __post_init__(self) -> None:
        for name in ("max_parameters", "max_bytes"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise BudgetError(f"Budget: {name} must be a positive int, got {value!r:.40}")

    @classmethod
    def memory(cls, gib: float) -> Budget:
        """A budget of ``gib`` GiB, and the parameters an Adam run trains in it (``bytes / 16``)."""
        if isinstance(gib, bool) or not isinstance(gib, int | float) or not 0 < gib < 2**40:
            raise BudgetError(f"Budget.memory: gib must be a number of GiB in (0, 2^40), got {gib!r:.40}")
        total = max(1, int(gib * GIB))
        return cls(max(1, total // TRAINING_BYTES_PER_PARAMETER), total)

    def __str__(self) -> str:
        return f"{self.max_parameters:.3g} parameters and {size(self.max_bytes)}"


@dataclass(frozen=True)
class Estimate:
    """What a model costs, from its config alone.

    Attributes:
        parameters: the exact parameter count ``P``.
        parameter_bytes: ``P · s`` (``s`` the dtype's bytes).
        activation_bytes: what one training batch keeps for the backward pass (an estimate).
        data_bytes: the data set a training run holds in memory (``0`` where not estimated).
    """

    parameters: int
    parameter_bytes: int
    activation_bytes: int = 0
    data_bytes: int = 0

    @classmethod
    def of(cls, parameters: int, dtype: str = "float32", activations: int = 0, data_bytes: int = 0) -> Estimate:
        """From counts: ``parameters`` and ``activations`` values of ``dtype`` (``DTYPE_BYTES``), ``data_bytes``."""
        s = DTYPE_BYTES[dtype]
        return cls(parameters, parameters * s, activations * s, data_bytes)

    def bytes(self, training: bool = False) -> int:
        """The memory to load the model (``training=False``: its parameters) or to train it (weights, gradients,
        Adam's moments, a batch's activations, the data)."""
        if not training:
            return self.parameter_bytes
        return 4 * self.parameter_bytes + self.activation_bytes + self.data_bytes

    def load(self, budget: Budget, training: bool = False) -> float:
        """The largest of ``parameters / max_parameters`` and ``bytes / max_bytes``: past ``1``, over budget."""
        return max(self.parameters / budget.max_parameters, self.bytes(training) / budget.max_bytes)


Cost = Callable[[Mapping[str, Any]], Estimate]


def check(
    cost: Cost,
    fields: Mapping[str, Any],
    budget: Budget | None = None,
    *,
    where: str = "",
    what: str = "the model",
    reference: Mapping[str, Any] | None = None,
    training: bool = False,
    fix: str = "raise the budget (budget=Budget.memory(GIB))",
    error: type[UserError] = BudgetError,
) -> Estimate:
    """``cost(fields)`` if it is within ``budget`` (default :class:`Budget`); else ``error`` in one line.

    Args:
        cost: the estimate from a config's fields (plain data; pure arithmetic, never a model built).
        fields: the config's fields (``training.describe(config)`` or a checkpoint's ``config``), bounds checked.
        where: what the message begins with (the file); ``""``: nothing (a command line adds its name).
        what: the thing estimated, in words.
        reference: the fields' usual values (a config's defaults): the field named is the one whose reset to its
            reference lowers the estimate most.
        training: compare the memory to train (else to load).
        fix: how to proceed besides lowering the field.
        error: the exception raised (:class:`BudgetError`; a reader passes its own, e.g. ``CheckpointError``).
    """
    budget = budget if budget is not None else Budget()
    estimate = cost(fields)
    if estimate.load(budget, training) <= 1:
        return estimate
    name = culprit(cost, fields, reference or {}, budget, training)
    field = f"config field {name}={fields[name]!r} gives " if name is not None else "its config gives "
    lower = f"lower {name}, or {fix}" if name is not None else fix
    purpose = "to train" if training else "to load"
    raise error(
        f"{where + ': ' if where else ''}{field}{what} of {estimate.parameters:.3g} parameters "
        f"({size(estimate.bytes(training))} {purpose}), past the budget of {budget}; {lower}"
    )


def culprit(
    cost: Cost, fields: Mapping[str, Any], reference: Mapping[str, Any], budget: Budget, training: bool
) -> str | None:
    """The numeric field above its ``reference`` value whose reset to it lowers the estimate most (``None``: none)."""
    best, lowest = None, cost(fields).load(budget, training)
    for name, value in fields.items():
        usual = reference.get(name)
        if not _number(value) or not _number(usual) or value <= usual:
            continue
        try:
            reset = cost({**fields, name: usual}).load(budget, training)
        except (ArithmeticError, KeyError, TypeError, ValueError):
            continue
        if reset < lowest:
            best, lowest = name, reset
    return best


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def size(n: float) -> str:
    """Bytes in words: ``512 B``, ``3.1 MiB``, ``8 GiB``, ``1.2e+03 TiB``."""
    for unit, scale in (("TiB", 2**40), ("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


# ---- the parts models are made of: exact parameter counts, estimated activations --------------------------


def linear(n_in: int, n_out: int, bias: bool = True) -> int:
    """Parameters of a linear map ``n_in -> n_out``: ``n_out n_in`` (+ ``n_out`` bias)."""
    return n_out * n_in + (n_out if bias else 0)


def layer_norm(n: int) -> int:
    """Parameters of a layer norm over ``n`` values: a scale and a shift."""
    return 2 * n


def attention(width: int, heads: int, key: int, value: int) -> int:
    """Parameters of multi-head attention on ``width`` channels, ``heads`` heads of ``key`` / ``value`` values:
    the fused input map ``(2 H k + H v) x (width + 1)`` and the output map ``H v -> width``."""
    return linear(width, heads * (2 * key + value)) + linear(heads * value, width)


def encoder_layer(width: int, hidden: int, heads: int, key: int, value: int, norms: int = 2) -> int:
    """Parameters of one encoder layer: attention, the MLP ``width -> hidden -> width`` and ``norms`` layer norms."""
    return (
        attention(width, heads, key, value) + linear(width, hidden) + linear(hidden, width) + norms * layer_norm(width)
    )


def layer_activations(batch: int, sequence: int, width: int, hidden: int, heads: int, keys: int | None = None) -> int:
    """Values one encoder layer keeps for the backward pass on ``batch`` sequences of ``sequence`` positions
    (an estimate): about ten tensors of ``B S width`` (norms, projections, residuals), two of ``B S hidden``
    (the MLP) and two of ``B H S S_k`` scores (``keys``: ``S_k`` key positions, default ``sequence``)."""
    k = sequence if keys is None else keys
    return batch * sequence * (10 * width + 2 * hidden) + 2 * batch * heads * sequence * k


def meta_parameters(build: Callable[[], nn.Module]) -> int | None:
    """The parameter count of ``build()``, built on torch's meta device (shapes only, no storage); ``None`` if it
    cannot be built there (a constructor that reads values).

    Safe only once the config's fields are bounded, since the construction itself still runs (a loop per layer,
    say) -- bound the fields first. A model counted this way builds its constant tensors by value on the CPU and
    moves them (an elementwise op on a meta tensor would import torch's compiler, seconds on a first call).
    """
    try:
        with torch.device("meta"):
            module = build()
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return None
    return sum(p.numel() for p in module.parameters())


# ---- data files: sizes from the header, before a value is read -------------------------------------------


@dataclass(frozen=True)
class ArrayHeader:
    """One array as its file declares it: its name (``""`` in a ``.npy``), shape and dtype, and the bytes there."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    stored: int

    @property
    def count(self) -> int:
        """Values: ``Π shape``."""
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        """``Π shape · itemsize``: what the array takes in memory."""
        return self.count * self.dtype.itemsize


def array_headers(path: str | Path) -> list[ArrayHeader]:
    """The arrays a ``.npy`` or ``.npz`` file declares, read from its headers alone (no value is read).

    Raises:
        DataError: no such file, another format, an unreadable or truncated header, a dtype that is not numbers
            (objects would need pickle, which nothing here loads), or fewer bytes than the header declares.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file; check the path")
    if p.suffix == ".npy":
        with open(p, "rb") as f:
            return [_header(p, "", f, p.stat().st_size)]
    if p.suffix == ".npz":
        try:
            with zipfile.ZipFile(p) as z:
                out = []
                for info in z.infolist():
                    if not info.filename.endswith(".npy"):
                        raise DataError(f"{p}: holds {info.filename!r}, not an array (.npy) member; not an .npz")
                    with z.open(info) as f:
                        out.append(_header(p, info.filename[:-4], f, info.file_size))
                return out
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise DataError(f"{p}: cannot read it as an .npz ({_first(e)}); check the file") from None
    raise DataError(f"{p}: not an array file: expected .npy or .npz (numpy's own formats), got {p.suffix or 'none'}")


def _header(path: Path, name: str, f: IO[bytes], length: int) -> ArrayHeader:
    where = f"{path}" + (f" [{name}]" if name else "")
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, OSError, EOFError) as e:
        raise DataError(f"{where}: cannot read its header (not a numpy array, or truncated: {_first(e)})") from None
    if dtype.kind not in "biufc" or dtype.fields is not None:
        raise DataError(
            f"{where}: holds dtype {dtype}, not numbers; arrays of objects or records need pickle, which is never "
            "loaded: save plain numeric arrays"
        )
    header = ArrayHeader(name, tuple(int(n) for n in shape), dtype, length - f.tell())
    if header.count == 0:
        raise DataError(f"{where}: holds no values (shape {header.shape}); every axis needs at least one entry")
    if header.stored < header.bytes:
        raise DataError(
            f"{where}: declares shape {header.shape} of {dtype} ({size(header.bytes)}) but holds "
            f"{size(header.stored)}: the file is truncated; write it again"
        )
    return header


def check_arrays(path: str | Path, budget: Budget | None = None) -> list[ArrayHeader]:
    """:func:`array_headers`, and their total bytes within ``budget`` (default :class:`Budget`): a
    :class:`BudgetError` naming the file, the largest array, its shape and the total."""
    budget = budget if budget is not None else Budget()
    headers = array_headers(path)
    total = sum(h.bytes for h in headers)
    if total > budget.max_bytes:
        big = max(headers, key=lambda h: h.bytes)
        name = f"array {big.name!r} " if big.name else "its array "
        raise BudgetError(
            f"{path}: {name}of shape {big.shape} ({big.dtype}) takes {size(big.bytes)}, {size(total)} in all, past the "
            f"budget of {size(budget.max_bytes)}; use a smaller file, or raise the budget (Budget.memory(GIB))"
        )
    return headers


def check_finite(values: Tensor | np.ndarray[Any, Any], where: str) -> None:
    """Raise :class:`DataError` if ``values`` hold NaN or infinities: how many, of how many, and the first's index."""
    t = torch.as_tensor(values)
    if not (t.is_floating_point() or t.is_complex()):
        return
    bad = ~torch.isfinite(t)
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0].tolist())
        raise DataError(
            f"{where}: holds {int(bad.sum())} NaN or infinite values of {t.numel()} (the first at index {first}); "
            "every value must be finite"
        )


def check_counts(headers: Sequence[ArrayHeader], where: str, axis: int = 0) -> int:
    """The common length of ``headers``' axis ``axis`` (samples), or a :class:`DataError` naming both sides."""
    lengths = {h.name: h.shape[axis] if len(h.shape) > axis else None for h in headers}
    distinct = set(lengths.values())
    if None in distinct or len(distinct) != 1:
        shown = ", ".join(f"{n or 'array'}: {v}" for n, v in lengths.items())
        raise DataError(f"{where}: the arrays must have one length along axis {axis} (samples), got {shown}")
    (n,) = distinct
    assert n is not None
    return n


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:120]
