"""Python-layer overhead at small sizes: a 2-layer generic encoder vs ``torch.nn.TransformerEncoder``.

Equal work on both sides: ``nn.ModuleList`` of two :class:`models.EncoderLayer`
(no embedding, no final norm) against ``nn.TransformerEncoder`` of two
``nn.TransformerEncoderLayer`` holding the same weights (PyTorch's ``state_dict``
loads into the generic layers, as in ``tests/test_transformer_equivalence.py``);
dropout 0, ReLU, the same ``norm_first``, batch_first, train mode (PyTorch's fast
path is inference-only, so both run their training path), forward + backward
with gradients to the parameters, one CPU thread.

Sizes (batch, seq, d, heads; MLP hidden 4d): ``1, 8, 16, 2`` (the result: almost
all of the time is Python), ``8, 32, 64, 4`` and ``8, 128, 128, 8``.

Timing: rounds; in each round both sides run a block of calls (sized to take
about ``--block-ms``; its mean is the round's time), in alternating order; the
ratio ours / torch is taken per round and its median reported. ``ours - torch``
per call is the extra time of the generic layers (mostly Python).

    python benchmarks/overhead.py              # 3 sizes, 21 rounds each
    python benchmarks/overhead.py --quick      # seconds
    python benchmarks/overhead.py --profile    # then cProfile ours at the small size (top functions by tottime)

The last line is ours / torch at batch 1, seq 8, d 16.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from applicative import Field
from instances import Vector
from models import EncoderLayer
from training.cli import Parser, run_cli, threads
from training.distributed import device_of

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Size:
    batch: int
    seq: int
    model: int
    heads: int

    @property
    def hidden(self) -> int:
        return 4 * self.model

    def __str__(self) -> str:
        return f"batch {self.batch}, seq {self.seq}, d {self.model}, {self.heads} heads, hidden {self.hidden}"


SIZES = [Size(1, 8, 16, 2), Size(8, 32, 64, 4), Size(8, 128, 128, 8)]
LAYERS = 2


class GenericStack(nn.Module):
    """Generic encoder layers with the submodule names of ``nn.TransformerEncoder`` (``layers.0...``)."""

    def __init__(self, size: Size, norm_first: bool, device: torch.device) -> None:
        super().__init__()
        self.seq, self.model = Vector(size.seq), Vector(size.model)
        self.layers = nn.ModuleList(
            EncoderLayer(self.model, Vector(size.hidden), size.heads, norm_first=norm_first, device=device)
            for _ in range(LAYERS)
        )

    def forward(self, x: Tensor) -> Tensor:
        h = Field(x, (self.seq, self.model))
        for layer in self.layers:
            h = layer(h)
        return h.tensor


def build(size: Size, norm_first: bool, device: torch.device) -> tuple[nn.Module, nn.Module]:
    layer = nn.TransformerEncoderLayer(
        size.model, size.heads, size.hidden, dropout=0.0, batch_first=True, norm_first=norm_first, device=device
    )
    ref = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
    ours = GenericStack(size, norm_first, device)
    missing, unexpected = ours.load_state_dict(ref.state_dict(), strict=True)
    assert not missing and not unexpected
    return ref.train(), ours.train()


def step(model: nn.Module, x: Tensor, cot: Tensor) -> Callable[[], None]:
    def run() -> None:
        model.zero_grad(set_to_none=True)
        (model(x) * cot).sum().backward()

    return run


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def block(run: Callable[[], None], calls: int, device: torch.device) -> float:
    """Seconds per call over ``calls`` back-to-back calls."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    sync(device)
    return (time.perf_counter() - t0) / calls


def compare(size: Size, args: argparse.Namespace, device: torch.device) -> tuple[float, float, float, float, float]:
    """``(ours / torch, ours ms, torch ms, ours - torch us, output difference)`` at one size.

    The ratio and the difference are medians of per-round values; the times are medians over rounds.
    """
    torch.manual_seed(0)
    ref, ours = build(size, args.norm_first, device)
    x = torch.randn(size.batch, size.seq, size.model, device=device)
    cot = torch.randn_like(x)
    with torch.no_grad():
        want = ref(x)
        err = float((ours(x) - want).abs().max() / want.abs().max())
    if err > 1e-4:
        raise SystemExit(f"{size}: outputs differ by {err:.2e}: the models are not the same")
    runs = {"torch": step(ref, x, cot), "ours": step(ours, x, cot)}
    for _ in range(args.warmup):
        for run in runs.values():
            run()
    per_call = max(block(runs["torch"], 3, device), block(runs["ours"], 3, device))
    calls = max(1, round(args.block_ms * 1e-3 / per_call))
    times: dict[str, list[float]] = defaultdict(list)
    for r in range(args.rounds):
        for name in ("torch", "ours") if r % 2 == 0 else ("ours", "torch"):
            times[name].append(block(runs[name], calls, device))
    pairs = list(zip(times["ours"], times["torch"], strict=True))
    ratio = statistics.median(a / b for a, b in pairs)
    extra_us = statistics.median(a - b for a, b in pairs) * 1e6
    return ratio, statistics.median(times["ours"]) * 1e3, statistics.median(times["torch"]) * 1e3, extra_us, err


def mine(p: Path) -> bool:
    """A source file of this repository (not its virtual environment)."""
    return ROOT in p.parents and not ({".venv", "site-packages"} & set(p.parts))


def profile(size: Size, args: argparse.Namespace, device: torch.device, calls: int) -> None:
    """cProfile ``calls`` fwd+bwd of ours at ``size``: top functions by tottime, and time per source tree."""
    torch.manual_seed(0)
    _, ours = build(size, args.norm_first, device)
    x = torch.randn(size.batch, size.seq, size.model, device=device)
    run = step(ours, x, torch.randn_like(x))
    for _ in range(20):
        run()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        run()
    prof.disable()
    stats = pstats.Stats(prof)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in raw.values())
    print(f"\ncProfile of ours, {size}, {calls} fwd+bwd calls: {total / calls * 1e6:.0f} us of profiled time per call")
    print("time by where the function lives (tottime, % of profiled):")
    groups: dict[str, float] = defaultdict(float)
    for (file, _, _), (_, _, tt, _, _) in raw.items():
        p = Path(file)
        if "torch" in p.parts:
            key = "torch (python)"
        elif mine(p):
            key = str(p.relative_to(ROOT).parts[0]) + "/"
        elif file == "~":
            key = "built-ins / C (incl. torch ops and autograd backward)"
        else:
            key = "other python"
        groups[key] += tt
    for key, tt in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * tt / total:5.1f}%  {key}")
    print(f"top {args.top} functions by tottime (ncalls per fwd+bwd call; % of profiled time):")
    rows = sorted(raw.items(), key=lambda kv: -kv[1][2])[: args.top]
    for (file, line, name), (_, nc, tt, ct, _) in rows:
        p = Path(file)
        where = str(p.relative_to(ROOT)) if mine(p) else (p.name if file != "~" else "")
        print(f"  {100 * tt / total:5.1f}% tot {100 * ct / total:5.1f}% cum {nc / calls:6.1f}x  {where}:{line} {name}")
    ours_only = [(k, v) for k, v in raw.items() if mine(Path(k[0])) and "benchmarks" not in Path(k[0]).parts]
    print(f"top {args.top} functions of this repository by tottime:")
    for (file, line, name), (_, nc, tt, ct, _) in sorted(ours_only, key=lambda kv: -kv[1][2])[: args.top]:
        rel = Path(file).relative_to(ROOT)
        print(f"  {100 * tt / total:5.1f}% tot {100 * ct / total:5.1f}% cum {nc / calls:6.1f}x  {rel}:{line} {name}")


def main() -> None:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds, shorter blocks (seconds)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=threads, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--norm-first", action="store_true", help="pre-norm layers (default post-norm, torch's default)")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--block-ms", type=float, default=None, help="target length of one timed block")
    p.add_argument("--profile", action="store_true", help="cProfile ours at the small size afterwards")
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    args.rounds = args.rounds or (7 if args.quick else 21)
    args.block_ms = args.block_ms or (10.0 if args.quick else 40.0)
    args.warmup = 3 if args.quick else 10
    torch.set_num_threads(args.threads)
    device = device_of(args.device)
    print(
        f"{LAYERS}-layer encoder, fwd+bwd, train mode, dropout 0, norm_first={args.norm_first}, device={device}, "
        f"threads={torch.get_num_threads()}, {args.rounds} rounds of ~{args.block_ms:.0f} ms blocks"
    )
    head = f"{'ours ms':>9s} {'torch ms':>9s} {'ours-torch us':>14s} {'ours/torch':>11s} {'max rel diff':>13s}"
    print(f"{'size':58s} {head}")
    results = []
    for size in SIZES:
        ratio, ours_ms, torch_ms, extra, err = compare(size, args, device)
        results.append(ratio)
        print(f"{size!s:58s} {ours_ms:9.3f} {torch_ms:9.3f} {extra:14.0f} {ratio:11.2f} {err:13.1e}")
    if args.profile:
        profile(SIZES[0], args, device, 200 if args.quick else 1000)
    print(f"result: small_encoder_overhead_time_ratio {results[0]:.2f} (target <= 1.2)")


if __name__ == "__main__":
    sys.exit(run_cli("overhead", main))
