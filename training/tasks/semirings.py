"""One generic ``mul_mm``, three algorithms: shortest paths (min-plus), the HMM forward algorithm (log) and
Viterbi (max-plus), with the numpy recursions they are compared against.

``mul_mm`` is ``(A ⊗ B)_ik = ⊕_j A_ij ⊗ B_jk``; the ring decides what it computes. With the log step matrices
``M_t[i, j] = log P(s_t = j | s_{t-1} = i) + log P(o_t | s_t = j)`` of a hidden Markov model,
``α_t = α_{t-1} ⊗ M_t`` is the forward algorithm and ``counit α_T = log p(o)``; by associativity the product
``M_2 ⊗ ... ⊗ M_T`` can be taken as a balanced tree (:func:`forward_by_products`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from applicative import Field, Ring, Vector, counit, mul_mm, mul_vm
from instances import LOG, MIN_PLUS


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
