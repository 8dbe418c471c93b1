"""The corpus: the English documentation in the standard library's ``pydoc_data.topics``, no download.

The topics are joined in sorted key order; the text's SHA-256 and the Python version go into every
report (the text differs between Python versions). Split 90/10 by position. Characters are the
vocabulary (sorted). The unigram baseline is the validation cross-entropy, in bits per character, of
the training text's character frequencies (add-one smoothed).
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Corpus:
    """Encoded text split 90/10, its vocabulary and provenance."""

    train: Tensor  # (n_train,) int64 character ids
    valid: Tensor
    vocab: str
    sha256: str
    python: str

    def decode(self, ids: Tensor | list[int]) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def unigram_bits(self) -> float:
        """Validation bits per character of the (add-one smoothed) training character frequencies."""
        counts = torch.bincount(self.train, minlength=len(self.vocab)).double() + 1.0
        logp = (counts / counts.sum()).log2()
        return float(-logp[self.valid].mean())


def text() -> str:
    """The documentation topics, joined in sorted key order."""
    from pydoc_data.topics import topics

    return "\n".join(topics[k] for k in sorted(topics))


def corpus(limit: int | None = None) -> Corpus:
    """The corpus (its first ``limit`` characters, for tests), encoded and split 90/10 by position."""
    full = text()
    t = full if limit is None else full[:limit]
    vocab = "".join(sorted(set(t)))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in t], dtype=torch.int64)
    cut = math.floor(0.9 * len(ids))
    version = ".".join(map(str, sys.version_info[:3]))
    return Corpus(ids[:cut], ids[cut:], vocab, hashlib.sha256(full.encode()).hexdigest(), version)


def windows(ids: Tensor, starts: Tensor, context: int) -> tuple[Tensor, Tensor]:
    """Inputs ``(batch, context)`` and next-character targets at the given start positions."""
    offsets = starts.unsqueeze(-1) + torch.arange(context + 1)
    chunk = ids[offsets]
    return chunk[:, :-1], chunk[:, 1:]
