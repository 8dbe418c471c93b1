"""The character-level models: the generic parts with a causal normalisation, or a recurrence.

``logits = unembed . norm . layers . (embed(one_hot(tokens)) + position)`` on ``Vector(T) x Vector(vocab)``:
pre-norm :class:`models.EncoderLayer` blocks whose attention is ``Causal(ScaledSoftmax)`` (GPT),
``Causal(ReluAttention)`` or ``Causal(SoftplusAttention)`` -- no attention or MLP code here --, or
:class:`models.TriangularLayer` / :class:`models.IPALayer` blocks in their place. Learned positions;
the output head is untied from the embedding. The ``rnn`` kind is ``unembed . norm . scan cell`` with
the one-hot characters as the cell's input (its input map is the embedding).

Kinds whose natural sizes give another parameter count (IPA: ``P_row`` full maps per row operation;
the RNN: one square recurrent map) get the width (state size) whose count is nearest the GPT's
(:func:`matched_size`), so that every kind has the GPT's parameters within a few percent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as nnf
from torch import Tensor, nn

from applicative import (
    Causal,
    Field,
    LayerNorm,
    Linear,
    Normalise,
    ReluAttention,
    ScaledSoftmax,
    SoftplusAttention,
    Vector,
    add,
    mul_mmt,
)
from models import EncoderLayer, IPALayer, RNNCell, Transformer, TriangularLayer, scan
from training import InputError, inputs, registry
from training.budget import layer_activations

from .config import Config, ModelKind

CHECKPOINT = "checkpoint.pt"
#: the most characters a vocabulary may hold (a script's, not the whole of Unicode: each is a row of two matrices)
MAX_VOCAB = 2**16
#: the most characters one call of :meth:`CharLM.sample` draws (each is one call of the model)
MAX_SAMPLE = 100_000
#: the temperatures :meth:`CharLM.sample` takes: near zero the divided logits overflow, and at 1e-4 a logit gap of
#: 1e-2 already weighs e^-100 (the argmax); at 1e4 the law is uniform to within 1e-3 for logit gaps below 10
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-4, 1e4


def normalisation(kind: ModelKind, key_size: int) -> Normalise:
    """The causal attention normalisation of each model kind, scaled by ``1/sqrt(key size)``."""
    if kind not in ("gpt", "relu", "softplus"):
        raise ValueError(f"the {kind} model mixes time without attention: it has no normalisation")
    scale = key_size**-0.5
    inner: Normalise = (
        ScaledSoftmax(scale) if kind == "gpt" else ReluAttention(scale) if kind == "relu" else SoftplusAttention(scale)
    )
    return Causal(inner)


def parameters_of(config: Config, vocab: int, size: int | None = None) -> int:
    """The parameter count of the ``config.model`` kind at width (state size) ``size``, built on the meta device."""
    with torch.device("meta"):
        return sum(p.numel() for p in CharLM(config, "x" * vocab, size).parameters())


def matched_size(config: Config, vocab: int) -> int:
    """The width (``ipa``) or state size (``rnn``) whose parameter count is nearest the GPT's: ``config.width`` else."""
    if config.model not in ("ipa", "rnn"):
        return config.width
    target = parameters_of(config.replace(model="gpt"), vocab)
    lo, hi = 1, 16 * config.width  # the count grows with the size: bisect for the first size reaching the target
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if parameters_of(config, vocab, mid) < target else (lo, mid)
    return min((lo - 1, lo), key=lambda n: abs(parameters_of(config, vocab, n) - target) if n >= 1 else target)


class CharLM(nn.Module):
    """Next-character logits ``(batch, T, vocab)`` for token ids ``(batch, T)``, ``T <= context``.

    ``size`` overrides the width (``ipa``) or the state size (``rnn``); by default it is :func:`matched_size`.
    """

    def __init__(self, config: Config, vocab: str, size: int | None = None) -> None:
        super().__init__()
        self.config, self.vocab = config, vocab
        self.size = size if size is not None else matched_size(config, len(vocab))
        v, d = Vector(len(vocab)), Vector(self.size)
        if config.model == "rnn":
            self.cell: RNNCell[Vector, Vector] = RNNCell(v, d)
            self.norm: LayerNorm[Vector] = LayerNorm(d)
            self.unembed: Linear[Vector, Vector] = Linear(d, v, bias=False)
            return
        layers: list[nn.Module]
        if config.model == "triangular":
            layers = [
                TriangularLayer(d, Vector(config.hidden), config.context, config.heads) for _ in range(config.depth)
            ]
        elif config.model == "ipa":
            rank, row_centres = Vector(config.width // config.heads), max(1, config.hidden // config.width)
            layers = [IPALayer(d, rank, config.heads, row_centres) for _ in range(config.depth)]
        else:
            normalise = normalisation(config.model, d.split(config.heads).size)
            layers = [
                EncoderLayer(d, Vector(config.hidden), config.heads, normalise=normalise, norm_first=True)
                for _ in range(config.depth)
            ]
        self.body: Transformer[Vector, Vector] = Transformer(v, d, layers)
        self.position = nn.Parameter(torch.randn(config.context, self.size).mul_(0.02))

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits ``(batch, T, vocab)`` for ids ``(batch, T)`` (or ``(T,)``), ``1 <= T <= context``.

        Raises:
            InputError: ``tokens`` not integer ids of the vocabulary, empty, or longer than the context.
        """
        inputs.ids("CharLM", "tokens", tokens, "(batch, T)", (1, 2), len(self.vocab))
        tokens = tokens.long()  # any integer dtype (int8 .. uint64): the ids, in the one dtype one_hot takes
        t = tokens.shape[-1]
        if t > self.config.context:
            raise InputError(
                f"CharLM: tokens holds {t} positions, past the context of {self.config.context}; pass the last "
                f"{self.config.context}"
            )
        v, seq = Vector(len(self.vocab)), Vector(t)
        dtype = next(self.parameters()).dtype
        x = Field(nnf.one_hot(tokens, len(self.vocab)).to(dtype), (seq, v))
        if self.config.model == "rnn":
            return mul_mmt(self.unembed.weight_field, self.norm(scan(self.cell, x))).tensor
        d = self.body.model
        h = add(mul_mmt(self.body.embed.weight_field, x), Field(self.position[:t].expand(*tokens.shape, -1), (seq, d)))
        for layer in self.body.layers:
            h = layer(h)
        assert self.body.norm is not None
        return mul_mmt(self.body.unembed.weight_field, self.body.norm(h)).tensor

    @torch.no_grad()
    def sample(self, prompt: Tensor, length: int, temperature: float, generator: torch.Generator) -> Tensor:
        """``prompt`` ``(T0,)`` ids continued by ``length`` sampled characters (the last ``context`` seen).

        ``temperature`` divides the logits (small: the likeliest character; ``1``: the model's own law), and lies
        in ``MIN_TEMPERATURE..MAX_TEMPERATURE``; ``length`` is at most ``MAX_SAMPLE`` (continue from the result's
        end for more).

        Raises:
            InputError: a prompt that is not ``T0 >= 1`` ids of the vocabulary, a ``length`` outside
                ``0..MAX_SAMPLE``, a temperature outside its range, or no ``torch.Generator``.
        """
        inputs.ids("CharLM.sample", "prompt", prompt, "(T0,)", 1, len(self.vocab))
        inputs.count("CharLM.sample", "length", length, 0)
        if length > MAX_SAMPLE:
            raise InputError(
                f"CharLM.sample: length must be at most {MAX_SAMPLE} characters (one model call each), got {length}; "
                "sample in pieces, each continuing the last one's end"
            )
        inputs.within(
            "CharLM.sample",
            "temperature",
            temperature,
            MIN_TEMPERATURE,
            MAX_TEMPERATURE,
            " (it divides the logits: below, they overflow; for the likeliest character take the argmax)",
        )
        if not isinstance(generator, torch.Generator):
            raise InputError(f"CharLM.sample: generator must be a torch.Generator, got {type(generator).__name__}")
        ids = prompt.long()  # the dtype sampled ids are appended in (never written in place)
        for _ in range(length):
            logits = self(ids[-self.config.context :].unsqueeze(0))[0, -1] / temperature
            nxt = torch.multinomial(torch.softmax(logits.double(), -1).cpu(), 1, generator=generator)
            ids = torch.cat([ids, nxt.to(ids.device)])
        return ids


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> CharLM:
    """The trained model of a run directory (``python -m examples.lm --out run_dir``), in eval mode."""
    model = registry.load(run_dir, device, task=SPEC.name)
    assert isinstance(model, CharLM)
    return model


def _vocab(state: Mapping[str, Any]) -> str:
    """The vocabulary a checkpoint's task state records (a non-empty str of distinct characters)."""
    vocab = state.get("vocab")
    if isinstance(vocab, str) and len(vocab) > MAX_VOCAB:  # before the set of its characters is formed
        raise ValueError(f"its vocabulary holds {len(vocab):,} characters, past the {MAX_VOCAB:,} a model here reads")
    if not isinstance(vocab, str) or not vocab or len(set(vocab)) != len(vocab):
        raise ValueError(f"its vocabulary is {vocab!r:.40}, expected a non-empty str of distinct characters")
    return vocab


def _build(blob: dict[str, Any]) -> CharLM:
    return CharLM(Config(**blob["config"]), _vocab(blob["task"]))


def activations(fields: Mapping[str, Any], state: Mapping[str, Any]) -> int:
    """Values one training sequence keeps for the backward pass (an estimate): the layers over its ``context``
    positions, and the logits over the vocabulary (the checkpoint's task state)."""
    c = Config(**fields)
    t = c.context
    return c.depth * layer_activations(1, t, c.width, c.hidden, c.heads) + 2 * t * len(_vocab(state))


#: the character-level language models as :func:`training.load` knows them
SPEC = registry.TaskSpec(
    "lm",
    2,  # 2: the warm-up counted in steps is the config field warmup_steps
    CharLM,
    _build,
    "examples.lm",
    "a language model",
    config=lambda fields: Config(**fields),
    activations=activations,
)
