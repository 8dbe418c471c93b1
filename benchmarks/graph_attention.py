"""Attention along edges (``instances.EdgeSoftmax``) against PyTorch Geometric's ``TransformerConv``.

Workload: a batch of random sparse graphs (``B`` graphs of ``n`` nodes, about 8 in-edges per node), node
features of width 64, 4 heads of 16. Both sides compute, with the same weights,

    o_i = Σ_{j -> i} softmax_j(q_i · k_j / 4) v_j,   q = W_q x,  k = W_k x,  v = W_v x   (per head)

* ours: the three projections, then ``applicative.attention(EdgeSoftmax(1/4), q, k, v)`` on
  ``Field[Graph, Vector]`` with the heads as a batch axis (the edge-list kernel: gathers, a segment softmax);
* peer: ``torch_geometric.nn.TransformerConv(64, 16, heads=4, root_weight=False)`` on the same graphs
  flattened into one (PyG's batching), configured as its authors document for this attention.

The outputs are checked equal first (float64, 1e-10). Time: forward + backward, the best of a few runs per
round, the median over rounds of the per-round ratio ours / peer (both sides under the same load). Memory:
peak live tensor bytes during the forward pass with autograd's saved tensors, for growing graphs.

Needs the bench extra (``pip install -e ".[bench]"``). Run: ``python benchmarks/graph_attention.py [--quick]``.
The last line is the result.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from typing import Any

import torch
from torch import Tensor

from applicative import Field, Vector, attention
from instances import EdgeSoftmax, Graph
from training import UserError
from training.cli import Parser, run_cli, threads
from training.memory import PeakBytes

WIDTH, HEADS, HEAD = 64, 4, 16


def graphs(batch: int, n: int, degree: int, seed: int) -> tuple[Graph, Tensor]:
    """``batch`` random graphs with ``degree`` in-edges per node, and PyG's flattened ``edge_index``."""
    g = torch.Generator().manual_seed(seed)
    targets = torch.arange(n).repeat_interleave(degree).expand(batch, -1)
    sources = torch.randint(0, n, targets.shape, generator=g)
    edges = torch.stack([sources, targets], -1)  # (B, E, 2)
    offset = (torch.arange(batch) * n)[:, None]
    flat = torch.stack([(sources + offset).reshape(-1), (targets + offset).reshape(-1)])
    return Graph(n, edges), flat


def ours(conv: Any, graph: Graph, x: Tensor) -> Tensor:
    """The same projections as the peer's, then the generic attention along edges: ``(B, n, WIDTH)``."""
    b, n, _ = x.shape

    def heads(lin: Any) -> Field[Graph, Vector]:
        t = lin(x).reshape(b, n, HEADS, HEAD).transpose(1, 2)  # (B, heads, n, 16)
        return Field(t, (graph, Vector(HEAD)))

    o = attention(EdgeSoftmax(HEAD**-0.5), heads(conv.lin_query), heads(conv.lin_key), heads(conv.lin_value))
    return o.tensor.transpose(1, 2).reshape(b, n, WIDTH)


def peer(conv: Any, flat: Tensor, x: Tensor) -> Tensor:
    b, n, _ = x.shape
    return conv(x.reshape(b * n, WIDTH), flat).reshape(b, n, WIDTH)  # type: ignore[no-any-return]


def fwd_bwd(run: Any) -> float:
    t0 = time.perf_counter()
    torch.autograd.backward(run().square().sum())
    return time.perf_counter() - t0


def peak(run: Any) -> int:
    with PeakBytes() as m:
        out = run()
        del out
    return int(m.peak)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small graphs, few repetitions (seconds)")
    ap.add_argument("--threads", type=threads, default=1)
    args = ap.parse_args()
    try:
        with warnings.catch_warnings():  # PyG's import uses torch.jit.script, which torch deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch_geometric.nn import TransformerConv
    except ImportError as e:
        print("result: edge_attention_time_ratio_vs_transformerconv nan (target <= 1.5)")
        raise UserError(f"PyTorch Geometric (the peer) is not installed ({e}); pip install -e '.[bench]'") from None
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    conv = TransformerConv(WIDTH, HEAD, heads=HEADS, root_weight=False)

    # equality, in float64
    conv64 = TransformerConv(WIDTH, HEAD, heads=HEADS, root_weight=False).double()
    conv64.load_state_dict(conv.state_dict())
    g, flat = graphs(4, 50, 8, seed=1)
    x = torch.randn(4, 50, WIDTH, dtype=torch.float64)
    diff = (ours(conv64, g, x) - peer(conv64, flat, x)).abs().max().item()
    assert diff < 1e-10, f"EdgeSoftmax attention and TransformerConv differ by {diff}"
    print(f"max |ours - TransformerConv| in float64: {diff:.1e}")

    batch, n = (8, 200) if args.quick else (32, 500)
    rounds, per_round = (2, 2) if args.quick else (5, 4)
    g, flat = graphs(batch, n, 8, seed=2)
    x = torch.randn(batch, n, WIDTH, requires_grad=True)
    print(f"threads={torch.get_num_threads()} graphs={batch} nodes={n} edges/graph={8 * n} width={WIDTH} heads={HEADS}")
    for _ in range(2):  # warm up
        fwd_bwd(lambda: ours(conv, g, x))
        fwd_bwd(lambda: peer(conv, flat, x))
    ratios = []
    for r in range(rounds):
        a = min(fwd_bwd(lambda: ours(conv, g, x)) for _ in range(per_round))
        b = min(fwd_bwd(lambda: peer(conv, flat, x)) for _ in range(per_round))
        ratios.append(a / b)
        print(f"round {r}: ours {a * 1e3:.1f} ms, TransformerConv {b * 1e3:.1f} ms, ratio {a / b:.2f}")
    print("peak bytes during the forward pass (with saved tensors), 8 in-edges per node, 4 graphs:")
    print(f"{'nodes':>7} {'edges':>8} {'ours':>12} {'peer':>12} {'ours/edge':>10} {'peer/edge':>10}")
    for size in [250, 500, 1000] if args.quick else [250, 500, 1000, 2000, 4000]:
        g2, flat2 = graphs(4, size, 8, seed=3)
        x2 = torch.randn(4, size, WIDTH, requires_grad=True)
        po = peak(lambda g2=g2, x2=x2: ours(conv, g2, x2))
        pp = peak(lambda flat2=flat2, x2=x2: peer(conv, flat2, x2))
        e = 4 * 8 * size
        print(f"{size:7d} {e:8d} {po:12d} {pp:12d} {po / e:10.0f} {pp / e:10.0f}")
    ratio = statistics.median(ratios)
    print(f"result: edge_attention_time_ratio_vs_transformerconv {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    sys.exit(run_cli("graph_attention", main))
