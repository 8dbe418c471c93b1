"""The learned circular convolution in the Funcformer's layers: ``instances.fourier.convolve`` against numpy's own
discrete convolution of the sampled functions, the layer's convolution against a hand-written one, and where the
operator model puts it (periodic axes only; old checkpoints without one)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from applicative import Field, StructureError, add, mul_mmt
from instances import Chebyshev, Fourier, Vector
from instances.axes import Axis
from instances.fourier import coefficients, convolve, multiply, multiply_plane, values
from models import Funcformer, FuncformerConfig
from models.diagram import diagram
from models.operator import OperatorModel
from training.tasks import operator
from training.tasks.operator.model import config_of, record

PERIODIC = Axis("periodic")
BOUNDED = Axis("nodes", boundary="zero")
SIZES = {"modes": 9, "width": 8, "hidden": 16, "heads": 2, "depth": 2, "channels": 3}


def circular(kernel: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(1/m) Σ_j κ(θ_i - φ_j) u(φ_j)`` on ``m`` equally spaced points: exact for trigonometric polynomials."""
    m = len(u)
    return np.array([np.mean([kernel[(i - j) % m] * u[j] for j in range(m)]) for i in range(m)])


@pytest.mark.parametrize("n", [1, 3, 9])
def test_convolve_is_numpys_circular_convolution_of_the_sampled_functions(n: int) -> None:
    rng = np.random.default_rng(n)
    k, u = torch.from_numpy(rng.standard_normal(n)), torch.from_numpy(rng.standard_normal((4, n)))
    m = 2 * n + 5
    got = values(convolve(k, u), points=m).numpy()
    kv, uv = values(k, points=m).numpy(), values(u, points=m).numpy()
    np.testing.assert_allclose(got, np.stack([circular(kv, row) for row in uv]), atol=1e-12)


def test_convolve_along_another_axis_broadcasts_and_commutes_with_shifts() -> None:
    rng = np.random.default_rng(0)
    k = torch.from_numpy(rng.standard_normal((7, 5)))  # a kernel per channel: (|X|, channels)
    u = torch.from_numpy(rng.standard_normal((2, 7, 5)))
    got = convolve(k, u, dim=-2)
    for c in range(5):
        np.testing.assert_allclose(got[:, :, c].numpy(), convolve(k[:, c], u[:, :, c]).numpy(), atol=1e-13)
    # the input moved by three of 16 grid steps: the output moves by as much
    m = 16
    moved = coefficients(torch.roll(values(u[0, :, 0], points=m), 3), size=7)
    want = torch.roll(values(convolve(k[:, 0], u[0, :, 0]), points=m), 3)
    np.testing.assert_allclose(values(convolve(k[:, 0], moved), points=m).numpy(), want.numpy(), atol=1e-12)


def test_a_multiplier_scales_and_turns_each_frequency_as_numpys_fft_does() -> None:
    """``multiply`` against numpy's spectrum: the coefficient of ``e^{ikθ}`` times ``α_k - i β_k``."""
    rng = np.random.default_rng(2)
    n, grid = 9, 32
    m, u = rng.standard_normal(n), rng.standard_normal(n)
    spectrum = np.fft.rfft(values(torch.from_numpy(u), points=grid).numpy())
    factor = np.concatenate([[m[0]], m[1::2] - 1j * m[2::2]])
    want = np.fft.irfft(spectrum[: len(factor)] * factor, n=grid)
    got = values(multiply(torch.from_numpy(m), torch.from_numpy(u)), points=grid).numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    kernel = torch.from_numpy(np.concatenate([m[:1], 2 * m[1:]]))
    np.testing.assert_allclose(
        convolve(kernel, torch.from_numpy(u)).numpy(),
        multiply(torch.from_numpy(m), torch.from_numpy(u)).numpy(),
        atol=1e-14,
    )


def test_a_plane_multiplier_is_a_hand_written_circular_convolution_of_the_plane() -> None:
    """``multiply_plane`` with the multiplier of a kernel ``κ`` (its DFT on the ``n_x × n_y`` points, over ``n_x n_y``)
    against ``(1 / n_x n_y) Σ κ(θ_i - θ_p, φ_j - φ_q) u(θ_p, φ_q)`` written out: exact for series of these sizes."""
    rng = np.random.default_rng(4)
    nx, ny = 5, 7
    kappa, u = rng.standard_normal((nx, ny)), rng.standard_normal((3, nx, ny))
    kv = values(values(torch.from_numpy(kappa), 0), 1).numpy()
    uv = values(values(torch.from_numpy(u), 1), 2).numpy()
    want = np.zeros_like(uv)
    for i, j, p, q in np.ndindex(nx, ny, nx, ny):
        want[:, i, j] += kv[(i - p) % nx, (j - q) % ny] * uv[:, p, q] / (nx * ny)
    m = torch.fft.rfft2(torch.from_numpy(kv)) / (nx * ny)
    got = values(values(multiply_plane(m, torch.from_numpy(u)), 1), 2).numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    # channels last, the plane at dims (1, 2): one multiplier per channel
    per = torch.stack([m, 2 * m])
    both = multiply_plane(per, torch.from_numpy(np.stack([u, u], -1)), dims=(1, 2))
    np.testing.assert_allclose(both[..., 1].numpy(), 2 * both[..., 0].numpy(), atol=1e-12)
    np.testing.assert_allclose(both[..., 0].numpy(), coefficients(coefficients(torch.from_numpy(got), 1), 2).numpy(),
                               atol=1e-12)  # fmt: skip


def test_a_plane_multiplier_that_factors_is_one_along_each_axis_and_one_that_does_not_inverts_the_laplacian() -> None:
    rng = np.random.default_rng(5)
    nx, ny = 9, 7
    p, q, u = rng.standard_normal(nx), rng.standard_normal(ny), torch.from_numpy(rng.standard_normal((nx, ny)))
    complex_of = lambda w: np.concatenate([w[:1], w[1::2] - 1j * w[2::2]])  # noqa: E731  k = 0..K
    pk, ql = complex_of(p), complex_of(q)
    full = np.concatenate([pk, np.conj(pk[:0:-1])])  # fftfreq's order: 0..K, then -K..-1
    got = multiply_plane(torch.from_numpy(np.outer(full, ql)), u)
    want = multiply(torch.from_numpy(q), multiply(torch.from_numpy(p)[:, None], u, 0), -1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    # -1 / (k² + l²), zero at (0, 0): the inverse of ∂θθ + ∂φφ on functions of mean zero, which does not factor
    t = torch.linspace(0, 2 * math.pi, 33, dtype=torch.float64)[:-1]
    th, ph = torch.meshgrid(t, t, indexing="ij")
    f = lambda a, b: torch.sin(a) * torch.cos(2 * b) + torch.cos(3 * a + b)  # noqa: E731
    g = lambda a, b: -torch.sin(a) * torch.cos(2 * b) / 5 - torch.cos(3 * a + b) / 10  # noqa: E731
    c = coefficients(coefficients(f(th, ph), 0, nx), 1, ny)
    k = torch.fft.fftfreq(nx, 1 / nx, dtype=torch.float64)[:, None]
    ll = torch.arange(ny // 2 + 1, dtype=torch.float64)
    inverse = torch.where(k**2 + ll**2 > 0, -1 / (k**2 + ll**2).clamp_min(1), 0).to(torch.complex128)
    out = values(values(multiply_plane(inverse, c), 0, 32), 1, 32)
    np.testing.assert_allclose(out.numpy(), g(th, ph).numpy(), atol=1e-12)


def test_a_plane_multiplier_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(StructureError, match=r"a multiplier \(5, 3\) .* pass a complex one ending in \(5, 4\)"):
        multiply_plane(torch.zeros(5, 3, dtype=torch.complex64), torch.zeros(5, 7))
    with pytest.raises(StructureError, match=r"pass a complex one"):
        multiply_plane(torch.zeros(5, 4), torch.zeros(5, 7))


def test_convolve_refuses_mismatched_or_even_series() -> None:
    with pytest.raises(StructureError, match=r"a kernel of 5 coefficients against a series of 7; pass 7"):
        convolve(torch.zeros(5), torch.zeros(7))
    with pytest.raises(StructureError, match=r"odd number of coefficients"):
        convolve(torch.zeros(6), torch.zeros(6))
    with pytest.raises(StructureError, match=r"a multiplier of 3 terms against a series of 5; pass 5"):
        multiply(torch.zeros(3), torch.zeros(5))


def _funcformer(convolution: bool, depth: int = 1) -> Funcformer[Fourier, Vector, Vector]:
    torch.manual_seed(0)
    config = FuncformerConfig(heads=2, depth=depth, convolution=convolution)
    return Funcformer(Fourier(9), Vector(2), Vector(4), Vector(8), config, dtype=torch.float64)


def test_a_layer_adds_its_input_convolved_per_channel() -> None:
    """Depth one: the model with kernels minus the model without is the unembedding of ``κ ⋆ h``, ``h`` the embedded
    input plus the position, with the convolution computed by numpy on the sampled functions (the weights are ``κ``'s
    Fourier multiplier)."""
    on, off = _funcformer(True), _funcformer(False)
    assert on.convolutions is not None and off.convolutions is None
    off.load_state_dict({k: v for k, v in on.state_dict().items() if k != "convolutions"})
    u = Field(torch.randn(3, 9, 2, dtype=torch.float64), (Fourier(9), Vector(2)))
    assert torch.equal(on(u).tensor, off(u).tensor)  # the kernels start at zero
    with torch.no_grad():
        on.convolutions.normal_()
    t = on.transformer
    h = add(mul_mmt(t.embed.weight_field, u), Field(on.position.expand(3, 9, 4), (Fourier(9), Vector(4))))  # type: ignore[union-attr]
    m = 21
    kernel = on.convolutions[0].detach().clone()
    kernel[1:] *= 2  # the weights are the multiplier m: the kernel is (m_0, 2α_1, 2β_1, ...)
    kv, hv = values(kernel, -2, m).numpy(), values(h.tensor.detach(), -2, m).numpy()
    conv = np.stack([np.stack([circular(kv[:, c], hv[b, :, c]) for c in range(4)], -1) for b in range(3)])
    ch = Field(coefficients(torch.from_numpy(conv), -2, 9), (Fourier(9), Vector(4)))
    want = off(u).tensor + mul_mmt(t.unembed.weight_field, ch).tensor
    torch.testing.assert_close(on(u).tensor, want, rtol=1e-10, atol=1e-12)


def test_gradients_reach_every_layers_kernel() -> None:
    model = _funcformer(True, depth=3)
    with torch.no_grad():
        model.convolutions.normal_(std=0.1)  # type: ignore[union-attr]
    u = Field(torch.randn(2, 9, 2, dtype=torch.float64), (Fourier(9), Vector(2)))
    model(u).tensor.pow(2).sum().backward()
    grad = model.convolutions.grad  # type: ignore[union-attr]
    assert grad is not None and all(bool(g.abs().sum() > 0) for g in grad)


def test_a_convolution_needs_a_periodic_sequence() -> None:
    with pytest.raises(StructureError, match=r"convolution: a circular convolution along .* not a Fourier series"):
        Funcformer(Chebyshev(9), Vector(2), Vector(4), Vector(8), FuncformerConfig(heads=2, convolution=True))


@pytest.mark.parametrize(
    ("axes", "along"), [([PERIODIC], [True]), ([BOUNDED], [False]), ([PERIODIC, BOUNDED], [True, False])]
)
def test_the_operator_model_convolves_along_periodic_axes_only(axes: list[Axis], along: list[bool]) -> None:
    torch.manual_seed(0)
    on = OperatorModel(axes, 2, 1, convolution=True, dtype=torch.float64, **SIZES)  # type: ignore[arg-type]
    torch.manual_seed(0)
    off = OperatorModel(axes, 2, 1, convolution=False, dtype=torch.float64, **SIZES)  # type: ignore[arg-type]
    funcformers = [on.along.x] + ([on.along.y] if on.along.y is not None else [])
    assert [f.convolutions is not None for f in funcformers] == along
    extra = sum(SIZES["depth"] * s.size * SIZES["width"] for s, a in zip(on.domain, along, strict=True) if a)
    assert sum(p.numel() for p in on.parameters()) == sum(p.numel() for p in off.parameters()) + extra
    x = torch.randn(2, *([12] * len(axes)), 2, dtype=torch.float64)
    assert torch.equal(on(x), off(x))  # untrained, the convolution adds zero


def test_the_config_turns_it_on_and_a_checkpoint_without_the_field_has_none() -> None:
    shape = operator.Shape((PERIODIC,), 2, 1)
    config = operator.PRESETS["tiny"]
    assert config.convolution
    assert operator.build(config, shape).along.x.convolutions is not None
    assert operator.build(config.replace(convolution=False), shape).along.x.convolutions is None
    old = {k: v for k, v in record(config, shape).items() if k != "convolution"}
    assert not config_of(old).convolution
    assert config_of(record(config, shape)).convolution


def test_the_diagram_draws_each_layers_kernel() -> None:
    """The tube diagram's parameters are the model's, the kernels' slices included, one step after each layer."""
    model = _funcformer(True, depth=3)
    d = diagram(model, None)
    drawn: dict[str, int] = {}
    for p in d.parameters:
        drawn[p.name] = drawn.get(p.name, 0) + math.prod(s.size for s in p.tubes)
    assert drawn == {k: v.numel() for k, v in model.named_parameters()}
    assert [s.label for s in d.steps if s.label.startswith("+ κ")] == ["+ κ_0 ⋆ h", "+ κ_1 ⋆ h", "+ κ_2 ⋆ h"]


@pytest.mark.parametrize(("c_out", "want"), [(1, 4), (4, 4), (16, 16), (100, 64)])
def test_the_default_hands_along_as_many_functions_as_outputs(c_out: int, want: int) -> None:
    """``channels = 0``: the head mixes at least as many functions as there are outputs (no rank bound), at least 4."""
    config = operator.PRESETS["default"].replace(modes=5, width=8, hidden=8, heads=2, depth=1, reader_width=8)
    model = operator.build(config, operator.Shape((PERIODIC,), 1, c_out))
    assert model.channels == want and model.collapse.out.size == want
    assert operator.build(config.replace(channels=3), operator.Shape((PERIODIC,), 1, c_out)).channels == 3
