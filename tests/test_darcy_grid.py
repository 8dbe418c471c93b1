"""The Darcy grid route: the grid as a structure, the cross-attention reader, resolution.

References: closed-form integrals and numpy's trapezoid rule for the grid's measure; a plain-torch
re-computation of the reader (explicit trapezoid-weighted softmax, numpy's ``chebvander`` for point
values and coefficients) for the input route; numpy's ``chebval2d`` for the series at a finer grid.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch
import torch.nn.functional as nnf

from applicative import REAL, Field, Vector
from instances.chebyshev import points
from models.transformer import EncoderLayer
from operators.darcy import data
from operators.darcy.grid import Uniform, fourier, grid, trapezoid_weights
from operators.darcy.solver import DarcySolver
from training import ConfigError
from training.tasks.darcy.config import PRESETS, Config
from training.tasks.darcy.model import DarcyModel, GridReader, bubble_matrix, centred, grid_matrix, roughness
from training.tasks.darcy.train import objective, relative_sq, train


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _on_grid(f: object, p: int) -> torch.Tensor:
    t = np.linspace(-1, 1, p)
    x, y = np.meshgrid(t, t, indexing="ij")
    return torch.from_numpy(f(x, y)).flatten()  # type: ignore[operator]


def test_uniform_measure_is_the_trapezoid_rule() -> None:
    w = trapezoid_weights(9)
    np.testing.assert_allclose(w.numpy(), np.diff(np.linspace(-1, 1, 9)).mean() * np.r_[0.5, [1] * 7, 0.5])
    assert float(w.sum()) == pytest.approx(2.0)
    f = np.exp(np.linspace(-1, 1, 9))
    got = Uniform(9).counit(torch.from_numpy(f), -1, REAL)
    assert float(got) == pytest.approx(np.trapezoid(f, np.linspace(-1, 1, 9)), rel=1e-13)


def test_grid_integrates_known_functions() -> None:
    g = grid(33)
    # exact for functions linear in each variable
    bilinear = _on_grid(lambda x, y: 3 * x * y + x - 2 * y + 1, 33)
    assert float(g.counit(bilinear, -1, REAL)) == pytest.approx(4.0, rel=1e-13)
    # e^(x + 2y): ∫∫ = (e - 1/e)(e² - e⁻²)/2, second order in h, and numpy's nested trapezoid rule
    exact = (math.e - 1 / math.e) * (math.e**2 - math.e**-2) / 2
    errors = []
    for p in (17, 33, 65):
        t = np.linspace(-1, 1, p)
        f = np.exp(t[:, None] + 2 * t[None, :])
        got = float(grid(p).counit(torch.from_numpy(f).flatten(), -1, REAL))
        assert got == pytest.approx(np.trapezoid(np.trapezoid(f, t, axis=1), t), rel=1e-13)
        errors.append(abs(got - exact))
    assert errors[-1] < 1e-3 * exact
    assert all(3.9 < errors[i] / errors[i + 1] < 4.1 for i in range(2))


def _ln(x: torch.Tensor, norm: torch.nn.Module) -> torch.Tensor:
    return nnf.layer_norm(x, x.shape[-1:], norm.weight, norm.bias, norm.eps)  # type: ignore[arg-type]


def _attend(
    mha: torch.nn.Module, q: torch.Tensor, mem: torch.Tensor, log_w: torch.Tensor, heads: int, bias: torch.Tensor
) -> torch.Tensor:
    """Multi-head softmax attention written out: queries ``(..., n, R)`` at points, memory ``(..., P, R)``,
    ``bias`` ``(heads, n, P)`` added to the scaled scores."""
    r = q.shape[-1]
    w, b = mha.in_proj_weight, mha.in_proj_bias
    qq = q @ w[:r].T + b[:r]
    k = mem @ w[r : 2 * r].T + b[r : 2 * r]
    v = mem @ w[2 * r :].T + b[2 * r :]
    split = lambda t: t.unflatten(-1, (heads, r // heads)).transpose(-2, -3)  # noqa: E731
    s = split(qq) @ split(k).mT / math.sqrt(r // heads) + log_w + bias
    o = (s.softmax(-1) @ split(v)).transpose(-2, -3).flatten(-2)
    return o @ mha.out_proj.weight.T + mha.out_proj.bias


@pytest.mark.parametrize(
    ("reader_heads", "heads", "window"), [(0, 2, 0.0), (1, 1, 0.0), (4, 4, 0.0), (0, 2, 40.0), (4, 4, 160.0)]
)
def test_reader_against_a_plain_computation(reader_heads: int, heads: int, window: float) -> None:
    """``reader_heads`` (``0``: the model's ``heads``) splits the reader's channels, the model's attention untouched;
    ``window`` adds ``-β_h (t - s)²`` to head ``h``'s scores, ``β_h = window / 4^(heads - 1 - h)``."""
    torch.manual_seed(0)
    config = Config(
        modes=5,
        width=8,
        heads=2,
        reader="grid",
        reader_heads=reader_heads,
        reader_window=window,
        frequencies=3,
        dtype="float64",
    )
    reader = GridReader(config, DarcyModel(config).domain, torch.float64)
    p, n = 9, 5
    log_a = torch.randn(2, p, p, dtype=torch.float64)
    got = reader(log_a).tensor  # (2, n², 8): coefficients on Pairs(X, Y)
    # the same by hand: point values through numpy's Vandermonde, explicit trapezoid-weighted softmax
    t = points(n).numpy()
    vx = torch.from_numpy(C.chebvander(t, n - 1))  # values at the n first-kind points from coefficients
    log_w = trapezoid_weights(p).log()
    beta = torch.tensor([window / 4.0**j for j in reversed(range(heads))], dtype=torch.float64)
    s = np.linspace(-1, 1, p)
    bias = -beta[:, None, None] * torch.from_numpy((t[:, None] - s[None, :]) ** 2)  # (heads, n, P)
    f = fourier(p, 3)
    tokens = torch.cat([log_a.mT[..., None], f.expand(2, p, p, 6)], -1)  # (b, P_y, P_x, 7)
    mem = _ln(tokens @ reader.embed.weight.T + reader.embed.bias, reader.norm_x)
    qx = vx @ reader.query_x  # (n, R) at the x points
    h = qx + _attend(reader.attn_x, qx.expand(2, p, n, 8), mem, log_w, heads, bias)  # (b, P_y, n_x, R) values
    mem = _ln(h.transpose(-2, -3) + f @ reader.position.weight.T + reader.position.bias, reader.norm_y)
    qy = vx @ reader.query_y
    g = qy + _attend(reader.attn_y, qy.expand(2, n, n, 8), mem, log_w, heads, bias)  # (b, n_x, n_y, R) values
    inv = torch.linalg.inv(vx)
    coef = torch.einsum("ki,lj,bijr->bklr", inv, inv, g)  # values at the tensor points -> coefficients
    want = coef.flatten(1, 2) @ reader.lift.weight.T
    want[:, 0] += reader.lift.bias  # a bias on a function is the constant function: T_0(x) T_0(y) only
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_the_funcformers_window_needs_its_softmax_along_x() -> None:
    with pytest.raises(ConfigError, match=r"window=40.0, sequence=xy, .* set sequence=x \(or x\+y\) and normalise"):
        Config(reader="grid", sequence="xy", window=40.0)
    with pytest.raises(ConfigError, match=r"window=40.0, sequence=x, normalise=linear: the window weights"):
        Config(normalise="linear", window=40.0)


def test_a_reader_window_needs_the_grid_readers_softmax() -> None:
    with pytest.raises(ConfigError, match=r"reader_window=40.0, reader=interpolant.* set reader=grid"):
        Config(reader_window=40.0)
    with pytest.raises(ConfigError, match=r"reader_normalise=linear: the window weights the grid reader's softmax"):
        Config(reader="grid", reader_window=40.0, reader_normalise="linear")


def test_reader_heads_must_divide_the_readers_channels() -> None:
    with pytest.raises(ConfigError, match=r"reader_width=32, reader_heads=3 .* 3 heads must divide its 32 channels"):
        Config(reader="grid", reader_width=32, reader_heads=3)
    with pytest.raises(ConfigError, match=r"heads=4\): the grid reader's 4 heads must divide its 30 channels"):
        Config(reader="grid", reader_width=30)  # reader_heads 0: the model's heads
    Config(reader="interpolant", reader_width=30)  # the interpolant route has no reader


@pytest.mark.parametrize("sequence", ["x", "x+y", "xy"])
def test_grid_model_shapes_zero_boundary_and_finer_grids(sequence: str) -> None:
    config = PRESETS["tiny"].replace(reader="grid", sequence=sequence)
    torch.manual_seed(0)
    model = DarcyModel(config)
    d = data.sample("piecewise", 3, points=config.points, refine=1)
    u = model(model.inputs(d))
    n = config.modes + 2
    assert u.shape == (3, n, n)
    on = model.on_grid(u)
    assert on.shape == (3, config.points, config.points)
    zero = torch.zeros_like(on[:, 0])
    for edge in (on[:, 0], on[:, -1], on[:, :, 0], on[:, :, -1]):
        torch.testing.assert_close(edge, zero, atol=1e-6, rtol=0)
    # a finer grid of the same coefficients is read with the same weights, and the series evaluated there
    fine = data.sample("piecewise", 3, points=2 * config.points - 1, refine=1)
    torch.testing.assert_close(fine.xi, d.xi)
    u_fine = model(model.inputs(fine))
    assert u_fine.shape == (3, n, n)
    t = np.linspace(-1, 1, 2 * config.points - 1)
    want = np.stack([C.chebgrid2d(t, t, c) for c in u_fine.detach().double().numpy()])
    np.testing.assert_allclose(model.on_grid(u_fine.detach(), 2 * config.points - 1).double().numpy(), want, atol=1e-5)


@pytest.mark.parametrize("sequence", ["x", "x+y", "xy"])
def test_activation_reaches_every_mlp(sequence: str) -> None:
    """``activation="gelu"``: every encoder layer's MLP is ``W2 gelu(W1 h + b1) + b2`` at each position (checked
    against ``torch.nn.functional`` on the layer's own weights), and the model's output differs from ReLU's with
    the same weights."""
    config = PRESETS["tiny"].replace(reader="grid", sequence=sequence, dtype="float64")
    torch.manual_seed(0)
    gelu = DarcyModel(config.replace(activation="gelu"))
    layers = [m for m in gelu.modules() if isinstance(m, EncoderLayer)]
    assert len(layers) == config.depth * (2 if sequence == "x+y" else 1)
    for layer in layers:
        h = torch.randn(3, layer.model.size, dtype=torch.float64)
        l1, l2 = layer.linear1, layer.linear2
        want = nnf.linear(nnf.gelu(nnf.linear(h, l1.weight, l1.bias)), l2.weight, l2.bias)
        torch.testing.assert_close(layer.feed_forward(Field(h, (Vector(3), layer.model))).tensor, want)
    relu = DarcyModel(config)
    relu.load_state_dict(gelu.state_dict())
    d = data.sample("piecewise", 2, points=config.points, refine=1)
    with torch.no_grad():
        assert not torch.allclose(gelu(gelu.inputs(d)), relu(relu.inputs(d)))


def test_tiny_grid_training_lowers_the_error(tmp_path: Path) -> None:
    config = PRESETS["tiny"].replace(reader="grid", sequence="xy", steps=40)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    _, task = train(config.replace(steps=1), splits, None, progress=False)
    before = float(task.errors().mean())
    _, task = train(config, splits, tmp_path, progress=False)
    assert float(task.errors().mean()) < 0.7 * before


def test_reader_channels_reduce_to_one_function_when_the_others_are_unused() -> None:
    """``channels=C``: the Funcformer reads ``C`` functions of ``y`` at each ``x`` (features ``Pairs(Y, Vector(C))``,
    channel fastest) and ``combine`` mixes its ``C`` outputs. With the embedding blind to channels 1.., and
    ``combine`` picking channel 0, the model is the one-channel model with the same weights."""
    base = PRESETS["tiny"].replace(reader="grid")
    torch.manual_seed(0)
    one, three = DarcyModel(base), DarcyModel(base.replace(channels=3))
    three.reader.load_state_dict(one.reader.state_dict())  # type: ignore[union-attr]
    assert one.net is not None and three.net is not None and three.combine is not None
    ones = {k: v for k, v in one.net.state_dict().items() if "embed" not in k}
    three.net.load_state_dict(ones, strict=False)
    with torch.no_grad():
        embed, unembed = three.net.transformer.embed.weight, three.net.transformer.unembed.weight
        embed.zero_()
        embed[:, 0::3] = one.net.transformer.embed.weight  # channel 0 of every y coefficient
        unembed[0::3] = one.net.transformer.unembed.weight
        three.collapse.weight[0] = one.collapse.weight[0]  # type: ignore[union-attr]
        three.collapse.bias[0] = one.collapse.bias[0]  # type: ignore[union-attr]
        three.combine.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
        three.combine.bias.zero_()
    d = data.sample("lognormal", 2, points=base.points, refine=1)
    torch.testing.assert_close(three(three.inputs(d)), one(one.inputs(d)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ConfigError, match="channels=3, reader=interpolant"):
        PRESETS["tiny"].replace(channels=3)


def _swapped(model: DarcyModel) -> DarcyModel:
    """The same model with its Funcformers along ``x`` and along ``y`` exchanged."""
    other = DarcyModel(model.config)
    state = model.state_dict()
    state = {k.replace("net.", "@.").replace("net_y.", "net.").replace("@.", "net_y."): v for k, v in state.items()}
    other.load_state_dict(state)
    return other.eval()


def test_x_plus_y_treats_the_two_directions_alike() -> None:
    """``sequence="x+y"``: a Funcformer along ``x`` plus one along ``y`` on the transpose. Exchanging the two
    Funcformers' weights and transposing the input transposes the output -- which fails if the second one is
    left out, reads the input untransposed, or is not transposed back. Whole model on the interpolant route
    (``log a`` coefficients in, ``u`` coefficients out); :meth:`DarcyModel.along` with three channels per point."""
    config = PRESETS["tiny"].replace(sequence="x+y", dtype="float64", window=4.0)
    torch.manual_seed(0)
    model = DarcyModel(config, in_shift=0.3, in_scale=1.7, out_scale=2.0).eval()
    c = torch.randn(2, config.modes, config.modes, dtype=torch.float64)
    with torch.no_grad():
        got = _swapped(model)(c.mT)
        torch.testing.assert_close(got, model(c).mT, rtol=1e-10, atol=1e-12)
        grid = DarcyModel(config.replace(reader="grid", channels=3)).eval()
        f = torch.randn(2, config.modes, config.modes, 3, dtype=torch.float64)
        torch.testing.assert_close(_swapped(grid).along(f.transpose(1, 2)), grid.along(f).transpose(1, 2))


def test_centring_takes_the_integral_mean_at_every_resolution() -> None:
    """``centred``'s ``m`` is ``∫∫ log a dx dy`` over the unit square: for ``0.3 + cos(2πx) cos(πy) + x²`` the exact
    mean is ``0.3 + 1/3``, met by the trapezoid rule up to its ``h²/6`` error on ``x²`` at 17, 33 and 65 nodes (the
    mean of the nodes is off by about ``1/P``, so this fails with it)."""
    for p in (17, 33, 65):
        x = torch.linspace(0, 1, p, dtype=torch.float64)
        f = 0.3 + torch.cos(2 * math.pi * x)[:, None] * torch.cos(math.pi * x)[None, :] + (x**2)[:, None]
        rest, m = centred(f.expand(2, p, p))
        h = 1 / (p - 1)
        torch.testing.assert_close(m, torch.full((2, 1, 1), 0.3 + 1 / 3 + h * h / 6, dtype=torch.float64))
        torch.testing.assert_close(rest + m, f.expand(2, p, p))


@pytest.mark.parametrize("homogeneous", [True, False])
def test_the_homogeneous_model_divides_by_the_coefficients_scale(homogeneous: bool) -> None:
    """``homogeneous``: ``u(c a) = u(a) / c`` for every ``c > 0`` by construction -- the exact solver's symmetry,
    checked on it too; without it the untrained model does not follow ``c`` (so the check can fail)."""
    config = PRESETS["tiny"].replace(reader="grid", homogeneous=homogeneous, dtype="float64")
    torch.manual_seed(0)
    model = DarcyModel(config, in_shift=0.3, in_scale=1.7, out_scale=2.0).eval()
    d = data.sample("lognormal", 3, points=config.points, refine=1)
    solver = DarcySolver(config.points)
    with torch.no_grad():
        base = model(model.inputs(d))
        for c in (1e-2, 0.5, 3.0, 1e2):
            got = model(model.inputs(dataclasses.replace(d, a=d.a * c)))
            if homogeneous:
                torch.testing.assert_close(got, base / c, rtol=1e-10, atol=1e-14)
            else:
                assert not torch.allclose(got, base / c, rtol=1e-3, atol=0)
            exact = torch.from_numpy(solver.solve_batch(d.a.numpy() * c))
            torch.testing.assert_close(exact, d.u / c, rtol=1e-9, atol=1e-14)
    with pytest.raises(ConfigError, match="homogeneous=true, reader=interpolant"):
        PRESETS["tiny"].replace(homogeneous=True)


def _numpy_move(t: np.ndarray, transpose: bool, flip_x: bool, flip_y: bool) -> np.ndarray:
    """The square's symmetry on one grid ``[i, j]`` at ``(x_i, y_j)``, written with numpy's index tricks."""
    t = t.T if transpose else t
    t = t[::-1, :] if flip_x else t
    return t[:, ::-1] if flip_y else t


ALL_MOVES = torch.tensor([[bool(k & 1), bool(k & 2), bool(k & 4)] for k in range(8)])


def test_symmetry_is_the_squares_eight_moves() -> None:
    """Against numpy's transpose and reversed slices; the eight moves are distinct (the dihedral group of order 8)."""
    t = torch.randn(8, 5, 5, dtype=torch.float64)
    got = data.symmetry(t, ALL_MOVES)
    for k in range(8):
        want = _numpy_move(t[k].numpy(), *ALL_MOVES[k].tolist())
        np.testing.assert_array_equal(got[k].numpy(), want)
    moved = data.symmetry(t[:1].expand(8, 5, 5), ALL_MOVES).flatten(1)
    assert len({tuple(row.tolist()) for row in moved}) == 8
    with pytest.raises(ValueError, match=r"expected grids \(batch, P, P\) and booleans \(batch, 3\)"):
        data.symmetry(t[:, :4], ALL_MOVES)
    with pytest.raises(ValueError, match=r"of torch\.int64"):
        data.symmetry(t, ALL_MOVES.long())


@pytest.mark.parametrize("family", data.FAMILIES)
def test_the_solver_commutes_with_the_squares_symmetries(family: data.Family) -> None:
    """``u(g·a) = g·u(a)`` for the exact finite-difference solver, every ``g``: each moved pair is another exact
    sample, which is what ``augment`` trains on."""
    d = data.sample(family, 1, points=17, refine=1)
    a = d.a.expand(8, 17, 17)
    solver = DarcySolver(17)
    exact_of_moved = torch.from_numpy(solver.solve_batch(data.symmetry(a, ALL_MOVES).numpy()))
    torch.testing.assert_close(exact_of_moved, data.symmetry(d.u.expand(8, 17, 17), ALL_MOVES), rtol=1e-10, atol=1e-13)
    assert not torch.allclose(exact_of_moved[1], exact_of_moved[0])  # the sample is not itself symmetric


def test_augmented_training_moves_the_batches_and_resumes_exactly(tmp_path: Path) -> None:
    """``augment=true`` changes what is trained on (not the same run as without), and a run cut in two and resumed
    ends where the uninterrupted one does (the moves are drawn from the checkpointed sampler)."""
    config = PRESETS["tiny"].replace(reader="grid", augment=True, steps=12, checkpoint_every=6, eval_every=6)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    whole, _ = train(config, splits, None, progress=False)
    plain, _ = train(config.replace(augment=False), splits, None, progress=False)
    train(config, splits, tmp_path, progress=False, stop_after=6)
    resumed, _ = train(config, splits, tmp_path, progress=False)
    for (name, w), r in zip(whole.model.state_dict().items(), resumed.model.state_dict().values(), strict=True):
        torch.testing.assert_close(r, w, rtol=0, atol=0, msg=name)
    assert any(not torch.equal(w, p) for w, p in zip(whole.model.parameters(), plain.model.parameters(), strict=True))
    with pytest.raises(ConfigError, match="augment=true, reader=interpolant"):
        PRESETS["tiny"].replace(augment=True)


def test_beta2_is_adams_second_moment_decay() -> None:
    """``beta2`` reaches Adam (and changes the run); 1 or more is refused with the bound named."""
    config = PRESETS["tiny"].replace(steps=4, eval_every=4, checkpoint_every=4)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    fast, fast_task = train(config.replace(beta2=0.9), splits, None, progress=False)
    slow, slow_task = train(config, splits, None, progress=False)
    assert {g["betas"][1] for g in fast_task.optimiser.param_groups} == {0.9}
    assert {g["betas"][1] for g in slow_task.optimiser.param_groups} == {0.999}
    assert any(not torch.equal(a, b) for a, b in zip(fast.model.parameters(), slow.model.parameters(), strict=True))
    with pytest.raises(ConfigError, match=r"beta2=1.0: must be < 1.0"):
        config.replace(beta2=1.0)


def test_the_smoothing_penalty_controls_the_series_between_the_nodes() -> None:
    """A 22-term series per axis fitted at 33 uniform nodes is free between them (Runge): least squares on
    exact log-normal solutions is accurate at the nodes and ten times worse at 65² nodes; with the penalty
    (``roughness``, its quadratic form taken from the function itself) it is accurate at both."""
    n, count = 20, 6
    coarse = data.sample("lognormal", count, 33, seed=5, refine=4)  # both solved on the same 129² grid
    fine = data.sample("lognormal", count, 65, seed=5, refine=2)
    b = bubble_matrix(n)
    g33, g65 = grid_matrix(n + 2, 33) @ b, grid_matrix(n + 2, 65) @ b
    k = torch.kron(g33, g33) / 33  # v (flattened n x n) -> u on the grid, scaled: |k v|² is the mean square
    penalty = torch.autograd.functional.hessian(
        lambda v: roughness(b @ v.reshape(n, n) @ b.T), torch.zeros(n * n, dtype=torch.float64)
    )
    y = coarse.u.reshape(count, -1).mT / 33

    def fit(lam: float) -> tuple[float, float]:
        v = torch.linalg.solve(k.T @ k + lam * penalty / 2, k.T @ y).T.reshape(count, n, n)
        at33 = data.relative_l2(g33 @ v @ g33.T, coarse.u).mean()
        at65 = data.relative_l2(g65 @ v @ g65.T, fine.u).mean()
        return float(at33), float(at65)

    free, smooth = fit(0.0), fit(0.03)
    assert free[1] > 5 * free[0]
    assert smooth[1] < 2 * smooth[0] and smooth[0] < 1.5 * free[0]


def test_roughness_weights_the_coefficients_by_the_fourth_power_of_their_degree() -> None:
    u = torch.randn(3, 5, 5, dtype=torch.float64)
    expected = [sum(((i / 4) ** 4 + (j / 4) ** 4) * float(s[i, j]) ** 2 for i in range(5) for j in range(5)) for s in u]
    torch.testing.assert_close(roughness(u), torch.tensor(expected, dtype=torch.float64))


def test_smooth_reaches_the_training_loss_and_smooths_the_prediction() -> None:
    """``smooth`` adds ``λ roughness(u) / mean(exact²)`` to the loss; trained with it, the series is smoother."""
    config = PRESETS["tiny"].replace(steps=20, eval_every=20, checkpoint_every=20)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    plain, plain_task = train(config, splits, None, progress=False)
    smooth, _ = train(config.replace(smooth=100.0), splits, None, progress=False)
    x, exact = plain_task.x[:4], plain_task.u[:4]
    with torch.no_grad():
        u = plain.model(x)
        torch.testing.assert_close(objective(plain.model, x, exact), relative_sq(plain.model.on_grid(u), exact).mean())
        assert float(roughness(smooth.model(x)).mean()) < 0.5 * float(roughness(u).mean())
    with pytest.raises(ConfigError, match=r"smooth=-1.0"):
        config.replace(smooth=-1.0)
