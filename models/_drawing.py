"""The pieces of a tube diagram (:mod:`models.diagram`), and the steps that draw the generic parts.

A model says how it is drawn: its ``tube_steps(name, sequence, memory)`` yields its :class:`Step` s in forward
order, built from the helpers here (a linear map, a layer norm, multi-head attention, a residual block); the
diagram asks only that (:class:`Drawn`), never the model's class.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from applicative import LayerNorm, Linear, MultiHeadAttention, Structure, StructureError

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


@runtime_checkable
class Drawn(Protocol):
    """A model that says how it is drawn: its steps in forward order, under the dotted ``name``.

    ``sequence`` is the structure of the input's sequence axis (when the model cannot know it), ``memory``
    the memory's (a lone decoder layer).
    """

    def tube_steps(self, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]: ...


def join(prefix: str, name: str) -> str:
    """A dotted module name: ``prefix.name`` (``name`` alone at the top)."""
    return f"{prefix}.{name}" if prefix else name


def need(sequence: Structure | None, model: object) -> Structure:
    """``sequence``, or a :class:`StructureError` saying that ``model`` cannot know it."""
    if sequence is None:
        raise StructureError(
            f"diagram: a {type(model).__name__} does not know the structure of its input's sequence axis; "
            "pass it, e.g. diagram(model, sequence=Vector(10))"
        )
    return sequence


def linear_step(name: str, lin: Linear[Any, Any], outer: Tubes, label: str = "linear") -> Step:
    """A :class:`~applicative.Linear` on ``outer x inp``: pants with the weight's rows, the sum's cap, a bias."""
    params = [Parameter(join(name, "weight"), (lin.out, lin.inp))]
    pants = [Gadget(lin.inp, "pair weight rows with the input")]
    if lin.bias is not None:
        params.append(Parameter(join(name, "bias"), (lin.out,)))
        pants.append(Gadget(lin.out, "zip_with add the bias"))
    cap = Gadget(lin.inp, "counit: the sum of the products")
    return Step(
        name, "linear", ((*outer, lin.inp),), (*outer, lin.out), tuple(params), tuple(pants), (cap,), label=label
    )


def norm_step(name: str, ln: LayerNorm[Any], outer: Tubes) -> Step:
    """A :class:`~applicative.LayerNorm`: two caps (the mean, the variance), the weight's and the bias's pants."""
    d = ln.d
    params = (Parameter(join(name, "weight"), (d,)), Parameter(join(name, "bias"), (d,)))
    pants = (Gadget(d, "zip_with mul the weight"), Gadget(d, "zip_with add the bias"))
    caps = (Gadget(d, "counit: the mean"), Gadget(d, "counit: the variance"))
    return Step(name, "layer_norm", ((*outer, d),), (*outer, d), params, pants, caps, label="norm")


def attention_steps(name: str, mha: MultiHeadAttention[Any], s_q: Structure, s_k: Structure) -> Iterator[Step]:
    """:class:`~applicative.MultiHeadAttention` from ``s_q`` to ``s_k``: the scores' doubly nested tube, the
    normalisation along ``s_k``, and the output projection."""
    d, k, v, h = mha.model, mha.key, mha.value, mha.heads
    w, b = join(name, "in_proj_weight"), join(name, "in_proj_bias")
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
    yield linear_step(join(name, "out_proj"), mha.out_proj, (s_q,), "out_proj")


def residual_block(
    name: str, norm: Step | None, norm_first: bool, s: Structure, d: Structure, body: Iterable[Step]
) -> Iterator[Step]:
    """``x + body(norm x)`` (pre-norm) or ``norm(x + body x)`` (``x + body x`` without a norm): a fork, the body,
    the residual's pants."""
    x = (s, d)
    yield Step(name, "copy", (x,), x, label="fork")
    if norm is not None and norm_first:
        yield norm
    yield from body
    yield Step(name, "residual", (x, x), x, pants=(Gadget(s, "zip_with add"), Gadget(d, "zip_with add")), label="+")
    if norm is not None and not norm_first:
        yield norm


def steps_of(module: object, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
    """``module``'s steps, if it says how it is drawn (:class:`Drawn`); a :class:`StructureError` if not."""
    if not isinstance(module, Drawn):
        where = f" at {name!r}" if name else ""
        raise StructureError(
            f"diagram: no tube diagram for a {type(module).__name__}{where}; it draws models that say how they are "
            "drawn (tube_steps): EncoderLayer, DecoderLayer, Transformer, Funcformer and CrossModal"
        )
    return module.tube_steps(name, sequence, memory)
