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

:func:`diagram` walks a model's modules and returns a :class:`Diagram`: the steps in the order the
forward pass runs them, each with the module it belongs to, its input and output tubes (structures,
outermost first), its parameters, pants and caps. The structures come from the modules' declared
structures (``Linear.inp``/``out``, ``LayerNorm.d``, attention's ``key``/``value``/``heads``) and the
sequence structure the caller names. :func:`render` draws it with matplotlib (imported only there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from applicative import LayerNorm, Linear, MultiHeadAttention, Structure, StructureError

from .crossmodal import CrossModal
from .funcformer import Funcformer
from .transformer import DecoderLayer, EncoderLayer, Transformer

#: tubes from the outermost in, e.g. ``(Chebyshev(16), Vector(32))``
Tubes = tuple[Structure, ...]


@dataclass(frozen=True)
class Parameter:
    """A red triangle: the parameter tensor ``name`` (or its ``part``: ``q``/``k``/``v`` rows) on ``tubes``."""

    name: str
    tubes: Tubes
    part: str = ""


@dataclass(frozen=True)
class Gadget:
    """Pants (``pair`` of two tubes of ``structure``) or a cap (``counit`` of ``structure``), and what it does."""

    structure: Structure
    what: str


@dataclass(frozen=True)
class Step:
    """One operation of the forward pass, in the module ``module`` (its dotted name; ``""`` is the model).

    Attributes:
        kind: ``linear``, ``layer_norm``, ``attention``, ``fmap``, ``copy``, ``residual``, ``add``, ``queries``.
        inputs, output: the tubes going in and coming out.
        inner: tubes inside the step (attention: per-head queries, keys, values, and the scores).
    """

    module: str
    kind: str
    inputs: tuple[Tubes, ...]
    output: Tubes
    parameters: tuple[Parameter, ...] = ()
    pants: tuple[Gadget, ...] = ()
    caps: tuple[Gadget, ...] = ()
    inner: tuple[Tubes, ...] = ()
    label: str = ""


@dataclass(frozen=True)
class Diagram:
    """A model's tube diagram: its steps in forward order."""

    steps: tuple[Step, ...] = field(default=())

    @property
    def tubes(self) -> tuple[Structure, ...]:
        """Every structure that has a tube somewhere in the diagram, in order of first appearance."""
        seen: dict[Structure, None] = {}
        for s in self.steps:
            for t in (*s.inputs, s.output, *s.inner, *(p.tubes for p in s.parameters)):
                seen.update(dict.fromkeys(t))
        return tuple(seen)

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return tuple(p for s in self.steps for p in s.parameters)

    @property
    def pants(self) -> tuple[Gadget, ...]:
        return tuple(g for s in self.steps for g in s.pants)

    @property
    def caps(self) -> tuple[Gadget, ...]:
        return tuple(g for s in self.steps for g in s.caps)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _linear(name: str, lin: Linear[Structure, Structure], outer: Tubes, label: str = "linear") -> Step:
    params = [Parameter(_join(name, "weight"), (lin.out, lin.inp))]
    pants = [Gadget(lin.inp, "pair weight rows with the input")]
    if lin.bias is not None:
        params.append(Parameter(_join(name, "bias"), (lin.out,)))
        pants.append(Gadget(lin.out, "zip_with add the bias"))
    cap = Gadget(lin.inp, "counit: the sum of the products")
    return Step(
        name, "linear", ((*outer, lin.inp),), (*outer, lin.out), tuple(params), tuple(pants), (cap,), label=label
    )


def _norm(name: str, ln: LayerNorm[Structure], outer: Tubes) -> Step:
    d = ln.d
    params = (Parameter(_join(name, "weight"), (d,)), Parameter(_join(name, "bias"), (d,)))
    pants = (Gadget(d, "zip_with mul the weight"), Gadget(d, "zip_with add the bias"))
    caps = (Gadget(d, "counit: the mean"), Gadget(d, "counit: the variance"))
    return Step(name, "layer_norm", ((*outer, d),), (*outer, d), params, pants, caps, label="norm")


def _attention(name: str, mha: MultiHeadAttention[Structure], s_q: Structure, s_k: Structure) -> Iterator[Step]:
    d, k, v, h = mha.model, mha.key, mha.value, mha.heads
    w, b = _join(name, "in_proj_weight"), _join(name, "in_proj_bias")
    params = [Parameter(w, (mha.keys, d), "q"), Parameter(w, (mha.keys, d), "k"), Parameter(w, (mha.values, d), "v")]
    if mha.in_proj_bias is not None:
        params += [Parameter(b, (mha.keys,), "q"), Parameter(b, (mha.keys,), "k"), Parameter(b, (mha.values,), "v")]
    pants = (Gadget(d, "pair projections with the input"), Gadget(k, "pair queries with keys"),
             Gadget(s_k, "pair weights with values"))  # fmt: skip
    caps = (Gadget(d, "counit of the projections"), Gadget(k, "counit: q · k"),
            Gadget(s_k, f"counit: Σ weights · values ({type(mha.normalise).__name__} along it)"))  # fmt: skip
    inner = ((s_q, k), (s_k, k), (s_k, v), (s_q, s_k))
    yield Step(name, "attention", ((s_q, d), (s_k, d)), (s_q, mha.values), tuple(params), pants, caps, inner,
               label=f"attention ×{h}")  # fmt: skip
    yield _linear(_join(name, "out_proj"), mha.out_proj, (s_q,), "out_proj")


def _layer(name: str, layer: nn.Module, s: Structure, memory: Structure | None) -> Iterator[Step]:
    if not isinstance(layer, (EncoderLayer, DecoderLayer)):
        raise StructureError(f"diagram: {name!r} is a {type(layer).__name__}, not an EncoderLayer or DecoderLayer")
    d, hidden = layer.model, layer.linear1.out
    x = (s, d)

    def block(i: int, body: list[Step]) -> Iterator[Step]:
        norm = _norm(_join(name, f"norm{i}"), getattr(layer, f"norm{i}"), (s,))
        yield Step(name, "copy", (x,), x, label="fork")
        if layer.norm_first:
            yield norm
        yield from body
        yield Step(name, "residual", (x, x), x, pants=(Gadget(s, "zip_with add"), Gadget(d, "zip_with add")),
                   label="+")  # fmt: skip
        if not layer.norm_first:
            yield norm

    i = 1
    yield from block(i, list(_attention(_join(name, "self_attn"), layer.self_attn, s, s)))
    if isinstance(layer, DecoderLayer):
        if memory is None:
            raise StructureError(f"diagram: the decoder layer {name!r} needs the memory's structure; pass memory=")
        i += 1
        yield from block(i, list(_attention(_join(name, "multihead_attn"), layer.multihead_attn, s, memory)))
    ff = [
        _linear(_join(name, "linear1"), layer.linear1, (s,), "linear1"),
        Step(name, "fmap", ((s, hidden),), (s, hidden), label=getattr(layer.activation, "__name__", "σ")),
        _linear(_join(name, "linear2"), layer.linear2, (s,), "linear2"),
    ]
    yield from block(i + 1, ff)


def _steps(model: nn.Module, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
    if isinstance(model, (EncoderLayer, DecoderLayer)):
        yield from _layer(name, model, _need(sequence, model), memory)
    elif isinstance(model, Funcformer):
        t, s = model.transformer, model.sequence
        yield _linear(_join(name, "transformer.embed"), t.embed, (s,), "embed")
        if model.position is not None:
            p = Parameter(_join(name, "position"), (s, model.model))
            pants = (Gadget(s, "zip_with add"), Gadget(model.model, "zip_with add"))
            yield Step(name, "add", ((s, model.model),), (s, model.model), (p,), pants, label="+ position")
        yield from _stack(t, _join(name, "transformer"), s, unembed=True)
    elif isinstance(model, Transformer):
        yield _linear(_join(name, "embed"), model.embed, (_need(sequence, model),), "embed")
        yield from _stack(model, name, _need(sequence, model), unembed=True)
    elif isinstance(model, CrossModal):
        m, q = _need(sequence, model), model.query
        yield _linear(_join(name, "embed"), model.embed, (m,), "embed")
        for i, layer in enumerate(model.encoder):
            yield from _layer(_join(name, f"encoder.{i}"), layer, m, None)
        yield _norm(_join(name, "memory_norm"), model.memory_norm, (m,))
        yield Step(name, "queries", (), (q, model.model), (Parameter(_join(name, "queries"), (q, model.model)),),
                   label="queries")  # fmt: skip
        for i, layer in enumerate(model.decoder):
            yield from _layer(_join(name, f"decoder.{i}"), layer, q, m)
        if model.norm is not None:
            yield _norm(_join(name, "norm"), model.norm, (q,))
        yield _linear(_join(name, "unembed"), model.unembed, (q,), "unembed")
    else:
        raise StructureError(
            f"diagram: no tube diagram for a {type(model).__name__}; it draws EncoderLayer, DecoderLayer, "
            "Transformer, Funcformer and CrossModal"
        )


def _stack(t: Transformer[Structure, Structure], name: str, s: Structure, unembed: bool) -> Iterator[Step]:
    for i, layer in enumerate(t.layers):
        yield from _layer(_join(name, f"layers.{i}"), layer, s, None)
    if t.norm is not None:
        yield _norm(_join(name, "norm"), t.norm, (s,))
    if unembed:
        yield _linear(_join(name, "unembed"), t.unembed, (s,), "unembed")


def _need(sequence: Structure | None, model: nn.Module) -> Structure:
    if sequence is None:
        raise StructureError(
            f"diagram: a {type(model).__name__} does not know the structure of its input's sequence axis; "
            "pass it, e.g. diagram(model, sequence=Vector(10))"
        )
    return sequence


def diagram(model: nn.Module, sequence: Structure | None = None, memory: Structure | None = None) -> Diagram:
    """The tube diagram of ``model``.

    Args:
        model: an :class:`EncoderLayer`, :class:`DecoderLayer`, :class:`Transformer`, :class:`Funcformer`
            or :class:`CrossModal`.
        sequence: the structure of the input's sequence axis (the tokens' for a ``CrossModal``); a
            Funcformer knows its own.
        memory: the memory's sequence structure (a lone ``DecoderLayer`` only).

    Raises:
        StructureError: for another kind of model, or a structure the model cannot know that was not given.
    """
    return Diagram(tuple(_steps(model, "", sequence, memory)))


def render(d: Diagram, path: str | Path, title: str = "") -> None:
    """Draw ``d`` to ``path`` (the suffix picks the format: ``.svg``, ``.png``, ``.pdf``)."""
    from ._tubes import draw  # matplotlib is imported only to draw

    draw(d, Path(path), title)
