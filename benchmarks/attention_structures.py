"""One attention layer over each sequence structure, fused vs generic, against SDPA on plain Vectors.

Unit timed: forward + backward of one self-attention layer,
:class:`applicative.MultiHeadAttention` (input projection, heads, attention, output
projection; train mode; gradients to the parameters), on a field
``Field[S, Vector(d)]`` whose sequence axis ``S`` -- the queries' and the keys'
structure -- is one of:

* ``Vector(n)``;
* ``Padded(n, lengths)``: random lengths in ``[n/2, n]`` (the bias is ``0`` / ``-inf``);
* ``Chebyshev(n)``: ``n`` coefficients; the keys lower through their ``2n - 1``
  quadrature points (keys and values sampled there, bias ``log w``), the queries
  are evaluated at ``n`` points and the output is transformed back to coefficients;
* ``Tree``: a batch of random binary trees with ``n/2 .. n`` leaves (the largest has
  ``n``, so the axis has size ``n``; padding is masked by the bias);
* ``Distribution(probs)``: per-example probabilities over ``n`` outcomes (bias ``log p``).

Each runs twice: *fused* (the library's default: one
``scaled_dot_product_attention`` call with the structure's bias) and *generic*
(the definition ``mul_mm(normalise(mul_mmt(keys, queries)), values)``, i.e.
``attention(..., fused=False)``). The generic side is reached through the same
``MultiHeadAttention.forward`` with a normalisation equal to ``ScaledSoftmax`` that
declares no lowering (its ``lower`` returns ``None``), so both sides do the
same projections and the same softmax; only the attention core differs.

Peer: the same layer written directly in torch on plain tensors of the same sizes
(``nnf.linear``, a view into heads, ``nnf.scaled_dot_product_attention`` over ``n``
keys, ``nnf.linear``), holding the same weights. ``torch.nn.MultiheadAttention``
(``need_weights=False``) is timed too, for reference.

A second table ("core") times the attention call alone: ``applicative.attention``
on per-head fields ``(batch, heads, n, head_dim)`` (leaf tensors requiring grad)
vs ``nnf.scaled_dot_product_attention`` on the same tensors as plain Vectors.

Timing: rounds; in each round every case runs ``inner`` times back to back (its
mean is the round's time), in an order rotated every round; ratios to the peer
are taken per round and their median is reported (a shared machine drifts
within seconds, so both sides of a ratio must see the same conditions).

    python benchmarks/attention_structures.py               # batch 8, heads 4, n 64, head dim 16
    python benchmarks/attention_structures.py --quick       # small, seconds
    python benchmarks/attention_structures.py --device cuda

The floor of the Chebyshev ratio. The fused Chebyshev layer does, besides what the
peer does, two things the lowering cannot avoid: its ``scaled_dot_product_attention``
call sees ``2n - 1`` keys (the quadrature points) with an additive bias instead of
``n`` keys without one, and four DCT matmuls (forward and backward) carry queries,
keys and values to their points and the output back to coefficients. Both are timed
alone in the same rounds as the layers (SDPA on ``(batch, heads, n, head_dim)``
queries against ``n`` or ``2n - 1`` keys; the four transforms on per-head tensors),
and the line ``floor:`` reports, per round, ``(peer layer + (SDPA over 2n - 1 keys
with bias - SDPA over n keys) + transforms) / peer layer`` -- what the fused layer
would cost with no overhead of its own. Where it exceeds 2.0 the target is out of
reach of this lowering at these sizes.

The last line is ``time(Chebyshev keys, fused layer) / time(SDPA layer on Vectors, n keys)``.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as nnf
from torch import Tensor, nn

from applicative import (
    Field,
    Lowering,
    MultiHeadAttention,
    Normalise,
    ScaledSoftmax,
    Structure,
    attention,
    unsqueeze_batch,
)
from instances import Chebyshev, Distribution, Padded, Tree, Vector
from instances.chebyshev import coefficients, values
from training.cli import Parser, run_cli, threads
from training.distributed import device_of


@dataclass(frozen=True)
class Config:
    batch: int = 8
    heads: int = 4
    n: int = 64
    head_dim: int = 16
    rounds: int = 15
    inner: int = 5
    warmup: int = 3


QUICK = Config(batch=2, heads=2, n=16, head_dim=8, rounds=5, inner=3, warmup=1)


@dataclass(frozen=True)
class UnloweredSoftmax(ScaledSoftmax):
    """``ScaledSoftmax`` that declares no fused kernel: attention runs its generic definition."""

    @property
    def lowering(self) -> Lowering | None:
        return None


class SdpaLayer(nn.Module):
    """The peer: multi-head self-attention in plain torch, parameter names as ``nn.MultiheadAttention``."""

    def __init__(self, d: int, heads: int, device: torch.device) -> None:
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d, device=device))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * d, device=device))
        self.out_proj = nn.Linear(d, d, device=device)

    def forward(self, x: Tensor) -> Tensor:
        b, n, d = x.shape
        qkv = nnf.linear(x, self.in_proj_weight, self.in_proj_bias).view(b, n, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (b, h, n, hd)
        o = nnf.scaled_dot_product_attention(q, k, v)
        return self.out_proj(o.transpose(1, 2).reshape(b, n, d))  # type: ignore[no-any-return]


# ---- the structures ----------------------------------------------------------------------------


def random_tree(rng: random.Random, n: int, depth: int) -> Any:
    """A nested-tuple tree with ``n`` leaves and depth ``<= depth``: uniform or extreme splits at random."""
    if n == 1:
        return 0.0
    cap = 2 ** (depth - 1)
    lo, hi = max(1, n - cap), min(n - 1, cap)
    k = rng.randint(lo, hi) if rng.random() < 0.5 else rng.choice((lo, hi))
    return (random_tree(rng, k, depth - 1), random_tree(rng, n - k, depth - 1))


def structures(cfg: Config, device: torch.device) -> list[tuple[str, Structure]]:
    """``(label, structure)`` for each sequence structure, all of axis size ``n`` and batch ``cfg.batch``."""
    n, b = cfg.n, cfg.batch
    g = torch.Generator().manual_seed(1)
    lengths = torch.randint(n // 2, n + 1, (b,), generator=g)
    lengths[0] = n
    rng = random.Random(2)
    counts = [n] + [rng.randint(max(1, n // 2), n) for _ in range(b - 1)]
    tree, _ = Tree.from_nested([random_tree(rng, c, 32) for c in counts], device=device)
    probs = torch.softmax(torch.randn(b, n, generator=g, dtype=torch.float64), -1).to(torch.float32)
    return [
        ("Vector(n)", Vector(n)),
        ("Padded(n, lengths)", Padded(n, lengths.to(device))),
        (f"Chebyshev(n) [{2 * n - 1} pts]", Chebyshev(n)),
        ("Tree (<= n leaves)", tree),
        ("Distribution(p)", Distribution(probs.to(device))),
    ]


# ---- timing ---------------------------------------------------------------------------------


def backward(y: Tensor) -> None:
    """``y.sum().backward()``: gradients of ``<y, 1>`` (``y`` already holds the cotangent's product)."""
    y.sum().backward()  # type: ignore[no-untyped-call]


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(runs: dict[str, Callable[[], None]], cfg: Config, device: torch.device) -> dict[str, list[float]]:
    """Seconds per call of each run, one entry per round (rounds interleave every run, order rotated)."""
    names = list(runs)
    for _ in range(cfg.warmup):
        for name in names:
            runs[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(cfg.rounds):
        k = r % len(names)
        order = names[k:] + names[:k]
        if r % 2:
            order.reverse()
        for name in order:
            run = runs[name]
            sync(device)
            t0 = time.perf_counter()
            for _ in range(cfg.inner):
                run()
            sync(device)
            times[name].append((time.perf_counter() - t0) / cfg.inner)
    return times


def ratio(times: dict[str, list[float]], name: str, peer: str) -> float:
    """Median over rounds of the per-round ratio ``name / peer``."""
    return statistics.median(a / b for a, b in zip(times[name], times[peer], strict=True))


def ms(times: dict[str, list[float]], name: str) -> float:
    return statistics.median(times[name]) * 1e3


def rel(a: Tensor, b: Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


# ---- the two tables ----------------------------------------------------------------------------


def layer_runs(
    cfg: Config, cases: list[tuple[str, Structure]], device: torch.device
) -> tuple[dict[str, Callable[[], None]], list[str]]:
    """Runs of the layer per structure (fused, generic) and the peers; notes on the outputs."""
    d = cfg.heads * cfg.head_dim
    model, key = Vector(d), Vector(cfg.head_dim)
    mha = MultiHeadAttention(model, key, key, cfg.heads, device=device).train()
    peer = SdpaLayer(d, cfg.heads, device)
    peer.load_state_dict(mha.state_dict())
    torch_mha = nn.MultiheadAttention(d, cfg.heads, dropout=0.0, batch_first=True, device=device)
    torch_mha.load_state_dict(mha.state_dict())
    scale = 1 / math.sqrt(cfg.head_dim)
    fused: Normalise = ScaledSoftmax(scale)
    generic: Normalise = UnloweredSoftmax(scale)
    x = torch.randn(cfg.batch, cfg.n, d, device=device)
    cot = torch.randn_like(x)

    def ours(s: Structure, norm: Normalise) -> Callable[[], None]:
        def run() -> None:
            mha.zero_grad(set_to_none=True)
            backward(mha.using(norm)(Field(x, (s, model))).tensor * cot)

        return run

    def plain(m: nn.Module, call: Callable[[Tensor], Tensor]) -> Callable[[], None]:
        def run() -> None:
            m.zero_grad(set_to_none=True)
            backward(call(x) * cot)

        return run

    runs: dict[str, Callable[[], None]] = {
        "sdpa": plain(peer, peer),
        "nn.MultiheadAttention": plain(torch_mha, lambda t: torch_mha(t, t, t, need_weights=False)[0]),
    }
    notes = []
    with torch.no_grad():
        want = peer(x)
        notes.append(f"nn.MultiheadAttention vs sdpa layer: {rel(torch_mha(x, x, x, need_weights=False)[0], want):.1e}")
        for label, s in cases:
            runs[f"{label} fused"] = ours(s, fused)
            runs[f"{label} generic"] = ours(s, generic)
            f = mha.using(fused)(Field(x, (s, model))).tensor
            g = mha.using(generic)(Field(x, (s, model))).tensor
            line = f"{label}: fused vs generic {rel(f, g):.1e}"
            if isinstance(s, Vector):
                line += f", fused vs sdpa layer {rel(f, want):.1e}"
            notes.append(line)
            if isinstance(s, Chebyshev):  # a smooth function (coefficients decaying like 0.7^k): the two agree
                xs = x * (0.7 ** torch.arange(cfg.n, device=device)).unsqueeze(-1)
                f = mha.using(fused)(Field(xs, (s, model))).tensor
                g = mha.using(generic)(Field(xs, (s, model))).tensor
                notes.append(f"{label}, smooth input (coefficients ~ 0.7^k): fused vs generic {rel(f, g):.1e}")
    return runs, notes


def floor_runs(cfg: Config, device: torch.device) -> dict[str, Callable[[], None]]:
    """The parts of the fused Chebyshev layer the lowering cannot avoid, each alone (see the module)."""
    b, h, n, e, m = cfg.batch, cfg.heads, cfg.n, cfg.head_dim, 2 * cfg.n - 1
    q, k, v = (torch.randn(b, h, n, e, device=device, requires_grad=True) for _ in range(3))
    km, vm = (torch.randn(b, h, m, e, device=device, requires_grad=True) for _ in range(2))
    bias = torch.rand(m, device=device).log().expand(n, m)  # the keys' log weights, one row per query
    scale = 1 / math.sqrt(e)

    def sdpa_n() -> None:
        backward(nnf.scaled_dot_product_attention(q, k, v, scale=scale))

    def sdpa_m() -> None:
        backward(nnf.scaled_dot_product_attention(q, km, vm, attn_mask=bias, scale=scale))

    def transforms() -> None:  # queries to n points, keys and values to 2n - 1, the output back to n coefficients
        backward(values(q, -2).sum() + values(k, -2, m).sum() + values(v, -2, m).sum() + coefficients(v, -2, n).sum())

    return {"floor: sdpa n keys": sdpa_n, "floor: sdpa 2n-1 keys + bias": sdpa_m, "floor: 4 transforms": transforms}


def floor_line(times: dict[str, list[float]], cheb: str) -> str:
    """The floor of the Chebyshev ratio (median over rounds) beside the measured one, with its parts."""
    parts = zip(
        times["sdpa"],
        times["floor: sdpa n keys"],
        times["floor: sdpa 2n-1 keys + bias"],
        times["floor: 4 transforms"],
        strict=True,
    )
    floor = statistics.median((peer + (m - n) + t) / peer for peer, n, m, t in parts)
    return (
        f"floor: (peer layer {ms(times, 'sdpa'):.3f} + sdpa over 2n-1 keys with bias "
        f"{ms(times, 'floor: sdpa 2n-1 keys + bias'):.3f} - over n keys {ms(times, 'floor: sdpa n keys'):.3f} "
        f"+ 4 transforms {ms(times, 'floor: 4 transforms'):.3f} ms) / peer layer = {floor:.2f}; "
        f"measured {ratio(times, cheb + ' fused', 'sdpa'):.2f}"
    )


def core_runs(cfg: Config, cases: list[tuple[str, Structure]], device: torch.device) -> dict[str, Callable[[], None]]:
    """Runs of ``attention`` alone on per-head fields (fused, generic) and of SDPA on the same tensors."""
    shape = (cfg.batch, cfg.heads, cfg.n, cfg.head_dim)
    q, k, v = (torch.randn(shape, device=device, requires_grad=True) for _ in range(3))
    cot = torch.randn(shape, device=device)
    key = Vector(cfg.head_dim)
    scale = 1 / math.sqrt(cfg.head_dim)
    norm = ScaledSoftmax(scale)

    def ours(s: Structure, fused: bool) -> Callable[[], None]:
        sh = unsqueeze_batch(s, -1)  # heads are a batch axis between the example batch and the sequence

        def run() -> None:
            q.grad = k.grad = v.grad = None
            out = attention(norm, Field(q, (sh, key)), Field(k, (sh, key)), Field(v, (sh, key)), fused=fused)
            backward(out.tensor * cot)

        return run

    def sdpa() -> None:
        q.grad = k.grad = v.grad = None
        backward(nnf.scaled_dot_product_attention(q, k, v, scale=scale) * cot)

    runs: dict[str, Callable[[], None]] = {"sdpa": sdpa}
    for label, s in cases:
        runs[f"{label} fused"] = ours(s, True)
        runs[f"{label} generic"] = ours(s, False)
    return runs


def table(title: str, times: dict[str, list[float]], cases: list[tuple[str, Structure]], extra: list[str]) -> None:
    print(title)
    print(f"{'structure (keys)':28s} {'fused ms':>9s} {'generic ms':>11s} {'fused/sdpa':>11s} {'generic/sdpa':>13s}")
    print(f"{'peer: sdpa on Vector(n)':28s} {ms(times, 'sdpa'):9.3f}")
    for name in extra:
        print(f"{'  ' + name:28s} {ms(times, name):9.3f} {'':11s} {ratio(times, name, 'sdpa'):11.2f}")
    for label, _ in cases:
        f, g = f"{label} fused", f"{label} generic"
        print(
            f"{label:28s} {ms(times, f):9.3f} {ms(times, g):11.3f} "
            f"{ratio(times, f, 'sdpa'):11.2f} {ratio(times, g, 'sdpa'):13.2f}"
        )


def main() -> None:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=threads, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--no-core", action="store_true", help="skip the attention-core table")
    args = p.parse_args()
    cfg = QUICK if args.quick else Config()
    if args.rounds is not None:
        cfg = replace(cfg, rounds=args.rounds)
    torch.set_num_threads(args.threads)
    device = device_of(args.device)
    torch.manual_seed(0)
    cases = structures(cfg, device)
    d = cfg.heads * cfg.head_dim
    print(
        f"config: {cfg}, model d={d}, device={device}, threads={torch.get_num_threads()}, float32, "
        "forward+backward, train mode"
    )

    runs, notes = layer_runs(cfg, cases, device)
    runs.update(floor_runs(cfg, device))
    print("max relative difference of outputs (Chebyshev: fused = quadrature of e^s at the 2n-1 points, generic =")
    print("  softmax as a truncated n-term series; they differ by the truncation, not a bug):")
    for line in notes:
        print(f"  {line}")
    layer = measure(runs, cfg, device)
    table(
        f"\nlayer: MultiHeadAttention fwd+bwd, batch {cfg.batch}, seq n={cfg.n}, {cfg.heads} heads x {cfg.head_dim}"
        f" (median of {cfg.rounds} rounds x {cfg.inner}; ratios: median of per-round ratios)",
        layer,
        cases,
        ["nn.MultiheadAttention"],
    )
    if not args.no_core:
        core = measure(core_runs(cfg, cases, device), cfg, device)
        table(
            f"\ncore: applicative.attention on per-head fields (batch, heads, n, head_dim) = "
            f"({cfg.batch}, {cfg.heads}, {cfg.n}, {cfg.head_dim}) vs sdpa on the same tensors",
            core,
            cases,
            [],
        )
        cheb = next(label for label, s in cases if isinstance(s, Chebyshev))
        print(f"core: chebyshev fused / sdpa {ratio(core, cheb + ' fused', 'sdpa'):.2f}")
    cheb = next(label for label, s in cases if isinstance(s, Chebyshev))
    print(floor_line(layer, cheb))
    x = ratio(layer, cheb + " fused", "sdpa")
    print(f"result: chebyshev_fused_over_vector_sdpa_time_ratio {x:.2f} (target <= 2.0)")


if __name__ == "__main__":
    sys.exit(run_cli("attention_structures", main))
