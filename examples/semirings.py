"""Semirings at work: one generic ``mul_mm`` is shortest paths, the HMM forward algorithm and Viterbi.

``mul_mm`` is written once, ``(A ⊗ B)_ik = ⊕_j A_ij ⊗ B_jk``; the ring decides what it computes:

* min-plus (:data:`~instances.MIN_PLUS`): ``min_j A_ij + B_jk``. Squaring the adjacency
  matrix (``0`` on the diagonal, ``+inf`` for no edge) ``⌈log₂(n-1)⌉`` times gives the
  lengths of all shortest paths -- compared with ``scipy.sparse.csgraph`` (Floyd--Warshall).
* log (:data:`~instances.LOG`): ``log Σ_j e^{A_ij + B_jk}``. With the log step matrices
  ``M_t[i, j] = log P(s_t = j | s_{t-1} = i) + log P(o_t | s_t = j)`` of a hidden Markov
  model, ``α_t = α_{t-1} ⊗ M_t`` is the forward algorithm and ``counit α_T = log p(o)``;
  by associativity the product ``M_1 ⊗ ... ⊗ M_T`` can be taken as a balanced tree
  (``log₂ T`` batched ``mul_mm`` calls). Compared with the scaled forward recursion in
  numpy; the same recursion in plain probabilities underflows to 0 for long sequences.
* max-plus (:data:`~instances.MAX_PLUS`) on the same matrices: the Viterbi score
  ``max over state paths of log p(o, path)``, compared with a numpy Viterbi.

Run: ``python -m examples.semirings [--nodes 40] [--steps 2000]`` (a second or two on a CPU).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path
from torch import Tensor

from applicative import Field, Ring, Vector, counit, mul_mm, mul_vm
from instances import LOG, MAX_PLUS, MIN_PLUS
from training import Parser, run_cli
from training.cli import bounded, seed
from training.errors import UserError

PROG = "python -m examples.semirings"


def identity(n: int, ring: Ring, like: Tensor) -> Tensor:
    """The ring's ``n x n`` identity matrix: ``one`` on the diagonal, ``zero`` elsewhere."""
    eye = torch.eye(n, dtype=torch.bool, device=like.device)
    base = like.new_empty(n, n)
    return torch.where(eye, ring.one(base), ring.zero(base))


def shortest_paths(w: np.ndarray) -> np.ndarray:
    """All-pairs shortest path lengths by repeated min-plus squaring; ``w`` ``(n, n)``, ``nan`` = no edge."""
    n = len(w)
    t = torch.from_numpy(w)
    t = torch.where(torch.isnan(t), MIN_PLUS.zero(t), t)
    t = torch.minimum(t, identity(n, MIN_PLUS, t))  # paths of length 0
    d = Field(t, (Vector(n), Vector(n)), MIN_PLUS)
    for _ in range(max(1, math.ceil(math.log2(max(n - 1, 1))))):
        d = mul_mm(d, d)  # paths of at most 2^k edges
    return d.tensor.numpy()


@dataclass(frozen=True)
class HMM:
    """A hidden Markov model in log probabilities: initial ``(S,)``, transition ``(S, S)``, emission ``(S, V)``."""

    log_initial: Tensor
    log_transition: Tensor
    log_emission: Tensor


def random_hmm(states: int, symbols: int, gen: torch.Generator) -> HMM:
    """Random stochastic rows (Dirichlet(1)), float64."""

    def rows(*shape: int) -> Tensor:
        e = -torch.rand(*shape, generator=gen, dtype=torch.float64).log()  # Exp(1): normalised, Dirichlet(1)
        return (e / e.sum(-1, keepdim=True)).log()

    return HMM(rows(states), rows(states, states), rows(states, symbols))


def sample(hmm: HMM, steps: int, gen: torch.Generator) -> Tensor:
    """An observation sequence ``(steps,)`` drawn from ``hmm``."""
    s = int(torch.multinomial(hmm.log_initial.exp(), 1, generator=gen))
    obs = []
    for _ in range(steps):
        obs.append(int(torch.multinomial(hmm.log_emission[s].exp(), 1, generator=gen)))
        s = int(torch.multinomial(hmm.log_transition[s].exp(), 1, generator=gen))
    return torch.tensor(obs)


def step_matrices(hmm: HMM, obs: Tensor) -> tuple[Tensor, Tensor]:
    """``(α_1, M)``: ``α_1 = log π + log B[:, o_1]`` and ``M_t = log A + log B[:, o_t]`` for ``t = 2..T``.

    ``obs`` is ``(..., T)`` (any leading batch); ``α_1`` is ``(..., S)``, ``M`` is ``(..., T-1, S, S)``.
    """
    e = hmm.log_emission.T[obs]  # (..., T, S): log P(o_t | s)
    return hmm.log_initial + e[..., 0, :], hmm.log_transition + e[..., 1:, None, :]


def forward(hmm: HMM, obs: Tensor, ring: Ring = LOG) -> Tensor:
    """``counit (α_1 ⊗ M_2 ⊗ ... ⊗ M_T)`` step by step (``mul_vm``): ``log p(o)`` over LOG, Viterbi over MAX_PLUS."""
    a1, m = step_matrices(hmm, obs)
    state = Vector(hmm.log_initial.shape[-1])
    alpha = Field(a1, (state,), ring)
    for t in range(m.shape[-3]):
        alpha = mul_vm(alpha, Field(m[..., t, :, :], (state, state), ring))
    return counit(alpha).tensor


def forward_by_products(hmm: HMM, obs: Tensor, ring: Ring = LOG) -> Tensor:
    """The same value with ``M_2 ⊗ ... ⊗ M_T`` multiplied as a balanced tree: ``⌈log₂ T⌉`` batched ``mul_mm``."""
    a1, m = step_matrices(hmm, obs)
    s = a1.shape[-1]
    state = Vector(s)
    while m.shape[-3] > 1:
        if m.shape[-3] % 2:  # pad with the identity: an odd count pairs up
            eye = identity(s, ring, m).expand(*m.shape[:-3], 1, s, s)
            m = torch.cat([m, eye], -3)
        pairs = [Field(m[..., k::2, :, :], (state, state), ring) for k in (0, 1)]  # (..., T/2, S, S) each
        m = mul_mm(pairs[0], pairs[1]).tensor
    alpha = Field(a1, (state,), ring)
    if m.shape[-3] == 1:
        alpha = mul_vm(alpha, Field(m[..., 0, :, :], (state, state), ring))
    return counit(alpha).tensor


def scaled_forward_numpy(hmm: HMM, obs: np.ndarray) -> float:
    """``log p(o)`` by the forward recursion in probabilities, renormalised each step (``Σ log c_t``)."""
    pi, a, b = (np.exp(t.numpy()) for t in (hmm.log_initial, hmm.log_transition, hmm.log_emission))
    alpha, total = pi * b[:, obs[0]], 0.0
    for o in obs[1:]:
        c = alpha.sum()
        total += math.log(c)
        alpha = (alpha / c) @ a * b[:, o]
    return total + math.log(alpha.sum())


def plain_forward_numpy(hmm: HMM, obs: np.ndarray) -> float:
    """The textbook recursion ``α ← (α A) ∘ B[:, o]`` in float64 probabilities, without rescaling."""
    pi, a, b = (np.exp(t.numpy()) for t in (hmm.log_initial, hmm.log_transition, hmm.log_emission))
    alpha = pi * b[:, obs[0]]
    for o in obs[1:]:
        alpha = alpha @ a * b[:, o]
    return float(alpha.sum())


def viterbi_numpy(hmm: HMM, obs: np.ndarray) -> float:
    """``max over paths of log p(o, path)`` by the Viterbi recursion in numpy."""
    la, lb = hmm.log_transition.numpy(), hmm.log_emission.numpy()
    delta = hmm.log_initial.numpy() + lb[:, obs[0]]
    for o in obs[1:]:
        delta = (delta[:, None] + la).max(0) + lb[:, o]
    return float(delta.max())


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
