"""The DAG fold against the tree fold on the unrolled tree, as the sharing depth grows.

Workload: batches of 64 seeded arithmetic circuits (:mod:`training.tasks.circuits.data`, width 3) whose output
sits at level ``d``: about ``3 d`` nodes per circuit, while the output's expression tree -- every shared
subexpression written out -- has up to ``2^d`` leaves. Both sides run the same learned cell
(:class:`models.NodeCell`, state 64, hidden 128, the same parameters), forward and backward:

* ours: :class:`models.DAGFold` on :class:`instances.DAG` -- one batched step per level, each node once;
* peer: :class:`models.TreeFold` on the unrolled trees (:class:`instances.Expressions`) -- the same
  batched level-by-level fold, on the tree (the unrolling itself is not timed).

Each repetition builds its level schedule afresh (a new structure object), as a training step on a new
batch does. Time: the best of a few forward+backward passes (one thread). Memory: the exact peak of live
tensor bytes during the forward pass with autograd's saved tensors (a dispatch mode, as in
``benchmarks/tree_ops.py``), divided by the number of nodes (DAG) or tree nodes (tree): linear growth
keeps it flat. The tree side stops where it would need more than about a gigabyte.

Run: ``python benchmarks/dag_fold.py [--quick]``. The last line is the result: how much the DAG's bytes per
node vary over the depths (linear in the nodes: close to 1).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import torch
from torch.nn import functional as nnf

from applicative import Field, Vector
from instances import DAG, Expressions
from models import DAGFold, TreeFold
from training.cli import Parser, run_cli, threads
from training.memory import PeakBytes
from training.tasks.circuits.data import OPS, dag_batch, generate, tree_batch


class Digits(Vector):
    size = 10


def forward(model: Any, s: DAG | Expressions, digits: torch.Tensor) -> torch.Tensor:
    """The output nodes' states ``(B, 64)``, on a fresh structure object (its schedule built inside)."""
    x = nnf.one_hot(digits, 10).to(torch.float32)
    if isinstance(s, DAG):
        fresh = s.with_data(s.data())
        return fresh.last(model(fresh, Field(x, (fresh, Digits())))).tensor
    e = Expressions(s.tree.with_data(s.tree.data()), s.ops, s.operations)
    return model(e, Field(x, (e.tree, Digits()))).tensor  # type: ignore[no-any-return]


def timed(model: Any, s: DAG | Expressions, digits: torch.Tensor, reps: int) -> float:
    """Best seconds of forward + backward over ``reps`` runs."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.autograd.backward(forward(model, s, digits).square().sum())
        best = min(best, time.perf_counter() - t0)
    model.zero_grad()
    return best


def peak(model: Any, s: DAG | Expressions, digits: torch.Tensor) -> int:
    with PeakBytes() as m:
        out = forward(model, s, digits)
        del out
    return int(m.peak)


def main() -> None:
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shallow circuits, two repetitions (seconds)")
    ap.add_argument("--threads", type=threads, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    depths = [2, 4, 6, 8] if args.quick else [2, 4, 6, 8, 10, 12, 16, 24, 32]
    tree_max = 8 if args.quick else 12
    reps = 2 if args.quick else 5
    batch = 64
    state, hidden = Vector(64), Vector(128)
    dag_model = DAGFold(Digits(), state, hidden, len(OPS))
    tree_model = TreeFold(Digits(), state, hidden, len(OPS))
    tree_model.load_state_dict(dag_model.state_dict())  # the same parameters: the same function
    print(f"threads={torch.get_num_threads()} batch={batch} state=64 hidden=128 (fwd+bwd, best of {reps})")
    print(
        f"{'depth':>5} {'DAG nodes':>10} {'tree nodes':>11} {'DAG ms':>9} {'tree ms':>9} {'speedup':>8} "
        f"{'DAG bytes/node':>15} {'tree bytes/node':>16} {'DAG µs/node':>12}"
    )
    per_node = []
    for d in depths:
        circuits = generate(batch, [d], seed=d)
        dag, digits, _ = dag_batch(circuits)
        nodes = int(dag.count.sum())
        dag_s = timed(dag_model, dag, digits, reps)
        dag_b = peak(dag_model, dag, digits)
        per_node.append(dag_b / nodes)
        row = f"{d:5d} {nodes:10d} "
        if d <= tree_max:
            e, leaves, _ = tree_batch(circuits)
            tree_nodes = 2 * int(e.tree.mask.sum()) - batch
            tree_s = timed(tree_model, e, leaves, reps)
            tree_b = peak(tree_model, e, leaves)
            check = (forward(dag_model, dag, digits) - forward(tree_model, e, leaves)).abs().max().item()
            assert check < 1e-4, f"the DAG fold and the unrolled tree fold differ by {check} at depth {d}"
            row += f"{tree_nodes:11d} {dag_s * 1e3:9.2f} {tree_s * 1e3:9.2f} {tree_s / dag_s:7.1f}x "
            row += f"{dag_b / nodes:15.0f} {tree_b / tree_nodes:16.0f}"
        else:
            row += f"{'-':>11} {dag_s * 1e3:9.2f} {'-':>9} {'-':>8} {dag_b / nodes:15.0f} {'-':>16}"
        print(row + f" {dag_s * 1e6 / nodes:12.1f}", flush=True)
    spread = max(per_node) / min(per_node)
    print(f"DAG bytes per node vary by {spread:.2f}x from depth {depths[0]} to {depths[-1]} (linear: flat)")
    print(f"result: dag_bytes_per_node_spread {spread:.2f} (target <= 1.5)")


if __name__ == "__main__":
    sys.exit(run_cli("dag_fold", main))
