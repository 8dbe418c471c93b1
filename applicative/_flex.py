"""FlexAttention: softmax attention under a structured mask as one ``flex_attention`` call.

Dense SDPA takes the keys' measure as an additive bias ``(…, L, S)`` and computes
every score, masked or not. ``torch.nn.attention.flex_attention`` takes the mask
as a *block mask* and skips the blocks it hides: causal attention over padded
sequences, trees (padding of ragged leaves), block-diagonal batches. Here the
mask and the bias come from the structure's contract alone: a key position is
visible where ``log w > -inf`` (and, causal, not after the query), and the
finite ``log w`` is added to the score (``score_mod``).

On CUDA ``flex_attention`` compiles to a fused kernel; on CPU it needs
``torch.compile`` as well (seconds per new shape), and at the sizes measured in
``benchmarks/flex_attention.py`` dense SDPA is faster there -- so the default
softmax lowers to SDPA and :class:`~applicative.FlexSoftmax` asks for this route.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


@functools.cache
def _compiled() -> Callable[..., Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def flex_provides(q: Tensor, k: Tensor, v: Tensor, compiled: bool) -> bool:
    """Whether torch provides ``flex_attention`` here: on CPU, neither ``float64`` (compiled) nor a backward."""
    if q.device.type != "cpu":
        return True
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    return not grad and (not compiled or q.dtype in (torch.float32, torch.float16, torch.bfloat16))


def flex_softmax_attention(
    q: Tensor, k: Tensor, v: Tensor, log_w: Tensor | None, *, causal: bool, scale: float, compiled: bool = True
) -> Tensor:
    """``softmax(scale q kᵀ + log w) v`` with ``-inf`` key weights (and the future, ``causal``) as a block mask.

    Args:
        q: ``(..., L, E)``; k: ``(..., S, E)``; v: ``(..., S, G)``, one leading shape.
        log_w: the keys' log measure, broadcasting to ``(..., S)``; ``None`` for the counting measure.
        causal: hide key ``j`` from query ``i < j``.
        scale: multiplies ``q kᵀ``.
        compiled: run ``flex_attention`` under ``torch.compile`` (needed for speed, and for
            gradients); ``False`` runs its eager reference (tests).

    Returns:
        ``(..., L, G)``.
    """
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    lead, n_q, n_k = q.shape[:-2], q.shape[-2], k.shape[-2]
    qb, kb, vb = (t.reshape(-1, 1, *t.shape[-2:]) for t in (q, k, v))  # (B, 1, n, e): one head per row
    batch = qb.shape[0]
    score_mod: Any = None
    mask_mod: Any = None
    if log_w is not None:
        bias = log_w.to(q.dtype).expand(*lead, n_k).reshape(batch, n_k)
        valid = torch.isfinite(bias)
        finite = torch.where(valid, bias, 0)
        if bool(finite.any()):  # a weighted measure, not only a mask

            def score_mod(score: Tensor, b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
                return score + finite[b, j]

        def mask_mod(b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
            return valid[b, j] & (j <= i) if causal else valid[b, j]

    elif causal:

        def mask_mod(b: Tensor, h: Tensor, i: Tensor, j: Tensor) -> Tensor:
            return j <= i

    block = None if mask_mod is None else create_block_mask(mask_mod, batch, None, n_q, n_k, device=q.device)
    if compiled:
        out: Tensor = _compiled()(qb, kb, vb, score_mod=score_mod, block_mask=block, scale=scale)
    else:
        with warnings.catch_warnings():  # the eager reference is asked for on purpose (tests, the law checker)
            warnings.filterwarnings("ignore", message=".*flex_attention.*without torch.compile", category=UserWarning)
            out = flex_attention(qb, kb, vb, score_mod=score_mod, block_mask=block, scale=scale)
    return out.reshape(*lead, n_q, v.shape[-1])
