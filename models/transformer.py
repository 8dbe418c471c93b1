"""Transformers generic over their structures: encoder, causal decoder, encoder--decoder.

The design source's ``runTransformer``::

    runTransformer = mul_mmt unembed . foldl runTransformerLayer layers . mul_mmt embed

with a sequence structure ``S``, input features ``F``, model ``D`` and hidden
``Dff``; a value ``S x F`` maps to ``S x F``. Layers are pre- or post-norm
residual blocks of multi-head attention and an MLP, with sub-module names
matching ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer``
(``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1..3``), so a
PyTorch layer's ``state_dict`` loads directly.

Nothing here knows which structures it runs on: vectors give the standard
Transformer, Chebyshev series the Funcformer, trees a tree Transformer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar, cast

import torch
from torch import Tensor, nn

from applicative import (
    CausalSoftmax,
    Field,
    LayerNorm,
    Linear,
    MultiHeadAttention,
    Normalise,
    Pointwise,
    Structure,
    StructureError,
    add,
    expect_field,
    mlp,
    mul_mmt,
    position_wise,
    require_order,
)
from applicative.tensors import summary

from ._drawing import Step, attention_steps, join, linear_step, need, norm_step, residual_block, steps_of
from ._inputs import model_input

S = TypeVar("S", bound=Structure)
T = TypeVar("T", bound=Structure)
D = TypeVar("D", bound=Structure)
Fe = TypeVar("Fe", bound=Structure)


def require_order_at_forward(model: str, layers: Iterable[nn.Module], x: Field[S, Fe], fix: str) -> None:
    """Raise :class:`StructureError` if a layer's self-attention is causal and ``x``'s sequence has no order.

    The one capability a model cannot check when it is built: it is generic over its sequence
    structure, which arrives with the input.
    """
    if any(
        isinstance(layer, _Layer) and layer.self_attn is not None and layer.self_attn.normalise.causal
        for layer in layers
    ):
        require_order(
            x.structures[0],
            f"{model} (causal self-attention, sequence checked at forward)",
            f"use an ordered sequence structure (Vector, Padded), or {fix}",
        )


def head_structure(model: Structure, heads: int) -> Structure:
    """The per-head structure for ``heads`` heads over ``model``: its declared split (capability ``split``).

    ``Vector(64)`` splits into ``Vector(16)`` for 4 heads, ``Chebyshev(16)`` into ``Chebyshev(4)``;
    a structure that declares no split supports only ``heads=1`` unless key/value structures are given.
    """
    return model.split(heads)


def check_count(op: str, name: str, value: object, least: int, note: str = "") -> None:
    """Raise :class:`StructureError` unless ``value`` is an ``int`` (not a ``bool``) ``>= least``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return
    plain = isinstance(value, int) and not isinstance(value, bool)
    shown = repr(value) if plain else f"{summary(value, 40)} ({type(value).__name__})"
    raise StructureError(
        f"{op}: {name} must be an int >= {least}, got {shown}; pass e.g. {name}={max(least, 1)}"
        + (f" ({note})" if note else "")
    )


class _Layer(nn.Module, Generic[D]):
    """Shared parts of encoder and decoder layers: self-attention, MLP, and the norms."""

    def __init__(
        self,
        model: D,
        hidden: Structure,
        heads: int,
        n_norms: int,
        *,
        key: Structure | None,
        value: Structure | None,
        normalise: Normalise | None,
        norm_first: bool,
        activation: Pointwise,
        eps: float,
        dtype: torch.dtype | None,
        device: torch.device | str | None,
        attend: bool = True,
    ) -> None:
        check_count(type(self).__name__, "heads", heads, 1)
        super().__init__()
        k = key if key is not None else head_structure(model, heads)
        v = value if value is not None else k
        kw = {"dtype": dtype, "device": device}
        self.model, self.norm_first, self.activation = model, norm_first, activation
        self.self_attn: MultiHeadAttention[D] | None = (
            MultiHeadAttention(model, k, v, heads, normalise, **kw)  # type: ignore[arg-type]
            if attend
            else None
        )
        self.linear1: Linear[D, Structure] = Linear(model, hidden, **kw)  # type: ignore[arg-type]
        self.linear2: Linear[Structure, D] = Linear(hidden, model, **kw)  # type: ignore[arg-type]
        for i in range(1 if attend else 2, n_norms + 1):  # a layer that does not attend has no attention norm
            self.add_module(f"norm{i}", LayerNorm(model, eps, **kw))  # type: ignore[arg-type]
        self._heads = (k, v, heads)

    def norm_module(self, i: int) -> LayerNorm[D] | None:
        """Norm ``i`` (``norm1``, ``norm2``, ...), or ``None`` in a layer built without norms."""
        return cast("LayerNorm[D] | None", getattr(self, f"norm{i}", None))

    def norm(self, i: int, x: Field[S, D]) -> Field[S, D]:
        """Norm ``i`` of ``x`` (``x`` itself in a layer built without norms)."""
        ln = self.norm_module(i)
        return x if ln is None else ln(x)

    def feed_forward(self, x: Field[S, D]) -> Field[S, D]:
        """The MLP at each position of the sequence alone (:func:`~applicative.position_wise`): on a series its
        activation goes to the points and back once, and the biases add at the points."""
        l1, l2 = self.linear1, self.linear2
        b1, b2 = l1.bias_field, l2.bias_field
        assert b1 is not None and b2 is not None
        return position_wise(lambda y: mlp(l1.weight_field, b1, l2.weight_field, b2, self.activation, y), x)

    def block(self, i: int, x: Field[S, D], f: Callable[[Field[S, D]], Field[S, D]]) -> Field[S, D]:
        """Residual block ``i``: ``x + f(norm_i x)`` (pre-norm) or ``norm_i (x + f x)`` (post-norm)."""
        if self.norm_first:
            return add(x, f(self.norm(i, x)))
        return self.norm(i, add(x, f(x)))

    def attention(self) -> MultiHeadAttention[D]:
        """The self-attention (a layer built with ``attend=False`` has none: a :class:`StructureError`)."""
        if self.self_attn is None:
            raise StructureError(f"{type(self).__name__}: built with attend=False, it has no self-attention")
        return self.self_attn

    def attention_steps(self, name: str, s: Structure, memory: Structure | None) -> list[list[Step]]:
        """The attention blocks' steps, in order (self-attention; a decoder adds cross-attention)."""
        if self.self_attn is None:
            return []
        return [list(attention_steps(join(name, "self_attn"), self.self_attn, s, s))]

    def tube_steps(self, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
        """The tube diagram's steps: each attention block, then the feed-forward block, each a residual block."""
        s, d, hidden = need(sequence, self), self.model, self.linear1.out
        ff = [
            linear_step(join(name, "linear1"), self.linear1, (s,), "linear1"),
            Step(name, "fmap", ((s, hidden),), (s, hidden), label=getattr(self.activation, "__name__", "σ")),
            linear_step(join(name, "linear2"), self.linear2, (s,), "linear2"),
        ]
        first = 1 if self.self_attn is not None else 2  # the blocks keep their norms' numbers
        for i, body in enumerate([*self.attention_steps(name, s, memory), ff], first):
            ln = self.norm_module(i)
            norm = None if ln is None else norm_step(join(name, f"norm{i}"), ln, (s,))
            yield from residual_block(name, norm, self.norm_first, s, d, body)


class EncoderLayer(_Layer[D]):
    """``x ↦ block(MLP) . block(self-attention)``; ``torch.nn.TransformerEncoderLayer`` semantics.

    Args:
        model: the model structure ``D``; hidden: the MLP's hidden structure.
        heads: attention heads; key/value: per-head structures (default ``Vector(d // heads)``).
        normalise: attention normalisation (default scaled softmax; :class:`CausalSoftmax` for a decoder).
        norm_first: pre-norm (True) or post-norm (False, PyTorch's default).
        norms: the two layer norms; ``False`` builds none, each block then a plain residual ``x + f(x)`` (as an
            FNO's layers have no norm: a norm at each point fixes the scale of the features there, which a map
            whose output follows its input's amplitude must carry through the residual stream alone).
        attend: ``False`` builds the MLP block alone (no self-attention, no ``norm1``): ``x ↦ block(MLP)``, a layer
            that mixes no positions (:attr:`models.FuncformerConfig.attend_every`).
    """

    def __init__(
        self,
        model: D,
        hidden: Structure,
        heads: int = 1,
        *,
        key: Structure | None = None,
        value: Structure | None = None,
        normalise: Normalise | None = None,
        norm_first: bool = False,
        norms: bool = True,
        activation: Pointwise = torch.relu,
        eps: float = 1e-5,
        attend: bool = True,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(
            model,
            hidden,
            heads,
            2 if norms else 0,
            attend=attend,
            key=key,
            value=value,
            normalise=normalise,
            norm_first=norm_first,
            activation=activation,
            eps=eps,
            dtype=dtype,
            device=device,
        )

    def forward(self, x: Field[S, D], position: tuple[Tensor, Tensor] | None = None) -> Field[S, D]:
        """``position``: fixed features ``(p, r)`` whose product joins every head's scores
        (:meth:`~applicative.MultiHeadAttention.forward`), e.g. :func:`models.funcformer.gaussian_window`."""
        expect_field("EncoderLayer", x)
        attn = self.self_attn
        if attn is not None:
            x = self.block(1, x, lambda y: attn(y, position=position))
        return self.block(2, x, self.feed_forward)

    def __call__(self, x: Field[S, D], position: tuple[Tensor, Tensor] | None = None) -> Field[S, D]:
        return cast("Field[S, D]", super().__call__(x, position))


class DecoderLayer(_Layer[D]):
    """Causal self-attention, cross-attention to a memory, MLP; ``torch.nn.TransformerDecoderLayer`` semantics."""

    def __init__(
        self,
        model: D,
        hidden: Structure,
        heads: int = 1,
        *,
        key: Structure | None = None,
        value: Structure | None = None,
        normalise: Normalise | None = None,
        cross_normalise: Normalise | None = None,
        norm_first: bool = False,
        activation: Pointwise = torch.relu,
        eps: float = 1e-5,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        check_count("DecoderLayer", "heads", heads, 1)
        k = key if key is not None else head_structure(model, heads)
        super().__init__(
            model,
            hidden,
            heads,
            3,
            key=k,
            value=value,
            normalise=normalise or CausalSoftmax(k.size**-0.5),
            norm_first=norm_first,
            activation=activation,
            eps=eps,
            dtype=dtype,
            device=device,
        )
        kk, vv, _ = self._heads
        self.multihead_attn: MultiHeadAttention[D] = MultiHeadAttention(
            model, kk, vv, heads, cross_normalise, dtype=dtype, device=device
        )

    def attention_steps(self, name: str, s: Structure, memory: Structure | None) -> list[list[Step]]:
        if memory is None:
            raise StructureError(f"diagram: the decoder layer {name!r} needs the memory's structure; pass memory=")
        cross = attention_steps(join(name, "multihead_attn"), self.multihead_attn, s, memory)
        return [*super().attention_steps(name, s, memory), list(cross)]

    def forward(self, x: Field[S, D], memory: Field[T, D]) -> Field[S, D]:
        expect_field("DecoderLayer", x)
        expect_field("DecoderLayer", memory, "memory")
        x = self.block(1, x, self.attention())
        x = self.block(2, x, lambda y: self.multihead_attn(y, memory))
        return self.block(3, x, self.feed_forward)

    def __call__(self, x: Field[S, D], memory: Field[T, D]) -> Field[S, D]:
        return cast("Field[S, D]", super().__call__(x, memory))


class _Body(nn.Module, Generic[Fe, D]):
    """The embedding, layers and final norm shared by :class:`Transformer` and :class:`EncoderStack`."""

    def __init__(
        self,
        features: Fe,
        model: D,
        layers: Sequence[nn.Module],
        final_norm: bool = True,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.features, self.model = features, model
        self.embed: Linear[Fe, D] = Linear(features, model, bias=False, dtype=dtype, device=device)
        self.layers = nn.ModuleList(layers)
        self.norm: LayerNorm[D] | None = LayerNorm(model, dtype=dtype, device=device) if final_norm else None

    def encode(self, x: Field[S, Fe]) -> Field[S, D]:
        """Embed and run the layers: ``S x F -> S x D``.

        Values at ``x``'s padding are never read, nor do gradients flow through them (:func:`model_input`).

        Raises:
            StructureError: if a layer's self-attention is causal and ``x``'s sequence has no order
                (the sequence is known only now; :func:`decoder` checks one given as ``sequence=`` at build),
                or ``x`` holds a NaN or an infinity at a valid position.
        """
        expect_field(type(self).__name__, x)
        fix = "pass sequence= to decoder() to check it at build"
        require_order_at_forward(type(self).__name__, self.layers, x, fix)
        x = model_input(type(self).__name__, "x", x, self.embed.weight.dtype)
        h = mul_mmt(self.embed.weight_field, x)
        for layer in self.layers:
            h = layer(h)
        return h if self.norm is None else self.norm(h)

    def layer_steps(
        self, name: str, s: Structure, after: Callable[[int], Iterable[Step]] | None = None
    ) -> Iterator[Step]:
        """The tube diagram's steps of the layers and the final norm, on the sequence ``s``; ``after(i)``: steps a
        model adds after layer ``i`` (a Funcformer's convolution)."""
        for i, layer in enumerate(self.layers):
            yield from steps_of(layer, join(name, f"layers.{i}"), s, None)
            if after is not None:
                yield from after(i)
        if self.norm is not None:
            yield norm_step(join(name, "norm"), self.norm, (s,))


class EncoderStack(_Body[Fe, D]):
    """``norm . layers . mul_mmt embed``: ``S x F -> S x D``, a :class:`Transformer` without its unembedding.

    The encoder of an :class:`EncoderDecoder`, whose decoder reads the model
    features directly: every parameter here gets a gradient from the decoder's output.
    """

    @classmethod
    def of(cls, transformer: Transformer[Fe, D]) -> EncoderStack[Fe, D]:
        """The embedding, layers and norm of ``transformer`` (the same modules, shared), without its unembedding."""
        stack = cls.__new__(cls)
        nn.Module.__init__(stack)
        stack.features, stack.model = transformer.features, transformer.model
        stack.embed, stack.layers, stack.norm = transformer.embed, transformer.layers, transformer.norm
        return stack

    def forward(self, x: Field[S, Fe]) -> Field[S, D]:
        return self.encode(x)

    def __call__(self, x: Field[S, Fe]) -> Field[S, D]:
        return cast("Field[S, D]", super().__call__(x))


class Transformer(_Body[Fe, D]):
    """``mul_mmt unembed . layers . mul_mmt embed``: ``S x F -> S x F`` (encoder or causal decoder).

    Build with :func:`encoder` or :func:`decoder`, or pass layers directly.
    """

    def __init__(
        self,
        features: Fe,
        model: D,
        layers: Sequence[nn.Module],
        final_norm: bool = True,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(features, model, layers, final_norm, dtype=dtype, device=device)
        self.unembed: Linear[D, Fe] = Linear(model, features, bias=False, dtype=dtype, device=device)

    def forward(self, x: Field[S, Fe]) -> Field[S, Fe]:
        return mul_mmt(self.unembed.weight_field, self.encode(x))

    def tube_steps(self, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
        """The tube diagram's steps: the embedding, the layers, the final norm and the unembedding."""
        s = need(sequence, self)
        yield linear_step(join(name, "embed"), self.embed, (s,), "embed")
        yield from self.body_steps(name, s)

    def body_steps(
        self, name: str, s: Structure, after: Callable[[int], Iterable[Step]] | None = None
    ) -> Iterator[Step]:
        """The steps after the embedding (a Funcformer draws its own embedding and position; ``after`` as in
        ``layer_steps``)."""
        yield from self.layer_steps(name, s, after)
        yield linear_step(join(name, "unembed"), self.unembed, (s,), "unembed")

    def __call__(self, x: Field[S, Fe]) -> Field[S, Fe]:
        return cast("Field[S, Fe]", super().__call__(x))


class EncoderDecoder(nn.Module, Generic[Fe, D]):
    """Encoder--decoder Transformer: ``(source S x F, target T x F) -> T x F``."""

    def __init__(
        self,
        features: Fe,
        model: D,
        encoder_layers: Sequence[EncoderLayer[D]],
        decoder_layers: Sequence[DecoderLayer[D]],
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        # no unembedding: the decoder reads the encoder's model features (an unused map would get no gradient)
        self.encoder: EncoderStack[Fe, D] = EncoderStack(features, model, encoder_layers, dtype=dtype, device=device)
        self.decoder_embed: Linear[Fe, D] = Linear(features, model, bias=False, dtype=dtype, device=device)
        self.decoder_layers = nn.ModuleList(decoder_layers)
        self.decoder_norm: LayerNorm[D] = LayerNorm(model, dtype=dtype, device=device)
        self.unembed: Linear[D, Fe] = Linear(model, features, bias=False, dtype=dtype, device=device)

    def forward(self, source: Field[S, Fe], target: Field[T, Fe]) -> Field[T, Fe]:
        """``(source S x F, target T x F) -> T x F``; a causal decoder layer needs an ordered ``T`` (checked here)."""
        expect_field("EncoderDecoder", source, "source")
        expect_field("EncoderDecoder", target, "target")
        fix = "build the DecoderLayers with a non-causal normalise="
        require_order_at_forward("EncoderDecoder", self.decoder_layers, target, fix)
        memory = self.encoder.encode(source)
        target = model_input("EncoderDecoder", "target", target, self.decoder_embed.weight.dtype)
        h = mul_mmt(self.decoder_embed.weight_field, target)
        for layer in self.decoder_layers:
            h = layer(h, memory)
        return mul_mmt(self.unembed.weight_field, self.decoder_norm(h))

    def __call__(self, source: Field[S, Fe], target: Field[T, Fe]) -> Field[T, Fe]:
        return cast("Field[T, Fe]", super().__call__(source, target))


def encoder(
    features: Fe,
    model: D,
    hidden: Structure,
    heads: int,
    depth: int,
    *,
    norm_first: bool = True,
    normalise: Normalise | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Transformer[Fe, D]:
    """A ``depth``-layer encoder ``Field[S, F] -> Field[S, F]`` over any sequence structure ``S``.

    ``x ↦ unembed (norm (layers (embed x)))``: each layer is pre-norm (``norm_first``) multi-head attention over
    ``S`` and an MLP on ``model``, with residuals. ``S`` is whatever structure the input's outer axis has
    (a ``Vector``, ``Padded`` sequences, a Chebyshev series, a tree, ...), so one model runs on all of them;
    attention integrates over ``S`` with its measure.

    Args:
        features: ``F``, the structure of each position's input and output features.
        model: ``D``, the model structure (``Vector(64)``); it must split into ``heads``.
        hidden: the MLPs' hidden structure.
        heads: attention heads (each over ``model.split(heads)``).
        depth: layers (``0``: only the embedding, final norm and unembedding).
        norm_first: pre-norm (the default) or post-norm layers.
        normalise: the attention normalisation (default: the scaled softmax, ``1/√(size of a head)``).
        dtype, device: of the parameters.

    Returns:
        A :class:`Transformer`, an ``nn.Module`` mapping ``Field[S, F]`` (any leading batch axes) to
        ``Field[S, F]``.
    """
    check_count("encoder", "heads", heads, 1)
    check_count("encoder", "depth", depth, 0, "depth=0 gives only the embedding, final norm and unembedding")
    layers = [
        EncoderLayer(model, hidden, heads, normalise=normalise, norm_first=norm_first, dtype=dtype, device=device)
        for _ in range(depth)
    ]
    return Transformer(features, model, layers, dtype=dtype, device=device)


def decoder(
    features: Fe,
    model: D,
    hidden: Structure,
    heads: int,
    depth: int,
    *,
    norm_first: bool = True,
    sequence: Structure | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Transformer[Fe, D]:
    """A ``depth``-layer causal (decoder-only) Transformer: position ``i`` sees positions ``<= i``.

    Every capability is checked here, when the model is built: the counts, the split of ``model``
    into ``heads``, what the causal softmax needs of the ring, and -- if given -- that ``sequence``
    has the order a causal mask needs. The model is generic over its sequence structure, so
    without ``sequence=`` that one check waits for the input: each forward checks its sequence
    first, and raises a one-line :class:`StructureError` naming the structure and the fix.
    """
    if sequence is not None:
        require_order(sequence, "decoder")
    check_count("decoder", "heads", heads, 1)
    check_count("decoder", "depth", depth, 0, "depth=0 gives only the embedding, final norm and unembedding")
    k = head_structure(model, heads)
    return encoder(
        features,
        model,
        hidden,
        heads,
        depth,
        norm_first=norm_first,
        normalise=CausalSoftmax(k.size**-0.5),
        dtype=dtype,
        device=device,
    )
