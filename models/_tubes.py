"""Drawing a :class:`~models.diagram.Diagram` with matplotlib (imported by :func:`models.diagram.render` only).

Left to right, one column per step: the value leaving the step as nested tubes (outermost structure
widest, the wire in the middle), red triangles above for its parameters, black triangles capping the
tubes it collapses (counits), pants (two legs merging into one tube) below for each ``pair``, a fork
for a copy, and a σ box over attention's doubly nested tube of scores.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Polygon, Rectangle

from applicative import Structure

from ._drawing import Diagram, Parameter, Step, Tubes

PALETTE = ("#4c72b0", "#55a868", "#8172b2", "#ccb974", "#64b5cd", "#dd8452", "#937860", "#8c8c8c")
COLUMN = 1.6


def _colour(s: Structure) -> str:
    """One colour per structure (its class and size): a sequence and a model of one class differ."""
    return PALETTE[zlib.crc32(_name(s).encode()) % len(PALETTE)]


def _name(s: Structure) -> str:
    return f"{type(s).__name__}({s.size})"


def _tubes(ax: object, x: float, tubes: Tubes, width: float, show: bool) -> None:
    heights = [1.0 - 0.8 * i / max(1, len(tubes)) for i in range(len(tubes))]
    for s, h in zip(tubes, heights, strict=True):
        box = FancyBboxPatch((x, -h / 2), width, h, boxstyle="round,pad=0,rounding_size=0.12",
                             facecolor=_colour(s), alpha=0.28, edgecolor=_colour(s), lw=1.2)  # fmt: skip
        ax.add_patch(box)  # type: ignore[attr-defined]
    ax.plot([x, x + width], [0, 0], color="black", lw=0.8)  # type: ignore[attr-defined]
    if show:
        for s, h in zip(tubes, heights, strict=True):
            ax.text(x + 0.04, -h / 2 + 0.02, _name(s), fontsize=5, va="bottom")  # type: ignore[attr-defined]


def _triangle(ax: object, x: float, y: float, colour: str, right: bool = False, r: float = 0.11) -> None:
    pts = [(x - r, y - r), (x + r, y), (x - r, y + r)] if right else [(x - r, y - r), (x + r, y - r), (x, y + r)]
    ax.add_patch(Polygon(pts, closed=True, facecolor=colour, edgecolor="black", lw=0.5))  # type: ignore[attr-defined]


def _label(p: Parameter) -> str:
    name = p.name.rsplit(".", 1)[-1] + (f"[{p.part}]" if p.part else "")
    return f"{name}: {' ∘ '.join(_name(s) for s in p.tubes)}"


def _width(step: Step) -> float:
    """A column wide enough for its parameters' labels."""
    return max([COLUMN, *(0.5 + 0.055 * len(_label(p)) for p in step.parameters)])


def _glyphs(ax: object, step: Step, xc: float) -> None:
    for j, p in enumerate(step.parameters):
        y = 0.75 + 0.32 * j
        _triangle(ax, xc, y, "#d62728")
        ax.text(xc + 0.14, y, _label(p), fontsize=4, va="center")  # type: ignore[attr-defined]
    for j in range(len(step.caps)):
        _triangle(ax, xc - 0.25 + 0.25 * j, 0.0, "black", right=True, r=0.08)
    for j, g in enumerate(step.pants):
        y = -0.75 - 0.3 * j
        for dy in (0.1, -0.1):
            ax.plot([xc - 0.35, xc - 0.1], [y + dy, y], color=_colour(g.structure), lw=2.5, alpha=0.8)  # type: ignore[attr-defined]
        ax.plot([xc - 0.1, xc + 0.1], [y, y], color=_colour(g.structure), lw=4, alpha=0.8)  # type: ignore[attr-defined]
        ax.text(xc + 0.14, y, _name(g.structure), fontsize=4, va="center")  # type: ignore[attr-defined]
    if step.kind == "copy":
        for dy in (0.35, -0.35):
            ax.plot([xc - 0.3, xc + 0.5], [0, dy], color="black", lw=1.0)  # type: ignore[attr-defined]
    if step.kind == "attention":
        scores = step.inner[-1]
        ax.add_patch(Rectangle((xc - 0.3, 0.25), 0.6, 0.3, facecolor=_colour(scores[1]), alpha=0.5))  # type: ignore[attr-defined]
        ax.text(xc, 0.4, "σ", ha="center", va="center", fontsize=8)  # type: ignore[attr-defined]


def draw(d: Diagram, path: Path, title: str) -> None:
    """Write ``d`` to ``path`` in the format its suffix names."""
    fig = Figure(figsize=(max(4.0, 0.6 * sum(_width(s) for s in d.steps)), 4.0))
    ax = fig.add_subplot()
    previous: Tubes = ()
    x = 0.0
    for i, step in enumerate(d.steps):
        w = _width(step)
        _tubes(ax, x, step.output, w, step.output != previous)
        xc = x + min(w, COLUMN) / 2
        _glyphs(ax, step, xc)
        ax.text(xc, -1.55 - 0.25 * (i % 2), step.label or step.kind, ha="center", fontsize=5)
        previous, x = step.output, x + w
    ax.set_xlim(-0.2, x + 0.2)
    ax.set_ylim(-2.2, 2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=8)
    fig.savefig(path, bbox_inches="tight", dpi=200)
