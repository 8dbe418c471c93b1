"""Quantum states as a structure: Born-rule expectations by the counit, complex attention over basis states.

A :class:`~instances.Quantum` axis holds one value per basis state of ``q`` qubits
(``2^q`` states, wire 0 the most significant bit, as in PennyLane/TorchQuantum) and
weighs it by ``|ψ|²``. Two states with closed-form expectations, per example:

* the product state ``RY(θ_0) ⊗ ... ⊗ RY(θ_{q-1}) |0...0⟩``: ``⟨Z_k⟩ = cos θ_k``;
* the GHZ state ``(|0...0⟩ + e^{iφ} |1...1⟩) / √2``: ``⟨Z_k⟩ = 0``, ``⟨Z_0 Z_k⟩ = 1``.

``⟨Z_k⟩`` is the counit of the observable ``Z_k`` (``pauli_z``); ``⟨Z_0 Z_k⟩`` the counit
of the pointwise product. Then a complex-valued attention layer (over the complex
ring, normalised by :class:`~instances.RealPartSoftmax`) runs over the basis states
of the GHZ state: keys of probability zero carry no weight, so changing the values
there leaves the output unchanged.

Run: ``python -m examples.quantum [--qubits 3] [--batch 4]`` (about a second on a CPU).
"""

from __future__ import annotations

import math
import sys

import torch

from applicative import Field, MultiHeadAttention, Vector, counit, mul
from instances import COMPLEX, RealPartSoftmax
from training import Parser, run_cli
from training.cli import bounded, seed
from training.errors import UserError
from training.tasks.quantum import MAX_VALUES, ghz_state, observables, product_state

PROG = "python -m examples.quantum"


def run(argv: list[str] | None) -> None:
    p = Parser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--qubits", type=bounded(1, 12), default=3, help="number of qubits, 1..12 (default 3)")
    p.add_argument("--batch", type=bounded(1, 2**16), default=4, help="states per example batch (default 4)")
    p.add_argument("--seed", type=seed, default=0)
    args = p.parse_args(argv)
    if args.batch * 2**args.qubits > MAX_VALUES:  # the attention input: batch x 2^q x 4 complex numbers
        raise UserError(
            f"--batch {args.batch} with --qubits {args.qubits}: batch x 2^qubits must be at most {MAX_VALUES} "
            f"(memory); use --batch {max(1, MAX_VALUES >> args.qubits)} or fewer"
        )
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(args.seed)
    q, b = args.qubits, args.batch

    theta = (torch.rand(b, q, generator=gen, dtype=torch.float64) * 2 - 1) * math.pi
    s = product_state(theta)
    z = counit(observables(s, b)).tensor  # (b, q)
    print(f"product states RY(θ) on {q} qubits, {b} per batch: ⟨Z_k⟩ by the counit vs cos θ_k")
    print(f"  first example: {[round(float(v), 6) for v in z[0]]}  vs {[round(float(v), 6) for v in theta[0].cos()]}")
    print(f"  max |difference| over the batch: {float((z - theta.cos()).abs().max()):.2g}")

    phi = (torch.rand(b, generator=gen, dtype=torch.float64) * 2 - 1) * math.pi
    g = ghz_state(phi, q)
    zg = observables(g, b)
    z0 = zg.with_tensor(zg.tensor[..., :1].expand_as(zg.tensor))  # Z_0 in every column
    corr = counit(mul(z0, zg)).tensor  # ⟨Z_0 Z_k⟩
    print(f"GHZ states with random phases: max |⟨Z_k⟩| = {float(counit(zg).tensor.abs().max()):.2g} (want 0), ", end="")
    print(f"max |⟨Z_0 Z_k⟩ - 1| = {float((corr - 1).abs().max()):.2g} (want 0)")

    model = Vector(4)
    normalise = RealPartSoftmax(1 / math.sqrt(2))
    layer = MultiHeadAttention(model, Vector(2), Vector(2), 2, normalise, ring=COMPLEX, dtype=torch.complex128)
    x = torch.randn(b, 2**q, model.size, generator=gen, dtype=torch.complex128)
    changed = x.clone()
    changed[:, 1:-1] = 100 * changed[:, 1:-1] + 1j  # the GHZ state gives these basis states probability zero
    with torch.no_grad():
        out, out_changed = (layer(Field(t, (g, model), COMPLEX)).tensor for t in (x, changed))
    print(f"complex attention over the {2**q} basis states of GHZ states ({b} examples), output {tuple(out.shape)}:")
    # the queries at the two supported states are unchanged, and every key they see is either unchanged or weightless
    moved = float((out[:, [0, -1]] - out_changed[:, [0, -1]]).abs().max())
    print(f"  changing the inputs at states of probability zero moves the outputs at |0..0⟩ and |1..1⟩ by {moved:.2g}")


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
