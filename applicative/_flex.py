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
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import Tensor


@functools.cache
def _compiled() -> Callable[..., Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


# Block masks already built (``create_block_mask`` costs hundreds of milliseconds on CPU), least recently
# used last out. Why the cache cannot change a result: a block mask is a pure function of its mask_mod's
# *values* on the (batch, n_q, n_k) grid and of the device, and the key holds all of that -- the kind
# (causal or not), the sizes, the device, and the visible key positions themselves (their bytes, not the
# tensor's identity), which are all mask_mod reads. A hit returns a mask equal to the one that would be
# built; the score_mod (the finite weights) is never cached.
_BLOCK_MASKS: OrderedDict[Hashable, Any] = OrderedDict()
_BLOCK_MASKS_KEPT = 32


def _block_mask(mask_mod: Callable[..., Tensor], sizes: tuple[Any, ...], seen: Tensor | None) -> Any:
    """``create_block_mask(mask_mod, ...)`` for ``sizes = (causal, batch, n_q, n_k, device)``, cached.

    ``seen``: the tensor ``mask_mod`` reads (the visible keys), or ``None`` when it reads only indices.
    """
    from torch.nn.attention.flex_attention import create_block_mask

    _, batch, n_q, n_k, device = sizes
    if torch.compiler.is_compiling():  # traced: no host reads of the key
        return create_block_mask(mask_mod, batch, None, n_q, n_k, device=device)
    key = (*sizes, None if seen is None else (tuple(seen.shape), seen.cpu().numpy().tobytes()))
    if key in _BLOCK_MASKS:
        _BLOCK_MASKS.move_to_end(key)
        return _BLOCK_MASKS[key]
    block = create_block_mask(mask_mod, batch, None, n_q, n_k, device=device)
    _BLOCK_MASKS[key] = block
    if len(_BLOCK_MASKS) > _BLOCK_MASKS_KEPT:
        _BLOCK_MASKS.popitem(last=False)
    return block


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
    from torch.nn.attention.flex_attention import flex_attention

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

    block = None
    if mask_mod is not None:
        seen = None if log_w is None else valid  # what the mask reads besides the sizes
        block = _block_mask(mask_mod, (causal, batch, n_q, n_k, q.device), seen)
    if compiled:
        out: Tensor = _compiled()(qb, kb, vb, score_mod=score_mod, block_mask=block, scale=scale)
    else:
        with warnings.catch_warnings():  # the eager reference is asked for on purpose (tests, the law checker)
            warnings.filterwarnings("ignore", message=".*flex_attention.*without torch.compile", category=UserWarning)
            out = flex_attention(qb, kb, vb, score_mod=score_mod, block_mask=block, scale=scale)
    return out.reshape(*lead, n_q, v.shape[-1])
