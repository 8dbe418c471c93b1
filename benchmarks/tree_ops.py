"""Batched tree pairing vs the design source's recursive definition.

Workload: two batches of 4096 random binary trees (up to 64 leaves, depth up
to 32, a mix of balanced and caterpillar-like shapes) holding numbers. The
operation timed is ``counit (zip_with mul a b)`` -- ``pair`` (the common
refinement, copying leaves down), a pointwise product, and the sum of leaves:

* peer: the Haskell instance of the design source transcribed as recursive
  Python over nested tuples, one tree at a time;
* ours (fused): :func:`instances._tree_inner.inner_linear` -- one compiled
  two-pointer walk over both trees' breakpoints per pair, multiplying and
  adding as it meets each refined leaf; the refined tree is never built. It
  is CPU-only: on another device "ours" is the unfused path below;
* ours (unfused, printed for comparison): :class:`instances.Tree` -- merge of
  sorted breakpoints, gathers, one masked sum, for the whole batch at once.

Memory: the peak bytes of tensors alive during the unfused ``pair`` + ``counit``
(tracked exactly with a dispatch mode), for trees of ``L`` leaves, balanced and
caterpillar-shaped (depth ``L - 1``: a dense ``2^depth`` layout would need
``2^(L-1)`` slots). Linear growth means bytes / (batch * L) stays flat. The
fused walk's peak is printed beside it: its output, whatever ``L``.

Timing: rounds of one reference run followed by the best of a few fused
runs, then the best of a few unfused runs (``timeit``'s convention: slower
runs measure the neighbours); the result is the median over rounds of the
per-round ratio reference / fused, so both sides of each ratio ran under the
same conditions on a shared machine.

Run: ``python benchmarks/tree_ops.py [--quick] [--device cuda]``. The last line
is the result.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import torch

from applicative import Field, counit, zip_with
from instances import NodeAlgebra, Tree, tree_field
from instances._tree_inner import inner_linear
from training.cli import Parser, run_cli, threads
from training.distributed import device_of
from training.memory import PeakBytes

# ---- the reference: data Tree l = Node (Tree l) (Tree l) | Leaf l, transcribed ------------------


@dataclass(frozen=True)
class Leaf:
    x: Any


@dataclass(frozen=True)
class Node:
    left: Any
    right: Any


def ref_of(t: Any) -> Any:
    return Node(ref_of(t[0]), ref_of(t[1])) if isinstance(t, tuple) else Leaf(t)


def ref_fmap(f: Any, t: Any) -> Any:
    return Node(ref_fmap(f, t.left), ref_fmap(f, t.right)) if isinstance(t, Node) else Leaf(f(t.x))


def ref_pair(a: Any, b: Any) -> Any:
    if isinstance(a, Node) and isinstance(b, Node):
        return Node(ref_pair(a.left, b.left), ref_pair(a.right, b.right))
    if isinstance(a, Node):
        return Node(ref_fmap(lambda v: (v, b.x), a.left), ref_fmap(lambda v: (v, b.x), a.right))
    if isinstance(b, Node):
        return Node(ref_fmap(lambda v: (a.x, v), b.left), ref_fmap(lambda v: (a.x, v), b.right))
    return Leaf((a.x, b.x))


def ref_counit(t: Any) -> Any:
    return ref_counit(t.left) + ref_counit(t.right) if isinstance(t, Node) else t.x


def reference(a: Any, b: Any) -> Any:
    """``counit (fmap (uncurry (*)) (pair a b))``."""
    return ref_counit(ref_fmap(lambda p: p[0] * p[1], ref_pair(a, b)))


# ---- random trees ------------------------------------------------------------------------------


def random_tree(rng: random.Random, n: int, depth: int) -> Any:
    """A tree with ``n`` leaves and depth ``<= depth``: uniform or extreme splits at random."""
    if n == 1:
        return float(rng.randint(-9, 9))
    cap = 2 ** (depth - 1)
    lo, hi = max(1, n - cap), min(n - 1, cap)
    k = rng.randint(lo, hi) if rng.random() < 0.5 else rng.choice((lo, hi))
    return (random_tree(rng, k, depth - 1), random_tree(rng, n - k, depth - 1))


def caterpillar(n: int) -> Any:
    t: Any = 1.0
    for _ in range(n - 1):
        t = (1.0, t)
    return t


def balanced(n: int) -> Any:
    return 1.0 if n == 1 else (balanced(n // 2), balanced(n - n // 2))


def fresh(f: Field[Tree]) -> Field[Tree]:
    """The same value on a new tree object (so no cached join is reused between repetitions)."""
    t = f.structures[0]
    assert isinstance(t, Tree)
    return Field(f.tensor, (t.with_data((t.start, t.depth)),))


def unfused(a: Field[Tree], b: Field[Tree]) -> torch.Tensor:
    """``counit (zip_with mul a b)`` through :class:`Tree`: the refined tree, two gathers, a masked sum."""
    return counit(zip_with(lambda u, v: Field(u.tensor * v.tensor, ()), a, b)).tensor


def fused_or_none(a: Field[Tree], b: Field[Tree]) -> torch.Tensor | None:
    """The same by one compiled walk per tree pair (``None`` off the CPU: the kernel does not apply)."""
    ta, tb = a.structures[0], b.structures[0]
    assert isinstance(ta, Tree) and isinstance(tb, Tree) and ta.algebra is tb.algebra
    if ta.algebra is NodeAlgebra.MEAN:
        return inner_linear(ta.start, tb.start, ta.depth, tb.depth, a.tensor, b.tensor)
    return inner_linear(ta.start, tb.start, None, None, a.tensor, b.tensor)


def ours(a: Field[Tree], b: Field[Tree]) -> torch.Tensor:
    """The fused walk where it applies, else the unfused path."""
    out = fused_or_none(a, b)
    return unfused(a, b) if out is None else out


# ---- exact peak of live tensor bytes (training.memory.PeakBytes) ---------------------------------


def peak_bytes(run: Any, make: Any, batch: int, leaves: int, device: torch.device) -> int:
    """Peak extra bytes of ``counit (zip_with mul a b)``: ``batch`` copies of ``make(leaves)``, ``make(leaves / 2)``."""
    a = tree_field([make(leaves)] * batch, dtype=torch.float32, device=device)
    b = tree_field([make(max(1, leaves // 2))] * batch, dtype=torch.float32, device=device)
    with PeakBytes() as m:
        run(a, b)
    return int(m.peak)


def timed(run: Any, sync: Any) -> float:
    """Wall seconds of one ``run()`` (device work included)."""
    sync()
    t0 = time.perf_counter()
    run()
    sync()
    return time.perf_counter() - t0


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small batch, few repetitions (seconds)")
    ap.add_argument("--threads", type=threads, default=1, help="torch CPU threads (default 1, like the reference)")
    ap.add_argument("--device", default="cpu", help="where the batched trees live (the reference runs on the CPU)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = device_of(args.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    batch = 512 if args.quick else 4096
    rounds, per_round, warm = (2, 3, 2) if args.quick else (5, 8, 10)
    rng = random.Random(0)
    ta = [random_tree(rng, rng.randint(1, 64), 32) for _ in range(batch)]
    tb = [random_tree(rng, rng.randint(1, 64), 32) for _ in range(batch)]
    t0 = time.perf_counter()
    a = tree_field(ta, dtype=torch.float64, device=device)
    b = tree_field(tb, dtype=torch.float64, device=device)
    convert_s = time.perf_counter() - t0

    ra, rb = [ref_of(t) for t in ta], [ref_of(t) for t in tb]
    expected: list[float] = []

    def run_reference() -> None:
        expected[:] = [reference(x, y) for x, y in zip(ra, rb, strict=True)]

    run_reference()
    is_fused = fused_or_none(a, b) is not None
    for run in (ours, unfused):
        got = run(fresh(a), fresh(b))
        assert got.tolist() == expected, f"{run.__name__}: batched result differs from the recursive reference"
    n_pairs = rounds * per_round + warm
    pairs = {run: [(fresh(a), fresh(b)) for _ in range(n_pairs)] for run in (ours, unfused)}  # no cached join reused
    for run in (ours, unfused):
        for _ in range(warm):  # the CPU kernels are compiled (or loaded) on first use; the allocator settles
            run(*pairs[run].pop())
    # rounds of (one reference run, then the best of a few fused runs, then of a few unfused runs): all sides
    # of each ratio see the same machine, which on a shared one drifts by 2x within a minute
    print(f"device={device} threads={torch.get_num_threads()} batch={batch} leaves<={a.tensor.shape[-1]} depth<=32")
    if not is_fused:
        print(f"(the fused walk is CPU-only: on {device} 'fused' below is the unfused path)")
    best = f"(best of {per_round})"
    print(f"{'round':>5} {'reference':>12} {'fused ' + best:>20} {'speedup':>9} {'unfused ' + best:>22} {'speedup':>9}")
    ratios, unfused_ratios, times = [], [], []
    for k in range(rounds):
        ref_s = timed(run_reference, lambda: None)
        ours_s = min(timed(lambda: ours(*pairs[ours].pop()), sync) for _ in range(per_round))
        unfused_s = min(timed(lambda: unfused(*pairs[unfused].pop()), sync) for _ in range(per_round))
        ratios.append(ref_s / ours_s)
        unfused_ratios.append(ref_s / unfused_s)
        times.append((ref_s, ours_s, unfused_s))
        print(
            f"{k:5d} {ref_s * 1e3:10.1f}ms {ours_s * 1e3:18.3f}ms {ratios[-1]:8.1f}x "
            f"{unfused_s * 1e3:20.3f}ms {unfused_ratios[-1]:8.1f}x"
        )
    speedup = statistics.median(ratios)
    ref_ms, fused_ms, unfused_ms = (statistics.median(t[i] for t in times) * 1e3 for i in range(3))
    print(f"median over rounds: reference {ref_ms:.1f} ms")
    print(f"  fused (timed as ours):    {fused_ms:8.3f} ms, speedup {speedup:.1f}x")
    print(f"  unfused (for comparison): {unfused_ms:8.3f} ms, speedup {statistics.median(unfused_ratios):.1f}x")
    print(f"(conversion from nested tuples, not timed above: {convert_s * 1e3:.0f} ms)")

    print("peak bytes of live tensors during the unfused pair + counit, batch 256 (second tree has L/2 leaves):")
    print(f"{'L':>6} {'balanced':>12} {'caterpillar':>12} {'bytes/(batch*L) bal':>20} {'cat':>8} {'fused bal':>10}")
    sizes = [8, 16, 32, 62] if args.quick else [8, 16, 32, 62, 256, 1024]
    per_leaf = []
    for n in sizes:
        pb = peak_bytes(unfused, balanced, 256, n, device)
        pc = peak_bytes(unfused, caterpillar, 256, n, device) if n <= 62 else None
        pf = peak_bytes(ours, balanced, 256, n, device)
        per_leaf.append(pb / (256 * n))
        cat = f"{pc:12d}" if pc is not None else f"{'(depth>62)':>12}"
        cat_ratio = f"{pc / (256 * n):8.1f}" if pc is not None else f"{'-':>8}"
        print(f"{n:6d} {pb:12d} {cat} {pb / (256 * n):20.1f} {cat_ratio} {pf:10d}")
    spread = max(per_leaf) / min(per_leaf)
    print(f"bytes per leaf varies by {spread:.2f}x from L={sizes[0]} to L={sizes[-1]} (linear growth: flat)")
    print(f"result: tree_speedup_over_recursive {speedup:.1f} (target >= 100)")


if __name__ == "__main__":
    sys.exit(run_cli("tree_ops", main))
