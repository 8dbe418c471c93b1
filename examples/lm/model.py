"""The character-level decoder: the generic Transformer parts with a causal normalisation.

``logits = unembed . norm . layers . (embed(one_hot(tokens)) + position)`` on ``Vector(T) x Vector(vocab)``:
pre-norm :class:`models.EncoderLayer` blocks whose attention is ``Causal(ScaledSoftmax)`` (GPT),
``Causal(ReluAttention)`` or ``Causal(SoftplusAttention)`` -- no attention or MLP code here. Learned
positions; the output head is untied from the embedding.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as nnf
from torch import Tensor, nn

from applicative import Causal, Field, Normalise, ReluAttention, ScaledSoftmax, SoftplusAttention, Vector, add, mul_mmt
from examples.training import CheckpointError, load_checkpoint
from models import EncoderLayer, Transformer, TriangularLayer

from .config import Config, ModelKind

CHECKPOINT = "checkpoint.pt"


def normalisation(kind: ModelKind, key_size: int) -> Normalise:
    """The causal attention normalisation of each model kind, scaled by ``1/sqrt(key size)``."""
    if kind == "triangular":
        raise ValueError("the triangular model mixes time without attention: it has no normalisation")
    scale = key_size**-0.5
    inner: Normalise = (
        ScaledSoftmax(scale) if kind == "gpt" else ReluAttention(scale) if kind == "relu" else SoftplusAttention(scale)
    )
    return Causal(inner)


class CharLM(nn.Module):
    """Next-character logits ``(batch, T, vocab)`` for token ids ``(batch, T)``, ``T <= context``."""

    def __init__(self, config: Config, vocab: str) -> None:
        super().__init__()
        self.config, self.vocab = config, vocab
        v, d = Vector(len(vocab)), Vector(config.width)
        layers: list[nn.Module]
        if config.model == "triangular":
            layers = [
                TriangularLayer(d, Vector(config.hidden), config.context, config.heads) for _ in range(config.depth)
            ]
        else:
            normalise = normalisation(config.model, d.split(config.heads).size)
            layers = [
                EncoderLayer(d, Vector(config.hidden), config.heads, normalise=normalise, norm_first=True)
                for _ in range(config.depth)
            ]
        self.body: Transformer[Vector, Vector] = Transformer(v, d, layers)
        self.position = nn.Parameter(0.02 * torch.randn(config.context, config.width))

    def forward(self, tokens: Tensor) -> Tensor:
        t = tokens.shape[-1]
        if t > self.config.context:
            raise ValueError(f"CharLM: {t} tokens exceed the context of {self.config.context}")
        v, d, seq = self.body.features, self.body.model, Vector(t)
        x = Field(nnf.one_hot(tokens, len(self.vocab)).to(self.position.dtype), (seq, v))
        h = add(mul_mmt(self.body.embed.weight_field, x), Field(self.position[:t].expand(*tokens.shape, -1), (seq, d)))
        for layer in self.body.layers:
            h = layer(h)
        assert self.body.norm is not None
        return mul_mmt(self.body.unembed.weight_field, self.body.norm(h)).tensor

    @torch.no_grad()
    def sample(self, prompt: Tensor, length: int, temperature: float, generator: torch.Generator) -> Tensor:
        """``prompt`` ``(T0,)`` ids continued by ``length`` sampled characters (the last ``context`` seen)."""
        ids = prompt.clone()
        for _ in range(length):
            logits = self(ids[-self.config.context :].unsqueeze(0))[0, -1] / temperature
            nxt = torch.multinomial(torch.softmax(logits.double(), -1).cpu(), 1, generator=generator)
            ids = torch.cat([ids, nxt.to(ids.device)])
        return ids


def load(run_dir: str | Path, device: torch.device | str = "cpu") -> CharLM:
    """The trained model of a run directory (``python -m examples.lm --out run_dir``), in eval mode."""
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        raise CheckpointError(f"{path}: no checkpoint there; train with python -m examples.lm --out {run_dir}")
    blob = load_checkpoint(path, required=("config", "task"))
    try:
        model = CharLM(Config(**blob["config"]), blob["task"]["vocab"])
        model.load_state_dict(blob["task"]["model"])
    except (TypeError, KeyError, RuntimeError) as e:
        raise CheckpointError(f"{path}: not a checkpoint of this language model ({str(e).splitlines()[0]})") from None
    return model.to(device).eval()
