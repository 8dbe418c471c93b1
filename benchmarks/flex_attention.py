"""Causal attention over padded sequences: the FlexAttention lowering vs dense SDPA with the mask as a bias.

Unit timed: the attention call alone, inference (``torch.no_grad``: torch has no
``flex_attention`` backward on CPU), ``float32``, on per-head fields
``(batch, heads, n, head_dim)`` whose sequence structure is ``Padded(n, lengths)``
with lengths drawn in ``[n/4, n]`` (a ragged batch: most key blocks past a row's
length, and the upper triangle, are masked).

* ``flex``: ``attention(Causal(FlexSoftmax(c)), q, k, v)`` -- ``create_block_mask`` from
  the structure's measure and causality, then one compiled ``flex_attention`` call
  (compiled once in the warm-up, not timed);
* ``dense``: ``attention(Causal(ScaledSoftmax(c)), q, k, v)`` -- the default lowering,
  one ``scaled_dot_product_attention`` call with the additive ``(..., n, n)`` bias;
* peer: ``nnf.scaled_dot_product_attention`` on the same tensors with the boolean mask.

Rounds alternate the three in a rotating order; the reported ratio is the median
over rounds of ``flex / peer``. The target ``<= 1.0`` asks whether flex beats dense
SDPA here; where it does not (this CPU at these sizes), the default softmax keeps
dense SDPA and ``FlexSoftmax`` is opt-in -- the number is the evidence.

    python benchmarks/flex_attention.py            # batch 8, heads 4, n 1024, head dim 32
    python benchmarks/flex_attention.py --quick    # n 256, seconds after the compile
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as nnf

from applicative import Causal, Field, FlexSoftmax, ScaledSoftmax, Vector, attention
from instances import Padded
from training.cli import Parser, run_cli
from training.distributed import device_of


@dataclass(frozen=True)
class Config:
    batch: int = 8
    heads: int = 4
    n: int = 1024
    head_dim: int = 32
    rounds: int = 7
    inner: int = 3


QUICK = Config(batch=4, heads=2, n=256, head_dim=16, rounds=5, inner=3)


def _time(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def main() -> None:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes (seconds after the compile)")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    cfg = QUICK if args.quick else Config()
    dev = device_of(args.device)
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(cfg.n // 4, cfg.n + 1, (cfg.batch,), generator=g)
    s = Padded(cfg.n, lengths).to(dev).unsqueeze_batch(-1)
    shape = (cfg.batch, cfg.heads, cfg.n, cfg.head_dim)
    q, k, v = (torch.randn(shape, generator=g).to(dev) for _ in range(3))
    fq, fk, fv = (Field(t, (s, Vector(cfg.head_dim))) for t in (q, k, v))
    scale = cfg.head_dim**-0.5
    pos = torch.arange(cfg.n, device=dev)
    mask = (pos[None, :] <= pos[:, None]) & (pos < lengths.to(dev)[:, None, None, None])  # (b, 1, n, n)
    cases: dict[str, Callable[[], object]] = {
        "flex": lambda: attention(Causal(FlexSoftmax(scale)), fq, fk, fv),
        "dense": lambda: attention(Causal(ScaledSoftmax(scale)), fq, fk, fv),
        "peer": lambda: nnf.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale),
    }
    with torch.no_grad():
        flex, dense = cases["flex"]().tensor, cases["dense"]().tensor  # type: ignore[attr-defined]
        diff = float((flex - dense).abs().max())
        print(f"{cfg}\nflex vs dense SDPA max |difference| {diff:.2e} (compile done)")
        times: dict[str, list[float]] = {name: [] for name in cases}
        ratios: list[float] = []
        names = list(cases)
        for _ in range(cfg.rounds):
            names = names[1:] + names[:1]
            t = {name: _time(cases[name], cfg.inner) for name in names}
            for name in names:
                times[name].append(t[name])
            ratios.append(t["flex"] / t["peer"])
    for name in cases:
        print(f"{name:6s} median {1e3 * statistics.median(times[name]):9.3f} ms")
    print(f"dense / peer {statistics.median(d / p for d, p in zip(times['dense'], times['peer'], strict=True)):.2f}")
    print(f"result: flex_over_sdpa_time_ratio {statistics.median(ratios):.2f} (target <= 1.0)")


if __name__ == "__main__":
    sys.exit(run_cli("flex_attention", main))
