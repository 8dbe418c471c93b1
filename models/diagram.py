"""Tube diagrams of a model (the design source's Part 4), read off its modules.

A value on ``S x D`` is a wire wrapped in two tubes, ``S`` outside ``D``; the model's operations are
the diagram's gadgets:

* **pants** -- ``pair``/``zip_with``: two tubes of one structure merged into one (a weight's input
  tube with the input's, a residual sum, a query's tube with a key's);
* **caps** -- ``counit``: a tube capped off, its structure collapsed (the sum in a matrix product,
  the mean of a layer norm, the integral over a Chebyshev axis);
* **red triangles** -- learned parameters, each an element of its own nest of tubes
  (``W : O x I``); a fork copies a value (a residual branch);
* attention's doubly nested tube ``S_q x S_k`` of scores, normalised along ``S_k`` (the σ box).

:func:`diagram` returns a :class:`Diagram`: the steps in the order the forward pass runs them, each with the
module it belongs to, its input and output tubes (structures, outermost first), its parameters, pants and caps.
Each model says how it is drawn (its ``tube_steps``; ``Drawn``), from its modules'
declared structures (``Linear.inp``/``out``, ``LayerNorm.d``, attention's ``key``/``value``/``heads``) and the
sequence structure the caller names. :func:`render` draws it with matplotlib (imported only there).
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from applicative import Structure

from ._drawing import Diagram, Gadget, Parameter, Step, Tubes, steps_of

__all__ = ["Diagram", "Gadget", "Parameter", "Step", "Tubes", "diagram", "render"]


def diagram(model: nn.Module, sequence: Structure | None = None, memory: Structure | None = None) -> Diagram:
    """The tube diagram of ``model``.

    Args:
        model: a model that says how it is drawn (``tube_steps``): an :class:`EncoderLayer`,
            :class:`DecoderLayer`, :class:`Transformer`, :class:`Funcformer` or :class:`CrossModal`.
        sequence: the structure of the input's sequence axis (the tokens' for a ``CrossModal``); a
            Funcformer knows its own.
        memory: the memory's sequence structure (a lone ``DecoderLayer`` only).

    Raises:
        StructureError: for a model that does not say how it is drawn, or a structure the model cannot know that
            was not given.
    """
    return Diagram(tuple(steps_of(model, "", sequence, memory)))


def render(d: Diagram, path: str | Path, title: str = "") -> None:
    """Draw ``d`` to ``path`` (the suffix picks the format: ``.svg``, ``.png``, ``.pdf``)."""
    from ._tubes import draw  # matplotlib is imported only to draw

    draw(d, Path(path), title)
