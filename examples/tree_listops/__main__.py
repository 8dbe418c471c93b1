"""``python -m examples.tree_listops``: Treeformer vs Vector Transformer on ListOps, equal parameter count.

Both models are the same generic encoder (:func:`models.treeformer` is
:func:`models.encoder`) with the same sizes, read out at the first position
(the root operator in both views) by a linear classifier over the 10 digits.
They differ only in the sequence structure and in what the position features
say -- both have ``len(VOCAB) + levels`` input features, so parameter counts
are identical:

* Treeformer: a field ``Tree x F``; leaves are the expression's tokens without
  brackets; features = one-hot token + the leaf's root-to-leaf path
  (:meth:`instances.Tree.address`); attention against the tree's measure
  (``--algebra mean``: leaf weight ``2^-depth``; ``sum``: every leaf 1), with
  padding masked.
* Vector Transformer: a field ``Vector(L) x F`` over the flat tokens with
  brackets (``[MAX 2 9 ]``); features = one-hot token + sinusoidal position;
  padding tokens are ordinary tokens (a plain Transformer, as in Long Range Arena).

Examples::

    python -m examples.tree_listops            # tree-mean, tree-sum, vector: ~3-4 min each on a shared CPU core
    python -m examples.tree_listops --steps 50 --train 2000 --test 500   # a smoke run
    python -m examples.tree_listops --device cuda --steps 6000            # longer, on a GPU
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn

from applicative import Field
from instances import NodeAlgebra, Vector
from models import Readout, tree_features, treeformer

from .data import VOCAB, Expr, Split, flat_batch, generate, tree_batch

Inputs = Callable[[list[Expr]], Field[Vector, Vector]]


@dataclass(frozen=True)
class Config:
    steps: int = 600
    batch: int = 64
    lr: float = 1e-3
    width: int = 64
    hidden: int = 128
    heads: int = 4
    depth: int = 3
    levels: int = 16
    train: int = 20000
    test: int = 2000
    seed: int = 0


def sinusoid(length: int, dims: int) -> Tensor:
    """``(length, dims)`` sinusoidal position features (Vaswani et al.)."""
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(-1)
    freq = torch.exp(-math.log(1000.0) * torch.arange(0, dims, 2, dtype=torch.float32) / dims)
    out = torch.zeros(length, dims)
    out[:, 0::2], out[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return out


def tree_inputs(algebra: NodeAlgebra, levels: int, device: torch.device) -> Inputs:
    def f(exprs: list[Expr]) -> Field[Vector, Vector]:
        tree, tokens = tree_batch(exprs, algebra, device)
        return tree_features(tree, tokens, len(VOCAB), levels)  # type: ignore[return-value]

    return f


def flat_inputs(levels: int, device: torch.device) -> Inputs:
    def f(exprs: list[Expr]) -> Field[Vector, Vector]:
        tokens = flat_batch(exprs).to(device)
        onehot = nn.functional.one_hot(tokens, len(VOCAB)).to(torch.float32)
        pos = sinusoid(tokens.shape[1], levels).to(device).expand(tokens.shape[0], -1, -1)
        return Field(torch.cat([onehot, pos], -1), (Vector(tokens.shape[1]), Vector(len(VOCAB) + levels)))

    return f


def build(cfg: Config, device: torch.device) -> Readout[Vector, Vector]:
    torch.manual_seed(cfg.seed)
    body = treeformer(
        Vector(len(VOCAB) + cfg.levels), Vector(cfg.width), Vector(cfg.hidden), cfg.heads, cfg.depth, device=device
    )
    return Readout(body, classes=10)


def accuracy(model: Readout[Vector, Vector], inputs: Inputs, split: Split, batch: int = 500) -> float:
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(split), batch):
            logits = model(inputs(split.exprs[i : i + batch])).tensor
            right += int((logits.argmax(-1).cpu() == split.labels[i : i + batch]).sum())
    model.train()
    return right / len(split)


def fit(cfg: Config, inputs: Inputs, train: Split, test: Split, device: torch.device) -> dict[str, float]:
    """Train one model with AdamW (warmup, cosine decay); return its accuracies and cost."""
    model = build(cfg, device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    warm = max(1, cfg.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps))
    )
    g = torch.Generator().manual_seed(cfg.seed)
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        idx = torch.randint(len(train), (cfg.batch,), generator=g).tolist()
        logits = model(inputs([train.exprs[i] for i in idx])).tensor
        loss = nn.functional.cross_entropy(logits, train.labels[idx].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    seconds = time.perf_counter() - t0
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(seconds, 1),
        "train_accuracy": accuracy(model, inputs, Split(train.exprs[:2000], train.labels[:2000])),
        "test_accuracy": accuracy(model, inputs, test),
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(prog="python -m examples.tree_listops", description=__doc__.split("\n")[0])
    for name, default in asdict(Config()).items():
        p.add_argument(f"--{name}", type=type(default), default=default)
    p.add_argument("--models", default="tree-mean,tree-sum,vector", help="comma-separated: tree-mean, tree-sum, vector")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    cfg = Config(**{k: getattr(a, k) for k in asdict(Config())})
    train, test = generate(cfg.train, cfg.seed), generate(cfg.test, cfg.seed + 1)
    majority = float(torch.bincount(test.labels, minlength=10).max()) / len(test)
    print(f"ListOps: {len(train)} train / {len(test)} test; majority-class test accuracy {majority:.3f}")
    makers: dict[str, Inputs] = {
        "tree-mean": tree_inputs(NodeAlgebra.MEAN, cfg.levels, device),
        "tree-sum": tree_inputs(NodeAlgebra.SUM, cfg.levels, device),
        "vector": flat_inputs(cfg.levels, device),
    }
    results = {}
    for name in a.models.split(","):
        results[name] = fit(cfg, makers[name], train, test, device)
        print(f"{name:>10}: {json.dumps(results[name])}", flush=True)
    return results


if __name__ == "__main__":
    main()
