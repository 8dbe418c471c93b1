"""What an operator model is built for: the grid's axes and the channels in and out, as a checkpoint records it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from operators.layout import Axis


@dataclass(frozen=True)
class Shape:
    """What a model is built for: the grid's axes and the channels in and out (plain data in a checkpoint)."""

    axes: tuple[Axis, ...]
    c_in: int
    c_out: int

    @property
    def dims(self) -> int:
        return len(self.axes)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (a checkpoint's config holds no nesting): ``data_c_in``, ``data_c_out``, and per axis
        ``data_x_layout``, ``data_x_lo``, ``data_x_hi``, ``data_x_boundary`` (then ``data_y_...``)."""
        out: dict[str, Any] = {"data_c_in": self.c_in, "data_c_out": self.c_out}
        for name, a in zip("xy", self.axes, strict=False):
            out |= {f"data_{name}_layout": a.layout, f"data_{name}_lo": a.lo, f"data_{name}_hi": a.hi}
            out[f"data_{name}_boundary"] = a.bc
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Shape:
        """The inverse of :meth:`to_dict` (a ``ValueError`` naming what is wrong: the caller names the file)."""
        c_in, c_out = d.get("data_c_in"), d.get("data_c_out")
        for name, c in (("data_c_in", c_in), ("data_c_out", c_out)):
            if type(c) is not int or not 1 <= c <= 1024:
                raise ValueError(f"{name}: an int in 1..1024, got {c!r}")
        axes = []
        for name in "xy":
            if f"data_{name}_layout" not in d:
                break
            lo, hi = d.get(f"data_{name}_lo"), d.get(f"data_{name}_hi")
            if not isinstance(lo, int | float) or not isinstance(hi, int | float):
                raise ValueError(f"data_{name}_lo, data_{name}_hi: numbers, got {lo!r}, {hi!r}")
            axes.append(Axis(d[f"data_{name}_layout"], float(lo), float(hi), d.get(f"data_{name}_boundary")))
        if not axes:
            raise ValueError("no axis recorded (data_x_layout)")
        assert isinstance(c_in, int) and isinstance(c_out, int)
        return cls(tuple(axes), c_in, c_out)

    @staticmethod
    def split(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A checkpoint's config -> (the config's fields, the data's shape fields)."""
        data = {k: v for k, v in record.items() if k.startswith("data_")}
        return {k: v for k, v in record.items() if k not in data}, data
