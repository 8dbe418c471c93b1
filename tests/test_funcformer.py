"""The Funcformer: structures and shapes, autograd, one layer against a hand-written numpy/torch
reference (metric contractions, the faithful softmax by ``numpy.polynomial.chebyshev.chebinterpolate``,
ReLU through point values), and resolution consistency of its linear parts."""

from __future__ import annotations

import math

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch
import torch.nn.functional as nnf

from applicative import Field, LinearAttention, Normalise, ScaledSoftmax, StructureError
from instances import Chebyshev, CoefficientSoftmax, Vector
from models import Funcformer, FuncformerConfig


class X(Chebyshev):
    pass


class Y(Chebyshev):
    pass


def _gram(n: int) -> np.ndarray:
    w = np.zeros((n, n))
    for k in range(n):
        for l in range(n):
            anti = C.chebint(C.chebmul(np.eye(n)[k], np.eye(n)[l]))
            w[k, l] = C.chebval(1.0, anti) - C.chebval(-1.0, anti)
    return w


@pytest.mark.parametrize("model", [Vector(8), Chebyshev(5)])
@pytest.mark.parametrize("normalise", [None, CoefficientSoftmax(0.5), LinearAttention(0.5)])
def test_structures_shapes_and_backward(model: Vector | Chebyshev, normalise: Normalise | None) -> None:
    heads = 2 if isinstance(model, Vector) else 1
    net = Funcformer(X(6), Y(7), model, Vector(10), FuncformerConfig(heads=heads, depth=2, normalise=normalise))
    u = Field(torch.randn(3, 6, 7), (X(6), Y(7)))
    out = net(u)
    assert out.structures == (X(6), Y(7)) and out.tensor.shape == (3, 6, 7)
    out.tensor.square().sum().backward()
    params = dict(net.named_parameters())
    assert {"position", "transformer.embed.weight", "transformer.unembed.weight"} <= set(params)
    assert len(params) == 3 + 2 * 12  # per layer: weight and bias of in/out projections, two linears, two norms
    missing = [name for name, p in params.items() if p.grad is None]
    assert not missing, f"no gradient reaches {missing}"
    zero = [name for name, p in params.items() if p.grad is not None and not bool(p.grad.any())]
    assert not zero, f"identically zero gradient for {zero}"
    assert all(bool(torch.isfinite(p.grad).all()) for p in params.values() if p.grad is not None)


def _faithful_softmax(p: np.ndarray) -> np.ndarray:
    """``e^{p(t)} / ∫ e^{p}``: interpolate at ``2n - 1`` first-kind points, keep ``n`` terms."""
    n = len(p)
    c = C.chebinterpolate(lambda t: np.exp(C.chebval(t, p)), 2 * n - 2)[:n]
    anti = C.chebint(c)
    return c / (C.chebval(1.0, anti) - C.chebval(-1.0, anti))


def _quadrature_attend(s_at, v: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``∫ e^{s(t)} v(t) dt / ∫ e^{s(t)} dt`` by quadrature on ``2n - 1`` first-kind points.

    ``s_at(t)`` gives the scores ``(queries, points)``; ``v`` ``(n, g)`` coefficients. The
    weights solve the moment equations ``Σ_j ρ_j T_k(t_j) = ∫ T_k`` (exact for degree < 2n - 1).
    """
    m = 2 * v.shape[0] - 1
    t = np.sort(C.chebpts1(m))
    moments = np.array([C.chebval(1.0, C.chebint(np.eye(m)[k], lbnd=-1)) for k in range(m)])
    rho = np.linalg.solve(C.chebvander(t, m - 1).T, moments)
    logits = s_at(t) + np.log(rho)
    att = np.exp(logits - logits.max(1, keepdims=True))
    return (att / att.sum(1, keepdims=True)) @ C.chebval(t, v).T


def _points(n: int) -> np.ndarray:
    """``chebvander`` at the ``n`` first-kind points: values of an ``n``-term series there."""
    return C.chebvander(np.cos(np.pi * (np.arange(n) + 0.5) / n), n - 1)


def _at_points(f, z: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``fmap f`` over the function along axis 0 (``n`` coefficients): values at ``n`` points, ``f``, back."""
    v = _points(z.shape[0])
    return np.linalg.solve(v, f(v @ z))


@pytest.mark.parametrize("kind", ["faithful", "window", "coefficient", "linear"])
def test_one_layer_matches_hand_written_reference(kind: str) -> None:
    """``window``: the faithful softmax with ``-β_h (x - t)²`` added to head ``h``'s scores, ``β = (3, 12)``."""
    torch.manual_seed(0)
    nx, ny, d, hid, heads = 6, 5, 8, 12, 2
    dk = d // heads
    normalise = {
        "faithful": ScaledSoftmax(1 / math.sqrt(dk)),
        "window": ScaledSoftmax(1 / math.sqrt(dk)),
        "coefficient": CoefficientSoftmax(1 / math.sqrt(dk)),
        "linear": LinearAttention(1 / math.sqrt(dk)),
    }[kind]
    window = 12.0 if kind == "window" else 0.0
    beta = [3.0, 12.0]
    xq = np.cos(np.pi * (np.arange(nx) + 0.5) / nx)  # the query points, in _points' order
    cfg = FuncformerConfig(heads=heads, depth=1, normalise=normalise, final_norm=True, window=window)
    net = Funcformer(X(nx), Y(ny), Vector(d), Vector(hid), cfg, dtype=torch.float64)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))  # non-trivial norms and biases
    u = torch.randn(2, nx, ny, dtype=torch.float64)
    got = net(Field(u, (X(nx), Y(ny)))).tensor.detach().numpy()

    sd = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    wx, wy = _gram(nx), _gram(ny)

    def ln(h: np.ndarray, name: str) -> np.ndarray:
        # layer norm over the channels at each point x (fmap over the outer Chebyshev axis)
        w, b = torch.tensor(sd[name + ".weight"]), torch.tensor(sd[name + ".bias"])
        return _at_points(lambda hv: nnf.layer_norm(torch.tensor(hv), (d,), w, b).numpy(), h)

    def aff(h: np.ndarray, w: str, b: str) -> np.ndarray:
        # an affine map at each point x: the bias is the constant function b (only T_0 carries it)
        return _at_points(lambda hv: hv @ sd[w].T + sd[b], h)

    pre = "transformer.layers.0."
    want = np.zeros_like(got)
    for b in range(2):
        h = u[b].numpy() @ wy @ sd["transformer.embed.weight"].T + sd["position"]  # (nx, d)
        a = ln(h, pre + "norm1")
        qkv = aff(a, pre + "self_attn.in_proj_weight", pre + "self_attn.in_proj_bias")
        q, k, v = qkv[:, :d], qkv[:, d : 2 * d], qkv[:, 2 * d :]
        heads_out = []
        for hh in range(heads):
            sl = slice(hh * dk, (hh + 1) * dk)

            def attend(
                qv: np.ndarray, sl: slice = sl, k: np.ndarray = k, v: np.ndarray = v, b: float = beta[hh]
            ) -> np.ndarray:
                # queries at the points x_j; keys and values stay functions of t (coefficients)
                s = (qv[:, sl] @ k[:, sl].T) / math.sqrt(dk)  # (point j, key coefficient)
                if kind == "faithful":  # the fused lowering: the quadrature of the faithful softmax
                    return _quadrature_attend(lambda t: qv[:, sl] @ C.chebval(t, k[:, sl]) / math.sqrt(dk), v[:, sl])
                if kind == "window":
                    return _quadrature_attend(
                        lambda t: qv[:, sl] @ C.chebval(t, k[:, sl]) / math.sqrt(dk) - b * (xq[:, None] - t) ** 2,
                        v[:, sl],
                    )
                if kind == "coefficient":
                    att = np.exp(s - s.max(1, keepdims=True))
                    att /= att.sum(1, keepdims=True)
                else:
                    att = s
                return att @ wx @ v[:, sl]  # ∫ A(x_j, t) v(t) dt

            heads_out.append(_at_points(attend, q))
        o = aff(np.concatenate(heads_out, 1), pre + "self_attn.out_proj.weight", pre + "self_attn.out_proj.bias")
        h = h + o
        a2 = ln(h, pre + "norm2")
        z = _at_points(lambda zv: np.maximum(zv, 0.0), aff(a2, pre + "linear1.weight", pre + "linear1.bias"))
        h = h + aff(z, pre + "linear2.weight", pre + "linear2.bias")
        h = ln(h, "transformer.norm")
        want[b] = h @ sd["transformer.unembed.weight"].T
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_linear_parts_are_resolution_consistent() -> None:
    """A model at 8 terms and the same model zero-padded to 12 terms define the same operator.

    Exact where every step is linear in the function: linear attention, the metric contractions, an
    identity activation, zero biases (``linear`` adds a bias to each coefficient row) and layer norms made
    linear (``eps = 1e16`` with weights ``1e8``: ``(h - mean) * 1e-8 * 1e8``, to relative ``var / 2e16``).
    A nonlinear step at the points of ``x`` (ReLU, a proper layer norm) depends on how many points there are.
    """
    torch.manual_seed(1)
    act = lambda t: t  # noqa: E731
    cfg = FuncformerConfig(heads=2, depth=2, normalise=LinearAttention(0.3), activation=act, eps=1e16)
    small = Funcformer(X(8), Y(8), Vector(8), Vector(16), cfg, dtype=torch.float64)
    big = Funcformer(X(12), Y(12), Vector(8), Vector(16), cfg, dtype=torch.float64)
    with torch.no_grad():
        for name, p in small.named_parameters():
            if name.endswith("bias") and "norm" not in name:
                p.zero_()
            if "norm" in name and name.endswith("weight"):
                p.fill_(1e8)
        for p, q in zip(small.parameters(), big.parameters(), strict=True):
            q.zero_()
            q[tuple(slice(0, s) for s in p.shape)] = p  # zero-pad the X / Y sized axes
    u = torch.randn(3, 8, 8, dtype=torch.float64)
    u12 = nnf.pad(u, (0, 4, 0, 4))
    out = small(Field(u, (X(8), Y(8)))).tensor.detach()
    out12 = big(Field(u12, (X(12), Y(12)))).tensor.detach()
    torch.testing.assert_close(out12[:, :8, :8], out, rtol=1e-10, atol=1e-12)
    tol = 1e-10 * float(out.abs().max())
    assert out12[:, 8:, :].abs().max() < tol and out12[:, :, 8:].abs().max() < tol


def test_without_positions_it_is_the_generic_transformer() -> None:
    net = Funcformer(X(6), Y(6), Chebyshev(4), Vector(8), FuncformerConfig(heads=1, depth=2, positional=False))
    u = Field(torch.randn(2, 6, 6), (X(6), Y(6)))
    torch.testing.assert_close(net(u).tensor, net.transformer(u).tensor, rtol=0, atol=0)


def test_a_window_needs_a_chebyshev_sequence_and_the_faithful_softmax() -> None:
    with pytest.raises(StructureError, match=r"window=4.0: Vector\(6\) declares no coordinates .* or use window=0"):
        Funcformer(Vector(6), Y(5), Vector(8), Vector(8), FuncformerConfig(heads=2, window=4.0))
    with pytest.raises(StructureError, match=r"window=4.0: X\(2\) cannot hold t² exactly, .* at least 3 terms"):
        Funcformer(X(2), Y(5), Vector(8), Vector(8), FuncformerConfig(heads=2, window=4.0))
    for normalise in (LinearAttention(0.5), CoefficientSoftmax(0.5)):
        with pytest.raises(StructureError, match=r"window=4.0: .* on a softmax over the sequence's points, got"):
            Funcformer(X(6), Y(5), Vector(8), Vector(8), FuncformerConfig(heads=2, normalise=normalise, window=4.0))


def test_attend_every_builds_attention_in_layers_0_k_2k_and_refuses_less_than_one() -> None:
    """``attend_every=k``: layers ``0, k, 2k, ...`` hold a self-attention, the others none (an MLP block alone)."""
    cfg = FuncformerConfig(heads=2, depth=7, attend_every=3, window=0.0)
    ff = Funcformer(Chebyshev(6), Chebyshev(5), Vector(8), Vector(16), cfg)
    assert [layer.self_attn is not None for layer in ff.transformer.layers] == [i % 3 == 0 for i in range(7)]
    with pytest.raises(StructureError, match="attend_every"):
        Funcformer(Chebyshev(6), Chebyshev(5), Vector(8), Vector(16), FuncformerConfig(heads=2, attend_every=0))
