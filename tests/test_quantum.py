"""Quantum states: Born-rule expectations against a numpy state-vector simulation, the laws, complex layers.

References, independent of the library: a state-vector simulator written here in
numpy (Hadamard, CNOT, RX/RY/RZ; wire 0 the most significant bit, as in
PennyLane and TorchQuantum) whose ``⟨Z_k⟩ = Σ_i p_i (1 - 2 b_k(i))`` is read off
bit strings; closed forms (Bell states, ``⟨Z⟩ = cos θ`` after ``RY(θ)``); and a
complex-valued attention + MLP layer written out in plain torch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from applicative import (
    MLP,
    REAL,
    Causal,
    Field,
    MultiHeadAttention,
    ScaledSoftmax,
    StructureError,
    add,
    attention,
    counit,
    mul,
)
from applicative.laws import check_laws
from applicative.laws.__main__ import main
from instances import COMPLEX, Quantum, QuantumArbitrary, RealPartSoftmax, Vector

# ---- a numpy state-vector simulator (the reference) ------------------------------------

H = np.array([[1, 1], [1, -1]], dtype=complex) / math.sqrt(2)


def rx(t: float) -> np.ndarray:
    c, s = math.cos(t / 2), math.sin(t / 2)
    return np.array([[c, -1j * s], [-1j * s, c]])


def ry(t: float) -> np.ndarray:
    c, s = math.cos(t / 2), math.sin(t / 2)
    return np.array([[c, -s], [s, c]], dtype=complex)


def rz(t: float) -> np.ndarray:
    return np.diag([np.exp(-0.5j * t), np.exp(0.5j * t)])


def apply_one(state: np.ndarray, u: np.ndarray, wire: int) -> np.ndarray:
    """A one-qubit gate on ``wire`` of a state held as a ``(2,) * q`` array (axis k = wire k)."""
    return np.moveaxis(np.tensordot(u, state, axes=([1], [wire])), 0, wire)


def apply_cnot(state: np.ndarray, control: int, target: int) -> np.ndarray:
    """Flip ``target`` where ``control`` is 1."""
    out = state.copy()
    where: list[slice | int] = [slice(None)] * state.ndim
    where[control] = 1
    axis = target if target < control else target - 1  # the control axis is gone from the slice
    out[tuple(where)] = np.flip(state[tuple(where)], axis=axis)
    return out


Gate = tuple[str, int, int, float]  # name, wire, second wire (CNOT target), angle


def simulate(q: int, circuit: list[Gate]) -> np.ndarray:
    """The state after ``circuit`` from ``|0...0⟩``, flattened C-order: wire 0 is the most significant bit."""
    state = np.zeros((2,) * q, dtype=complex)
    state[(0,) * q] = 1.0
    for name, a, b, t in circuit:
        if name == "CNOT":
            state = apply_cnot(state, a, b)
        else:
            u = {"H": H, "RX": rx(t), "RY": ry(t), "RZ": rz(t)}[name]
            state = apply_one(state, u, a)
    return state.reshape(-1)


def z_expectations(psi: np.ndarray, q: int) -> np.ndarray:
    """``⟨Z_k⟩ = Σ_i |ψ_i|² (1 - 2 b_k(i))`` with ``b_k(i)`` the k-th character of i's q-bit string."""
    p = np.abs(psi) ** 2
    bit = np.array([[int(format(i, f"0{q}b")[k]) for k in range(q)] for i in range(len(psi))])
    z: np.ndarray = p @ (1 - 2 * bit)
    return z


@st.composite
def circuits(draw: st.DrawFn) -> tuple[int, list[Gate]]:
    q = draw(st.integers(1, 4))
    gates: list[Gate] = []
    for _ in range(draw(st.integers(0, 12))):
        name = draw(st.sampled_from(["H", "RX", "RY", "RZ"] + (["CNOT"] if q > 1 else [])))
        a = draw(st.integers(0, q - 1))
        b = draw(st.integers(0, max(q - 2, 0)))  # the CNOT target: any wire but a
        gates.append((name, a, b + (b >= a), draw(st.floats(-math.pi, math.pi))))
    return q, gates


def _z_field(s: Quantum) -> Field[Quantum, Vector]:
    """The observables ``Z_0 .. Z_{q-1}`` as one value ``Quantum x Vector(q)``."""
    q = s.wires
    return Field(torch.stack([s.pauli_z(k) for k in range(q)], -1), (s, Vector(q)), REAL)


# ---- the simulator itself, against closed forms ------------------------------------------


def test_simulator_orders_wires_most_significant_first() -> None:
    psi = simulate(2, [("RX", 0, 0, math.pi)])  # RX(π)|0⟩ = -i|1⟩ on wire 0: basis state |10⟩ = 2
    np.testing.assert_allclose(psi, [0, 0, -1j, 0], atol=1e-15)
    bell = simulate(2, [("H", 0, 0, 0.0), ("CNOT", 0, 1, 0.0)])
    np.testing.assert_allclose(bell, np.array([1, 0, 0, 1]) / math.sqrt(2), atol=1e-15)
    flipped = simulate(3, [("RX", 2, 0, math.pi), ("CNOT", 2, 0, 0.0)])  # |001⟩ then |101⟩ = 5
    assert np.argmax(np.abs(flipped)) == 5


# ---- Born-rule expectations through the counit ---------------------------------------------


@settings(max_examples=40)
@given(circuits())
def test_z_expectations_by_counit_match_the_simulation(c: tuple[int, list[Gate]]) -> None:
    q, gates = c
    psi = simulate(q, gates)
    got = counit(_z_field(Quantum(torch.from_numpy(psi)))).tensor.numpy()
    np.testing.assert_allclose(got, z_expectations(psi, q), atol=1e-12)


def test_product_state_gives_cosines_and_bell_state_correlates() -> None:
    theta = [0.3, -1.1, 2.0]
    s = Quantum(torch.from_numpy(simulate(3, [("RY", k, 0, t) for k, t in enumerate(theta)])))
    np.testing.assert_allclose(counit(_z_field(s)).tensor.numpy(), np.cos(theta), atol=1e-12)
    bell = Quantum(torch.from_numpy(simulate(2, [("H", 0, 0, 0.0), ("CNOT", 0, 1, 0.0)])))
    z0, z1 = (Field(bell.pauli_z(k), (bell,), REAL) for k in (0, 1))
    assert counit(z0).tensor.item() == pytest.approx(0.0, abs=1e-15)
    assert counit(mul(z0, z1)).tensor.item() == pytest.approx(1.0)  # ⟨Z_0 Z_1⟩ = 1: perfectly correlated


def test_per_example_states_give_per_example_expectations() -> None:
    rng = np.random.default_rng(0)
    q, batch = 3, 5
    states = []
    for _ in range(batch):
        gates: list[Gate] = [("H", k, 0, 0.0) for k in range(q)]
        gates += [(str(rng.choice(["RX", "RY", "RZ"])), int(rng.integers(q)), 0, float(rng.normal())) for _ in range(6)]
        gates += [("CNOT", 0, 1, 0.0), ("CNOT", 1, 2, 0.0), ("RY", 2, 0, float(rng.normal()))]
        states.append(simulate(q, gates))
    psi = np.stack(states)
    s = Quantum(torch.from_numpy(psi))  # amplitudes (5, 8)
    z = torch.stack([s.pauli_z(k) for k in range(q)], -1).expand(batch, 2**q, q)
    got = counit(Field(z, (s, Vector(q)), REAL)).tensor.numpy()  # (5, 3)
    np.testing.assert_allclose(got, np.stack([z_expectations(p, q) for p in psi]), atol=1e-12)


def test_complex_observable_values_over_the_complex_ring() -> None:
    rng = np.random.default_rng(1)
    psi = rng.normal(size=6) + 1j * rng.normal(size=6)
    psi /= np.linalg.norm(psi)
    x = rng.normal(size=(6, 2)) + 1j * rng.normal(size=(6, 2))
    s = Quantum(torch.from_numpy(psi))
    got = counit(Field(torch.from_numpy(x), (s, Vector(2)), COMPLEX)).tensor.numpy()
    np.testing.assert_allclose(got, (np.abs(psi) ** 2) @ x, rtol=1e-12)


# ---- laws, validation, capabilities -----------------------------------------------------


def test_quantum_is_lawful() -> None:
    report = check_laws(QuantumArbitrary(), max_examples=10)
    statuses = {r.law.name: r.status for r in report.results}
    assert statuses["keys/values invariant"] != "n/a"  # relabelling and re-phasing basis states
    assert statuses["fused = generic (S keys)"] != "n/a"


def test_command_line_prints_the_quantum_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instances:Quantum", "--examples", "3"]) == 0
    assert "Laws of QuantumArbitrary() over Real()" in capsys.readouterr().out


@pytest.mark.parametrize(
    "amplitudes",
    [[], [0.6, 0.6], [complex("nan"), 1.0], [float("inf"), 0.0], [0.0, 0.0]],
    ids=["empty", "unnormalised", "nan", "inf", "zero"],
)
def test_invalid_states_are_rejected(amplitudes: list[complex]) -> None:
    with pytest.raises(StructureError, match="Quantum"):
        Quantum(amplitudes)


def test_bool_amplitudes_and_bad_wires_are_rejected() -> None:
    with pytest.raises(StructureError, match="bool"):
        Quantum(torch.tensor([True, False]))
    with pytest.raises(StructureError, match="not a power of two"):
        Quantum([0.6, 0.8, 0.0]).pauli_z(0)
    with pytest.raises(StructureError, match="out of range"):
        Quantum([0.6, 0.8]).pauli_z(1)


def test_amplitudes_are_copied_and_real_ones_made_complex() -> None:
    psi = torch.tensor([0.6, 0.8], dtype=torch.float32)
    s = Quantum(psi)
    psi[0] = 7.0
    assert s.amplitudes.dtype == torch.complex64 and s.amplitudes[0].real.item() == pytest.approx(0.6)
    torch.testing.assert_close(s.probabilities, torch.tensor([0.36, 0.64]))


def test_per_example_amplitudes_index_concatenate_and_flatten_as_tensors() -> None:
    s = Quantum(torch.tensor([[0.6, 0.8j], [1.0, 0.0]], dtype=torch.complex128))
    leaves, spec = pytree.tree_flatten(s)
    assert len(leaves) == 1 and pytree.tree_unflatten(leaves, spec).equals(s)
    assert s.index_batch(1).equals(Quantum([1.0, 0.0]))
    both = Quantum.concat([s, s])
    assert both.batch_shape == (4,) and torch.equal(both.amplitudes[2:], s.amplitudes)


# ---- a complex-valued Transformer layer ----------------------------------------------------


def crelu(z: Tensor) -> Tensor:
    """ReLU on the real and imaginary parts."""
    return torch.complex(torch.relu(z.real), torch.relu(z.imag))


def _reference_layer(mha: MultiHeadAttention[Vector], ff: MLP[Vector, Vector], x: Tensor, log_w: Tensor) -> Tensor:
    """``h = x + attention(x)``, ``h + W2 crelu(W1 h + b1) + b2`` in plain torch; ``x`` is ``(B, n, d)``."""
    heads, k = mha.heads, mha.key.size
    assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
    qkv = x @ mha.in_proj_weight.T + mha.in_proj_bias
    b, n = x.shape[:2]
    q, kk, v = (t.reshape(b, n, heads, k).transpose(1, 2) for t in torch.split(qkv, heads * k, -1))  # (B, h, n, k)
    scores = (q @ kk.transpose(-1, -2)) / math.sqrt(k)  # bilinear, no conjugate: Σ_c q_ic k_jc
    w = torch.softmax(scores.real + log_w[:, None, None, :], -1).to(x.dtype)  # keys weighed by the measure
    o = (w @ v).transpose(1, 2).flatten(-2)  # (B, n, h k)
    h = x + o @ mha.out_proj.weight.T + mha.out_proj.bias
    l1, l2 = ff.linear1, ff.linear2
    assert l1.bias is not None and l2.bias is not None
    out: Tensor = h + crelu(h @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias
    return out


@pytest.mark.parametrize("sequence", ["vector", "quantum"])
def test_complex_attention_layer_matches_a_torch_reference(sequence: str) -> None:
    torch.manual_seed(0)
    batch, n, model, key, heads = 3, 8, Vector(6), Vector(3), 2
    normalise = RealPartSoftmax(1 / math.sqrt(3))
    mha = MultiHeadAttention(model, key, key, heads, normalise, ring=COMPLEX, dtype=torch.complex128)
    ff = MLP(model, Vector(10), model, crelu, ring=COMPLEX, dtype=torch.complex128)
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    x = torch.randn(batch, n, model.size, dtype=torch.complex128)
    if sequence == "vector":
        s: Vector | Quantum = Vector(n)
        log_w = torch.zeros(batch, n, dtype=torch.float64)
    else:
        psi = torch.randn(batch, n, dtype=torch.complex128)
        psi[:, 0] = 0.0  # a basis state of amplitude zero is never attended to
        s = Quantum(psi / psi.abs().square().sum(-1, keepdim=True).sqrt())
        log_w = s.log_measure(torch.float64, torch.device("cpu"))
    f = Field(x, (s, model), COMPLEX)
    h = add(f, mha(f))
    out = add(h, ff(h))
    torch.testing.assert_close(out.tensor, _reference_layer(mha, ff, x, log_w), rtol=1e-12, atol=1e-12)
    torch.autograd.backward(out.tensor.abs().square().sum())  # complex autograd runs through every part
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in mha.parameters())


def test_causal_complex_attention_matches_a_torch_reference() -> None:
    torch.manual_seed(1)
    n, h = 5, Vector(3)
    q, k = (torch.randn(n, 3, dtype=torch.complex128) for _ in range(2))
    v = torch.randn(n, 2, dtype=torch.complex128)
    fields = (Field(t, (Vector(n), s), COMPLEX) for t, s in ((q, h), (k, h), (v, Vector(2))))
    got = attention(Causal(RealPartSoftmax(0.5)), *fields).tensor
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    w = torch.softmax((0.5 * (q @ k.T)).real.masked_fill(future, -math.inf), -1)
    torch.testing.assert_close(got, w.to(v.dtype) @ v, rtol=1e-12, atol=1e-12)


def test_softmax_attention_refuses_the_complex_ring() -> None:
    with pytest.raises(StructureError, match="real ring"):
        MultiHeadAttention(Vector(4), Vector(2), Vector(2), 2, ScaledSoftmax(0.5), ring=COMPLEX)
