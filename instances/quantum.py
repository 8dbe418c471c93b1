"""Quantum states: basis states ``{0, ..., n-1}`` weighed by the Born rule ``|ψ(ω)|²``.

A value on a :class:`Quantum` axis is a function on the basis states -- an
observable diagonal in that basis, such as ``Z_k``. The structure carries the
state's complex amplitudes ``ψ`` (shape ``(*batch, n)``, normalised:
``Σ_ω |ψ(ω)|² = 1``) and its measure is the Born rule:

* ``pure x`` is the constant observable ``x · 1``;
* ``zip_with f X Y`` is ``ω ↦ f(X(ω), Y(ω))`` (commuting diagonal observables);
* ``counit X = ⟨ψ| X |ψ⟩ = Σ_ω X(ω) |ψ(ω)|²``, the expectation value.

Several qubits. ``q`` qubits are *one* axis of ``n = 2^q`` basis states, not
``q`` nested axes of size 2: the measure of an entangled state (a Bell state's
``|ψ|² = (½, 0, 0, ½)``) is not a product of one measure per qubit, and a
nested axis would need exactly that. Basis state ``i`` is the bit string
``b_0 b_1 ... b_{q-1}`` with wire 0 the *most significant* bit,
``i = Σ_k b_k 2^{q-1-k}`` -- the ordering of PennyLane and TorchQuantum. So
``⟨Z_k⟩ = counit (pauli_z k) = Σ_i |ψ_i|² (1 - 2 b_k(i))``.

The structure writes only its contract (:class:`applicative.Structure`): the
amplitudes are its per-example data and ``log |ψ|²`` its measure; every kernel
is derived: the contraction ``a diag(|ψ|²) b``, attention over basis states
with the additive bias ``log |ψ|²``, heads with the factor ``diag(|ψ|)``. The
laws see the measure only, so a change of the amplitudes' phases is an
isomorphism (the law checker draws permutations of the basis together with
phases). As a :class:`~instances.Distribution`, per-example amplitudes line
up with the leading axes of the values; the amplitudes are copied at
construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from applicative import DataStructure, StructureError, per_example

#: how far ``Σ |ψ|²`` may be from 1 (float32 rounding of a few thousand terms)
NORM_TOLERANCE = 1e-5

_COMPLEX_OF = {torch.float16: torch.complex64, torch.bfloat16: torch.complex64, torch.float32: torch.complex64}


class Quantum(DataStructure):
    """``n`` basis states of a pure state with amplitudes ``ψ`` (shape ``(*batch, n)``, ``Σ |ψ|² = 1``).

    Real amplitudes are read as complex ones (``float32`` and narrower as
    ``complex64``; ``float64`` and integers as ``complex128``).

    Raises:
        StructureError: if there are no basis states, an amplitude is not
            finite, or the state is not normalised (within :data:`NORM_TOLERANCE`).
    """

    #: ``(*batch, n)`` the state's complex amplitudes ``ψ``
    amplitudes: Tensor = per_example(event_dims=1)

    def __init__(self, amplitudes: Tensor | Sequence[complex]) -> None:
        self.amplitudes = _checked_amplitudes(amplitudes)
        self.size = self.amplitudes.shape[-1]

    # ---- the contract: the measure ---------------------------------------------

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        """``log |ψ(ω)|² = 2 log |ψ(ω)|`` (``-inf`` for a basis state of amplitude zero)."""
        return 2.0 * self.amplitudes.abs().to(dtype=dtype, device=device).log()

    # ---- qubits -------------------------------------------------------------------

    @property
    def probabilities(self) -> Tensor:
        """The Born probabilities ``|ψ|²``, ``(*batch, n)`` (real)."""
        return self.amplitudes.abs().square()

    @property
    def wires(self) -> int:
        """The number of qubits ``q`` with ``n = 2^q`` basis states.

        Raises:
            StructureError: if the number of basis states is not a power of two.
        """
        q = self.size.bit_length() - 1
        if self.size != 1 << q:
            raise StructureError(
                f"{self!r} has {self.size} basis states, not a power of two, so it is not a register of qubits"
            )
        return q

    def pauli_z(self, wire: int, dtype: torch.dtype = torch.float64) -> Tensor:
        """The observable ``Z_wire`` on the basis states, ``(n,)``: ``1 - 2 b_wire(i)``.

        Wire 0 is the most significant bit of ``i``; the counit of ``Z_wire`` is ``⟨Z_wire⟩``.

        Raises:
            StructureError: if ``wire`` is not one of the wires ``0 .. q-1``.
        """
        q = self.wires
        if not 0 <= wire < q:
            raise StructureError(f"pauli_z: wire {wire} out of range for {q} qubits (wires 0..{q - 1})")
        bits = (torch.arange(self.size, device=self.amplitudes.device) >> (q - 1 - wire)) & 1
        return (1 - 2 * bits).to(dtype)

    def __repr__(self) -> str:
        if self.amplitudes.ndim == 1 and not self.amplitudes.is_meta:
            shown = ", ".join(f"{complex(v).real:.3g}{complex(v).imag:+.3g}j" for v in self.amplitudes)
            return f"Quantum([{shown}])"
        return f"Quantum(batch={tuple(self.amplitudes.shape[:-1])}, states={self.size})"


def _complex_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype.is_complex:
        return dtype
    if dtype == torch.bool:
        raise StructureError("Quantum: amplitudes must be numbers, got a bool tensor")
    return _COMPLEX_OF.get(dtype, torch.complex128)


def _checked_amplitudes(amplitudes: Tensor | Sequence[complex]) -> Tensor:
    """``amplitudes`` as a fresh complex tensor ``(*batch, n)``, finite and normalised; or a named error."""
    psi = amplitudes if isinstance(amplitudes, Tensor) else torch.tensor(list(amplitudes), dtype=torch.complex128)
    if psi.ndim < 1 or psi.shape[-1] < 1:
        raise StructureError(f"Quantum needs at least one basis state, got amplitudes of shape {tuple(psi.shape)}")
    psi = psi.detach().to(_complex_dtype(psi.dtype), copy=True)  # ours: the caller's may change
    if not bool(torch.isfinite(psi).all()):
        raise StructureError(f"Quantum: amplitudes must be finite, got {psi.tolist()}")
    norm = psi.abs().square().sum(-1)
    if not bool(torch.allclose(norm, torch.ones_like(norm), rtol=0.0, atol=NORM_TOLERANCE)):
        raise StructureError(
            f"Quantum: the state must be normalised (Σ |ψ|² = 1), got {norm.tolist()}; "
            "divide by psi.abs().square().sum(-1, keepdim=True).sqrt()"
        )
    return psi
