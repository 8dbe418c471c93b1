"""Quantum states with closed-form expectations, as :class:`~instances.Quantum` structures, and their observables.

* the product state ``RY(θ_0) ⊗ ... ⊗ RY(θ_{q-1}) |0...0⟩``: ``⟨Z_k⟩ = cos θ_k``;
* the GHZ state ``(|0...0⟩ + e^{iφ} |1...1⟩) / √2``: ``⟨Z_k⟩ = 0``, ``⟨Z_0 Z_k⟩ = 1``.

Wire 0 is the most significant bit of a basis state's index, as in PennyLane and TorchQuantum.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from applicative import REAL, Field, Vector
from instances import Quantum

#: the most amplitudes (batch x 2^qubits) one run holds: 2^22 x 4 complex128 values = 256 MiB
MAX_VALUES = 2**22


def product_state(theta: Tensor) -> Quantum:
    """``⊗_k RY(θ_k)|0⟩`` for angles ``(*batch, q)``: amplitudes ``Π_k (cos θ_k/2 or sin θ_k/2)``, wire 0 first."""
    psi = torch.ones(*theta.shape[:-1], 1, dtype=torch.float64)
    for k in range(theta.shape[-1]):
        qubit = torch.stack([torch.cos(theta[..., k] / 2), torch.sin(theta[..., k] / 2)], -1)  # (*batch, 2)
        psi = (psi.unsqueeze(-1) * qubit.unsqueeze(-2)).flatten(-2)  # wire k is the next less significant bit
    return Quantum(psi)


def ghz_state(phi: Tensor, qubits: int) -> Quantum:
    """``(|0...0⟩ + e^{iφ}|1...1⟩)/√2`` for phases ``(*batch,)``."""
    psi = torch.zeros(*phi.shape, 2**qubits, dtype=torch.complex128)
    psi[..., 0] = 1 / math.sqrt(2)
    psi[..., -1] = torch.polar(torch.full_like(phi, 1 / math.sqrt(2)), phi)
    return Quantum(psi)


def observables(s: Quantum, batch: int) -> Field[Quantum, Vector]:
    """``Z_0, ..., Z_{q-1}`` as one value ``Quantum x Vector(q)`` for each of ``batch`` examples."""
    z = torch.stack([s.pauli_z(k) for k in range(s.wires)], -1)  # (2^q, q)
    return Field(z.expand(batch, *z.shape), (s, Vector(s.wires)), REAL)
