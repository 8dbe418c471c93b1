"""What an operator model is built for: the grid's axes, the channels in and out and, for time-dependent data, how
time enters (:class:`Time`), as a checkpoint records it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from instances.axes import Axis, LayoutError
from operators.dataset import Samples

#: the most channels a recorded shape may declare (a checkpoint's record is checked against it before any model)
MAX_CHANNELS = 1024
#: the most states a recorded time axis may declare (a window, a horizon)
MAX_STATES = 1 << 16

Form = Literal["trajectory", "initial"]


@dataclass(frozen=True)
class Time:
    """How a time axis enters a run: what the files store and what the model maps.

    Attributes:
        form: ``"trajectory"``: the files store trajectories ``(N, T, *grid[, C])`` and the model maps a window of
            ``window`` consecutive states (``window · C`` input channels, the oldest first) to the next one, applied
            to its own predictions for ``horizon`` steps; ``"initial"``: the files store an initial condition
            ``(N, *grid[, C_in])`` and its trajectory ``(N, T, *grid[, C])``, and the model maps the one to the
            other's ``T = horizon`` states at once (``T · C`` output channels, state-major).
        axis: where the files store time: the axis of the trajectories' arrays (the samples' axis is 0).
        window: the states in (``"trajectory"``); ``0`` for ``"initial"``.
        horizon: the states predicted (a rollout's steps; the trajectory's length for ``"initial"``).
        fields: the channels ``C`` of one state.
    """

    form: Form
    axis: int
    window: int
    horizon: int
    fields: int

    def __post_init__(self) -> None:
        if self.form not in ("trajectory", "initial"):
            raise ValueError(f"form: 'trajectory' or 'initial', got {self.form!r:.40}")
        for name in ("axis", "horizon", "fields"):
            v = getattr(self, name)
            if type(v) is not int or not 1 <= v <= MAX_STATES:
                raise ValueError(f"{name}: an int in 1..{MAX_STATES}, got {v!r:.40}")
        least = 1 if self.form == "trajectory" else 0
        if type(self.window) is not int or not least <= self.window <= (MAX_STATES if least else 0):
            raise ValueError(
                f"window: {'an int >= 1' if least else '0 for an initial condition'}, got {self.window!r:.40}"
            )

    def channels(self, c_in: int) -> tuple[int, int]:
        """The model's channels in and out for inputs of ``c_in`` channels (an initial condition's; a trajectory's
        are its window's)."""
        if self.form == "trajectory":
            return self.window * self.fields, self.fields
        return c_in, self.horizon * self.fields

    def record(self) -> dict[str, Any]:
        """Plain data: ``{"form", "axis", "window", "horizon", "fields"}``."""
        return {
            "form": self.form,
            "axis": self.axis,
            "window": self.window,
            "horizon": self.horizon,
            "fields": self.fields,
        }

    @classmethod
    def from_record(cls, record: object) -> Time:
        """The inverse of :meth:`record` (a ``ValueError`` naming what is wrong)."""
        keys = {"form", "axis", "window", "horizon", "fields"}
        if not isinstance(record, Mapping) or set(record) != keys:
            raise ValueError(f"time: a record of {', '.join(sorted(keys))}, got {record!r:.80}")
        return cls(record["form"], record["axis"], record["window"], record["horizon"], record["fields"])


@dataclass(frozen=True)
class Shape:
    """What a model is built for: the grid's axes, the channels in and out, and how time enters (``None``: no
    time axis)."""

    axes: tuple[Axis, ...]
    c_in: int
    c_out: int
    time: Time | None = None

    @property
    def dims(self) -> int:
        return len(self.axes)

    @classmethod
    def of(cls, s: Samples) -> Shape:
        """The shape of samples ``s``."""
        c_in, c_out = s.channels
        return cls(s.axes, c_in, c_out)

    def record(self) -> dict[str, Any]:
        """The shape as a record (plain nested data, for a checkpoint):
        ``{"axes": [Axis.record(), ...], "in_channels": C_in, "out_channels": C_out}``, and ``"time":
        Time.record()`` when there is a time axis."""
        out = {"axes": [a.record() for a in self.axes], "in_channels": self.c_in, "out_channels": self.c_out}
        return out if self.time is None else {**out, "time": self.time.record()}

    @classmethod
    def from_record(cls, record: object) -> Shape:
        """The inverse of :meth:`record` (a ``ValueError`` naming what is wrong: the caller names the file)."""
        keys = {"axes", "in_channels", "out_channels"}
        if not isinstance(record, Mapping) or not keys <= set(record) <= keys | {"time"}:
            raise ValueError(
                f"the data's shape is a record of axes, in_channels, out_channels (and time), got {record!r:.80}"
            )
        time = None if "time" not in record else Time.from_record(record["time"])
        for name in ("in_channels", "out_channels"):
            c = record[name]
            if type(c) is not int or not 1 <= c <= MAX_CHANNELS:
                raise ValueError(f"{name}: an int in 1..{MAX_CHANNELS}, got {c!r:.40}")
        axes = record["axes"]
        if not isinstance(axes, list) or not 1 <= len(axes) <= 2:
            raise ValueError(f"axes: a list of one or two axis records, got {axes!r:.80}")
        try:
            out = cls(tuple(Axis.from_record(a) for a in axes), record["in_channels"], record["out_channels"], time)
        except LayoutError as e:
            raise ValueError(f"axes: {e}") from None
        if time is not None and (out.c_in, out.c_out) != time.channels(out.c_in):
            raise ValueError(f"time: {time.form} of {time} does not give channels {out.c_in} in, {out.c_out} out")
        return out
