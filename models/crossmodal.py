r"""Cross-modal models: a learned field on one structure attends to tokens on another.

The design source's general attention takes queries of one structure and keys and values of
another; this model is that attention with the Transformer's usual blocks around it::

    memory = norm . encoder layers . embed          tokens : M x F  ->  M x D
    h      = decoder layers (q, memory)             q      : Q x D  (learned, shared by the batch)
    out    = unembed h                                              ->  Q x O

* ``M`` is any sequence structure -- a :class:`~instances.Padded` set of scattered samples, a
  :class:`~instances.Vector` of image rows -- and ``F`` the features of one token;
* ``Q`` is the output's structure, e.g. a Chebyshev series: the query
  :math:`q(t, d) = \sum_k q_{kd} T_k(t)` is a learned function of ``t``, attention runs at each of
  ``Q``'s positions (its Chebyshev points) against ``M``'s measure (padding weighs zero) and the
  result is interpolated back, so the output is a function of ``t`` (the Perceiver IO decoder,
  Jaegle et al. 2021, with a continuum of queries);
* each decoder layer is :class:`~models.DecoderLayer` with a non-causal self-attention over ``Q``
  (the Funcformer's continuous softmax when ``Q`` is Chebyshev), cross-attention to the memory,
  and an MLP.

No attention code here: only :class:`~models.EncoderLayer`, :class:`~models.DecoderLayer` and
:class:`~applicative.Linear` over the chosen structures.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

import torch
from torch import nn

from applicative import Field, LayerNorm, Linear, Structure, StructureError, expect_field, scaled_softmax

from ._drawing import Parameter, Step, join, linear_step, need, norm_step, steps_of
from ._inputs import model_input
from .transformer import DecoderLayer, EncoderLayer, check_count, head_structure

M = TypeVar("M", bound=Structure)
Q = TypeVar("Q", bound=Structure)
O = TypeVar("O", bound=Structure)
D = TypeVar("D", bound=Structure)


@dataclass(frozen=True)
class CrossModalConfig:
    """Hyper-parameters of a :class:`CrossModal` model (the structures are passed separately).

    Attributes:
        heads: attention heads (the model structure must split into them).
        memory_depth: encoder layers over the tokens' structure ``M``.
        query_depth: decoder layers over the query structure ``Q`` (at least one: it holds the
            cross-attention).
        final_norm: layer norm before the unembedding (off: a regression output keeps its scale).
    """

    heads: int = 4
    memory_depth: int = 1
    query_depth: int = 2
    final_norm: bool = False


class CrossModal(nn.Module, Generic[Q, O, D]):
    """``Field[M, F] -> Field[Q, O]``: tokens on any structure ``M`` read out as a field on ``Q``.

    Args:
        features: ``F``, the structure of one token's features.
        query: ``Q``, the output's outer structure (a Chebyshev series for a function).
        out: ``O``, the output's features (``Vector(1)`` for a scalar function, or a second
            Chebyshev axis for a function of two variables).
        model: ``D``, the model structure; hidden: the MLPs' hidden structure.
        config: heads and depths.
    """

    def __init__(
        self,
        features: Structure,
        query: Q,
        out: O,
        model: D,
        hidden: Structure,
        config: CrossModalConfig = CrossModalConfig(),
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        check_count("CrossModal", "memory_depth", config.memory_depth, 0)
        check_count("CrossModal", "query_depth", config.query_depth, 1, "the decoder layers hold the cross-attention")
        self.features, self.query, self.out, self.model, self.config = features, query, out, model, config
        kw = {"dtype": dtype, "device": device}
        k = head_structure(model, config.heads)
        self.embed: Linear[Structure, D] = Linear(features, model, **kw)  # type: ignore[arg-type]
        self.encoder = nn.ModuleList(
            EncoderLayer(model, hidden, config.heads, norm_first=True, **kw)  # type: ignore[arg-type]
            for _ in range(config.memory_depth)
        )
        self.memory_norm: LayerNorm[D] = LayerNorm(model, **kw)  # type: ignore[arg-type]
        self.queries = nn.Parameter(torch.randn(query.size, model.size, dtype=dtype, device=device))
        self.decoder = nn.ModuleList(
            DecoderLayer(model, hidden, config.heads, normalise=scaled_softmax(k.size), norm_first=True, **kw)  # type: ignore[arg-type]
            for _ in range(config.query_depth)
        )
        self.norm: LayerNorm[D] | None = LayerNorm(model, **kw) if config.final_norm else None  # type: ignore[arg-type]
        self.unembed: Linear[D, O] = Linear(model, out, **kw)  # type: ignore[arg-type]

    @property
    def query_field(self) -> Field[Q, D]:
        """The learned query ``q`` on ``Q x D``."""
        return Field(self.queries, (self.query, self.model))

    def encode(self, tokens: Field[M, Structure]) -> Field[M, D]:
        """The memory: ``norm . encoder layers . embed``, ``M x F -> M x D``.

        Values at the tokens' padding are never read, nor do gradients flow through them.

        Raises:
            StructureError: tokens on other structures, or a NaN or an infinity at a valid position.
        """
        expect_field("CrossModal", tokens, "tokens")
        if len(tokens.axes) != 2 or tokens.structures[-1] != self.features:
            raise StructureError(
                f"CrossModal: expected tokens on (sequence, {self.features!r}), got axes {tokens.structures}; "
                "put one token per position of the sequence axis and its features on the last"
            )
        tokens = model_input("CrossModal", "tokens", tokens, self.queries.dtype)
        h: Field[M, D] = self.embed(tokens)
        for layer in self.encoder:
            h = layer(h)
        return self.memory_norm(h)

    def forward(self, tokens: Field[M, Structure]) -> Field[Q, O]:
        """``tokens`` ``(*batch, |M|, |F|)`` -> ``(*batch, |Q|, |O|)`` on ``Q x O``."""
        memory = self.encode(tokens)
        q = self.query_field
        h: Field[Q, D] = Field(q.tensor.expand(*tokens.batch_shape, *q.tensor.shape), q.axes)
        for layer in self.decoder:
            h = layer(h, memory)
        if self.norm is not None:
            h = self.norm(h)
        return self.unembed(h)

    def __call__(self, tokens: Field[M, Structure]) -> Field[Q, O]:
        return cast("Field[Q, O]", super().__call__(tokens))

    def tube_steps(self, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
        """The tube diagram's steps: the tokens' encoder on ``sequence``, then the learned queries' decoder."""
        m, q = need(sequence, self), self.query
        yield linear_step(join(name, "embed"), self.embed, (m,), "embed")
        for i, layer in enumerate(self.encoder):
            yield from steps_of(layer, join(name, f"encoder.{i}"), m, None)
        yield norm_step(join(name, "memory_norm"), self.memory_norm, (m,))
        yield Step(name, "queries", (), (q, self.model), (Parameter(join(name, "queries"), (q, self.model)),),
                   label="queries")  # fmt: skip
        for i, layer in enumerate(self.decoder):
            yield from steps_of(layer, join(name, f"decoder.{i}"), q, m)
        if self.norm is not None:
            yield norm_step(join(name, "norm"), self.norm, (q,))
        yield linear_step(join(name, "unembed"), self.unembed, (q,), "unembed")
