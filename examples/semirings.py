"""Semirings at work: one generic ``mul_mm`` is shortest paths, the HMM forward algorithm and Viterbi.

``mul_mm`` is written once, ``(A ⊗ B)_ik = ⊕_j A_ij ⊗ B_jk``; the ring decides what it computes
(:mod:`training.tasks.semirings`):

* min-plus (:data:`~instances.MIN_PLUS`): squaring the adjacency matrix ``⌈log₂(n-1)⌉`` times gives all shortest
  path lengths -- compared with ``scipy.sparse.csgraph`` (Floyd--Warshall);
* log (:data:`~instances.LOG`): the HMM forward algorithm, step by step and as a balanced tree of batched
  ``mul_mm`` -- compared with the scaled recursion in numpy (the plain one underflows to 0 on long sequences);
* max-plus (:data:`~instances.MAX_PLUS`) on the same matrices: the Viterbi score, compared with numpy's Viterbi.

Run: ``python -m examples.semirings [--nodes 40] [--steps 2000]`` (a second or two on a CPU).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
import torch
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path

from instances import MAX_PLUS
from training import Parser, run_cli
from training.cli import bounded, seed
from training.errors import UserError
from training.tasks.semirings import (
    forward,
    forward_by_products,
    plain_forward_numpy,
    random_hmm,
    sample,
    scaled_forward_numpy,
    shortest_paths,
    viterbi_numpy,
)

PROG = "python -m examples.semirings"


def run(argv: list[str] | None) -> None:
    p = Parser(prog=PROG, description=__doc__.split("\n")[0])
    dense = " (dense n x n matrices, cubed by Floyd-Warshall)"
    p.add_argument("--nodes", type=bounded(2, 2000, dense), default=40, help="graph nodes, 2..2000 (default 40)")
    p.add_argument("--density", type=float, default=0.08, help="probability of each directed edge (default 0.08)")
    p.add_argument("--states", type=bounded(1, 1000), default=6, help="HMM hidden states (default 6)")
    p.add_argument("--symbols", type=bounded(1, 1000), default=4, help="HMM observation symbols (default 4)")
    p.add_argument("--steps", type=bounded(2, 10**6), default=2000, help="observation sequence length (default 2000)")
    p.add_argument("--seed", type=seed, default=0)
    args = p.parse_args(argv)
    if not 0.0 <= args.density <= 1.0:
        raise UserError(f"--density must be in [0, 1], got {args.density}")
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    w = rng.integers(1, 10, size=(args.nodes, args.nodes)).astype(np.float64)
    w[rng.random(w.shape) >= args.density] = np.nan
    start = time.perf_counter()
    got = shortest_paths(w)
    seconds = time.perf_counter() - start
    want = shortest_path(csgraph_from_dense(w, null_value=np.nan), method="FW", directed=True)
    finite = np.isfinite(want)
    diff = float(np.abs(got[finite] - want[finite]).max())
    squarings = max(1, math.ceil(math.log2(args.nodes - 1)))
    print(f"all-pairs shortest paths, {args.nodes} nodes, {int(np.isfinite(w).sum())} edges: ", end="")
    print(f"{squarings} min-plus squarings (mul_mm) in {seconds:.3f} s")
    print(f"  vs scipy Floyd-Warshall: max |difference| = {diff:g} over {int(finite.sum())} reachable pairs; ", end="")
    print(f"the {int((~finite).sum())} unreachable ones are +inf in both: {bool((got[~finite] == np.inf).all())}")

    hmm = random_hmm(args.states, args.symbols, gen)
    obs = sample(hmm, args.steps, gen)
    o = obs.numpy()
    reference = scaled_forward_numpy(hmm, o)
    plain = plain_forward_numpy(hmm, o)
    print(f"HMM, {args.states} states, {args.symbols} symbols, {args.steps} observations: log p(o)")
    rows = [
        ("numpy scaled forward recursion (reference)", reference),
        ("log semiring, mul_vm step by step", float(forward(hmm, obs))),
        ("log semiring, balanced tree of mul_mm", float(forward_by_products(hmm, obs))),
        (f"numpy forward in probabilities (p = {plain:.3g})", math.log(plain) if plain > 0 else -math.inf),
    ]
    for name, value in rows:
        print(f"  {name:<48} {value:17.10f}   |difference| {abs(value - reference):.2g}")
    reference = viterbi_numpy(hmm, o)
    viterbi = float(forward(hmm, obs, MAX_PLUS))
    print("Viterbi: max over state paths of log p(o, path)")
    print(f"  {'numpy Viterbi recursion (reference)':<48} {reference:17.10f}")
    name = "max-plus semiring, mul_vm step by step"
    print(f"  {name:<48} {viterbi:17.10f}   |difference| {abs(viterbi - reference):.2g}")


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
