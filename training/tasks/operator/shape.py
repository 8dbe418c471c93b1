"""What an operator model is built for: the grid's axes and the channels in and out, as a checkpoint records it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from instances.axes import Axis, LayoutError
from operators.dataset import Samples

#: the most channels a recorded shape may declare (a checkpoint's record is checked against it before any model)
MAX_CHANNELS = 1024


@dataclass(frozen=True)
class Shape:
    """What a model is built for: the grid's axes and the channels in and out."""

    axes: tuple[Axis, ...]
    c_in: int
    c_out: int

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
        ``{"axes": [Axis.record(), ...], "in_channels": C_in, "out_channels": C_out}``."""
        return {"axes": [a.record() for a in self.axes], "in_channels": self.c_in, "out_channels": self.c_out}

    @classmethod
    def from_record(cls, record: object) -> Shape:
        """The inverse of :meth:`record` (a ``ValueError`` naming what is wrong: the caller names the file)."""
        if not isinstance(record, Mapping) or set(record) != {"axes", "in_channels", "out_channels"}:
            raise ValueError(f"the data's shape is a record of axes, in_channels, out_channels, got {record!r:.80}")
        for name in ("in_channels", "out_channels"):
            c = record[name]
            if type(c) is not int or not 1 <= c <= MAX_CHANNELS:
                raise ValueError(f"{name}: an int in 1..{MAX_CHANNELS}, got {c!r:.40}")
        axes = record["axes"]
        if not isinstance(axes, list) or not 1 <= len(axes) <= 2:
            raise ValueError(f"axes: a list of one or two axis records, got {axes!r:.80}")
        try:
            return cls(tuple(Axis.from_record(a) for a in axes), record["in_channels"], record["out_channels"])
        except LayoutError as e:
            raise ValueError(f"axes: {e}") from None
