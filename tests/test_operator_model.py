"""The operator model's parts (:mod:`models.operator`) against plain computations, on Darcy data: the grid reader
written out by hand, the zero boundary and finer grids, the activation, the channels, the two directions, the
integral mean, the built-in homogeneity, the square's symmetries, the smoothing penalty.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch
import torch.nn.functional as nnf

from applicative import Field, InputError, LayerNorm, Vector
from instances.axes import X, Y
from instances.chebyshev import bubble, points, vandermonde
from instances.layouts import Nodes
from models.operator import GridReader, OperatorModel, Reading, domain_mean, features, roughness
from models.transformer import EncoderLayer
from operators import symmetry
from operators.darcy import data
from operators.darcy.solver import DarcySolver
from training import ConfigError
from training.tasks.darcy.config import PRESETS, Config
from training.tasks.darcy.model import SHAPE
from training.tasks.darcy.train import train
from training.tasks.operator.model import activations, build
from training.tasks.operator.task import objective, relative_sq

AXES = SHAPE.axes
ZERO_BOUNDARIES = [a.boundary for a in AXES]


pytestmark = pytest.mark.usefixtures("one_thread")


def _model(config: Config, **changes: object) -> OperatorModel:
    """The Darcy task's model for ``config`` with ``changes``, seeded, scales ``in (0.3, 1.7)``, ``out 1/2``."""
    torch.manual_seed(0)
    model = build(config.replace(**changes), SHAPE)
    model.in_shift.fill_(0.3)
    model.in_scale.fill_(1.7)
    model.head.out_scale.fill_(0.5)
    return model.eval()


def _inputs(d: data.DarcyData) -> torch.Tensor:
    return d.a[..., None]


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


@pytest.mark.parametrize(("heads", "window"), [(2, 0.0), (1, 0.0), (4, 0.0), (2, 40.0), (4, 160.0)])
def test_reader_against_a_plain_computation(heads: int, window: float) -> None:
    """Two cross-attentions, along ``x`` on each row and along ``y`` at each Chebyshev point, trapezoid-weighted
    (the nodes' quadrature); ``window`` adds ``-β_h (t - s)²`` to head ``h``'s scores, ``β_h = window / 4^(H-1-h)``."""
    torch.manual_seed(0)
    n, p = 5, 9
    reader = GridReader(AXES, (X(n), Y(n)), 1, 8, Reading(8, heads, window, 3), dtype=torch.float64)
    x = torch.randn(2, p, p, 1, dtype=torch.float64)
    got = reader(x).tensor  # (2, n², 8): coefficients on Pairs(X, Y)
    # the same by hand: point values through numpy's Vandermonde, explicit trapezoid-weighted softmax
    t = points(n).numpy()
    vx = torch.from_numpy(C.chebvander(t, n - 1))  # values at the n first-kind points from coefficients
    s = np.linspace(-1, 1, p)
    log_w = torch.from_numpy(np.log(np.diff(s).mean() * np.r_[0.5, [1] * (p - 2), 0.5]))
    beta = torch.tensor([window / 4.0**j for j in reversed(range(heads))], dtype=torch.float64)
    bias = -beta[:, None, None] * torch.from_numpy((t[:, None] - s[None, :]) ** 2)  # (heads, n, P)
    k = np.pi * np.outer(s, [1, 2, 3])
    f = torch.from_numpy(np.concatenate([np.cos(k), np.sin(k)], -1))  # Fourier features of the nodes
    tokens = torch.cat([x[..., 0].mT[..., None], f.expand(2, p, p, 6)], -1)  # (b, P_y, P_x, 7)
    mem = _ln(tokens @ reader.embed.weight.T + reader.embed.bias, reader.norm_x)
    qx = vx @ reader.query_x  # (n, R) at the x points
    h = qx + _attend(reader.attn_x, qx.expand(2, p, n, 8), mem, log_w, heads, bias)  # (b, P_y, n_x, R) values
    assert reader.position is not None and reader.norm_y is not None and reader.query_y is not None
    mem = _ln(h.transpose(-2, -3) + f @ reader.position.weight.T + reader.position.bias, reader.norm_y)
    qy = vx @ reader.query_y
    g = qy + _attend(reader.attn_y, qy.expand(2, n, n, 8), mem, log_w, heads, bias)  # (b, n_x, n_y, R) values
    inv = torch.linalg.inv(vx)
    coef = torch.einsum("ki,lj,bijr->bklr", inv, inv, g)  # values at the tensor points -> coefficients
    want = coef.flatten(1, 2) @ reader.lift.weight.T
    want[:, 0] += reader.lift.bias  # a bias on a function is the constant function: T_0(x) T_0(y) only
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(features(torch.from_numpy(s), 3), f)


def test_heads_must_divide_the_channels_and_windows_need_t_squared() -> None:
    with pytest.raises(ConfigError, match=r"reader_width=32, reader_heads=3: the reader's heads must divide"):
        Config(reader_width=32, reader_heads=3)
    with pytest.raises(ConfigError, match=r"modes=2, window=40.0.* set modes >= 3"):
        Config(modes=2, points=5)
    with pytest.raises(InputError, match=r"reading.width, reading.heads = 30, 4: the heads must divide"):
        OperatorModel(AXES, 1, 1, reading=Reading(30, 4))
    with pytest.raises(InputError, match=r"homogeneous=-1.0 without log_input"):
        OperatorModel(AXES, 1, 1, homogeneous=-1.0)


def test_shapes_the_zero_boundary_and_finer_grids() -> None:
    config = PRESETS["tiny"]
    model = _model(config)
    d = data.sample("piecewise", 3, points=config.points, refine=1)
    with torch.no_grad():
        u = model(_inputs(d))
    n = config.modes + 2
    assert u.shape == (3, 1, n, n) and model.sizes == (n, n)
    on = model.values(u, (config.points, config.points))[..., 0]
    assert on.shape == (3, config.points, config.points)
    zero = torch.zeros_like(on[:, 0])
    for edge in (on[:, 0], on[:, -1], on[:, :, 0], on[:, :, -1]):
        torch.testing.assert_close(edge, zero, atol=1e-6, rtol=0)
    # a finer grid of the same coefficients is read with the same weights, and the series evaluated there
    fine = data.sample("piecewise", 3, points=2 * config.points - 1, refine=1)
    torch.testing.assert_close(fine.xi, d.xi)
    with torch.no_grad():
        u_fine = model(_inputs(fine))
    assert u_fine.shape == (3, 1, n, n)
    p = 2 * config.points - 1
    t = np.linspace(-1, 1, p)
    want = np.stack([C.chebgrid2d(t, t, c) for c in u_fine[:, 0].double().numpy()])
    np.testing.assert_allclose(model.values(u_fine, (p, p))[..., 0].double().numpy(), want, atol=1e-5)


def test_activation_reaches_every_mlp() -> None:
    """``activation="gelu"``: every encoder layer's MLP is ``W2 gelu(W1 h + b1) + b2`` at each position (checked
    against ``torch.nn.functional`` on the layer's own weights), and the model's output differs from ReLU's with
    the same weights."""
    config = PRESETS["tiny"].replace(dtype="float64")
    gelu = _model(config, activation="gelu")
    layers = [m for m in gelu.modules() if isinstance(m, EncoderLayer)]
    assert len(layers) == config.depth * 2  # along x and along y
    for layer in layers:
        h = torch.randn(3, layer.model.size, dtype=torch.float64)
        l1, l2 = layer.linear1, layer.linear2
        want = nnf.linear(nnf.gelu(nnf.linear(h, l1.weight, l1.bias)), l2.weight, l2.bias)
        torch.testing.assert_close(layer.feed_forward(Field(h, (Vector(3), layer.model))).tensor, want)
    relu = _model(config, activation="relu")
    relu.load_state_dict(gelu.state_dict())
    d = data.sample("piecewise", 2, points=config.points, refine=1)
    with torch.no_grad():
        assert not torch.allclose(gelu(_inputs(d)), relu(_inputs(d)))


def test_norms_off_takes_the_norms_out_of_every_funcformer_layer_only() -> None:
    """``norms=False``: no layer norm in any Funcformer layer (each block ``h + f(h)``), the grid reader's kept; the
    model is the normed one's weights less its norms (2 per layer, weight and bias), and its outputs differ."""
    config = PRESETS["tiny"].replace(dtype="float64")
    normed, bare = _model(config, norms=True), _model(config, norms=False)
    layers = [m for m in bare.modules() if isinstance(m, EncoderLayer)]
    assert len(layers) == config.depth * 2
    assert not any(isinstance(m, LayerNorm) or "norm" in n for lay in layers for n, m in lay.named_modules())
    assert isinstance(bare.reader, GridReader) and bare.reader.norm_x is not None
    dropped = set(normed.state_dict()) - set(bare.state_dict())
    assert dropped and all(".norm1." in k or ".norm2." in k for k in dropped)
    assert sum(normed.state_dict()[k].numel() for k in dropped) == len(layers) * 2 * 2 * config.width
    bare.load_state_dict({k: v for k, v in normed.state_dict().items() if k not in dropped})
    d = data.sample("piecewise", 2, points=config.points, refine=1)
    with torch.no_grad():
        assert not torch.allclose(normed(_inputs(d)), bare(_inputs(d)))


def test_attend_every_other_layer_is_the_full_model_with_those_attentions_silenced() -> None:
    """``attend_every=2``: layers 1 and 3 of each Funcformer have no self-attention (nor its norm), and the model is
    the every-layer model with the same weights and those layers' attention outputs zeroed (``h + 0``)."""
    config = PRESETS["tiny"].replace(dtype="float64", depth=4, norms=True)
    full, sparse = _model(config), _model(config, attend_every=2)
    layers = [m for m in sparse.modules() if isinstance(m, EncoderLayer)]
    assert [lay.self_attn is None for lay in layers] == [False, True, False, True] * 2
    dropped = set(full.state_dict()) - set(sparse.state_dict())
    assert dropped and all(k.split(".layers.")[1].split(".")[0] in "13" for k in dropped)
    assert {k.split(".layers.")[1].split(".")[1] for k in dropped} == {"self_attn", "norm1"}
    assert set(sparse.state_dict()) <= set(full.state_dict())
    full.load_state_dict(sparse.state_dict(), strict=False)
    with torch.no_grad():
        for k in dropped:
            if ".self_attn.out_proj." in k:
                full.state_dict()[k].zero_()
    d = data.sample("piecewise", 2, points=config.points, refine=1)
    with torch.no_grad():
        torch.testing.assert_close(sparse(_inputs(d)), full(_inputs(d)), rtol=1e-12, atol=1e-12)
        full.load_state_dict(_model(config).state_dict())  # its own attentions back: another model
        assert not torch.allclose(sparse(_inputs(d)), full(_inputs(d)))
    shape = SHAPE
    assert activations(config.replace(attend_every=2), shape) < activations(config, shape)
    with pytest.raises(InputError, match="attend_every"):
        OperatorModel(SHAPE.axes, 1, 1, attend_every=0)
    with pytest.raises(ConfigError, match="attend_every"):
        config.replace(attend_every=0)


def test_reader_channels_reduce_to_one_function_when_the_others_are_unused() -> None:
    """``channels=C``: the Funcformers read ``C`` functions at each point (features ``Pairs(Y, Vector(C))``, channel
    fastest) and ``combine`` mixes their ``C`` outputs. With the embeddings blind to channels 1.., and ``combine``
    picking channel 0, the model is the one-channel model with the same weights."""
    base = PRESETS["tiny"].replace(channels=1)
    one, three = _model(base), _model(base, channels=3)
    three.reader.load_state_dict(one.reader.state_dict())
    combine = three.head.combine
    assert combine is not None and one.head.combine is None
    for name in ("x", "y"):
        a, b = getattr(one.along, name), getattr(three.along, name)
        b.load_state_dict({k: v for k, v in a.state_dict().items() if "embed" not in k}, strict=False)
        with torch.no_grad():
            embed, unembed = b.transformer.embed.weight, b.transformer.unembed.weight
            embed.zero_()
            embed[:, 0::3] = a.transformer.embed.weight  # channel 0 of every coefficient across
            unembed.zero_()
            unembed[0::3] = a.transformer.unembed.weight
    with torch.no_grad():
        three.collapse.weight.zero_()
        three.collapse.bias.zero_()
        three.collapse.weight[0] = one.collapse.weight[0]
        three.collapse.bias[0] = one.collapse.bias[0]
        combine.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
        combine.bias.zero_()
        d = data.sample("lognormal", 2, points=base.points, refine=1)
        torch.testing.assert_close(three(_inputs(d)), one(_inputs(d)), rtol=1e-5, atol=1e-6)


def test_the_two_directions_are_treated_alike() -> None:
    """A Funcformer along ``x`` plus one along ``y`` on the transpose: exchanging the two Funcformers' weights and
    transposing the input transposes the output -- which fails if the second one is left out, reads the input
    untransposed, or is not transposed back."""
    config = PRESETS["tiny"].replace(dtype="float64", window=4.0, channels=3)
    model = _model(config)
    other = _model(config)
    state = model.state_dict()
    swap = {"along.x.": "along.y.", "along.y.": "along.x."}
    other.load_state_dict(
        {next((k.replace(a, b) for a, b in swap.items() if k.startswith(a)), k): v for k, v in state.items()}
    )
    f = torch.randn(2, config.modes, config.modes, 3, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(other.along(f.transpose(1, 2)), model.along(f).transpose(1, 2))
        d = data.sample("lognormal", 2, points=config.points, refine=1)
        config1 = config.replace(channels=1, reader_width=8)
        whole, swapped = _model(config1), _model(config1)
        swapped.load_state_dict(
            {
                next((k.replace(a, b) for a, b in swap.items() if k.startswith(a)), k): v
                for k, v in whole.state_dict().items()
            }
        )
        assert not torch.allclose(swapped(_inputs(d)), whole(_inputs(d)))  # the two are different maps


def test_the_domain_mean_is_the_integral_at_every_resolution() -> None:
    """``m = ∫∫ log a dx dy`` over the unit square: for ``0.3 + cos(2πx) cos(πy) + x²`` the exact mean is
    ``0.3 + 1/3``, met by the trapezoid rule up to its ``h²/6`` error on ``x²`` at 17, 33 and 65 nodes (the mean of
    the nodes is off by about ``1/P``, so this fails with it)."""
    for p in (17, 33, 65):
        x = torch.linspace(0, 1, p, dtype=torch.float64)
        f = 0.3 + torch.cos(2 * math.pi * x)[:, None] * torch.cos(math.pi * x)[None, :] + (x**2)[:, None]
        m = domain_mean(f.expand(2, p, p), AXES)
        h = 1 / (p - 1)
        torch.testing.assert_close(m, torch.full((2,), 0.3 + 1 / 3 + h * h / 6, dtype=torch.float64))


@pytest.mark.parametrize("homogeneous", [-1.0, 0.0])
def test_the_homogeneous_model_divides_by_the_coefficients_scale(homogeneous: float) -> None:
    """``homogeneous = -1``: ``u(c a) = u(a) / c`` for every ``c > 0`` by construction -- the exact solver's symmetry,
    checked on it too; without it the untrained model does not follow ``c`` (so the check can fail)."""
    config = PRESETS["tiny"].replace(homogeneous=homogeneous, dtype="float64")
    model = _model(config)
    d = data.sample("lognormal", 3, points=config.points, refine=1)
    solver = DarcySolver(config.points)
    with torch.no_grad():
        base = model(_inputs(d))
        for c in (1e-2, 0.5, 3.0, 1e2):
            got = model(_inputs(dataclasses.replace(d, a=d.a * c)))
            if homogeneous:
                torch.testing.assert_close(got, base / c, rtol=1e-10, atol=1e-14)
            else:
                assert not torch.allclose(got, base / c, rtol=1e-3, atol=0)
            exact = torch.from_numpy(solver.solve_batch(d.a.numpy() * c))
            torch.testing.assert_close(exact, d.u / c, rtol=1e-9, atol=1e-14)
    with pytest.raises(ConfigError, match=r"homogeneous=-1\.0, log_input=false"):
        PRESETS["tiny"].replace(log_input=False)


def _numpy_move(t: np.ndarray, transpose: bool, flip_x: bool, flip_y: bool) -> np.ndarray:
    """The square's symmetry on one grid ``[i, j]`` at ``(x_i, y_j)``, written with numpy's index tricks."""
    t = t.T if transpose else t
    t = t[::-1, :] if flip_x else t
    return t[:, ::-1] if flip_y else t


ALL_MOVES = torch.tensor([[bool(k & 1), bool(k & 2), bool(k & 4)] for k in range(8)])


def test_the_square_moves_are_its_eight_symmetries() -> None:
    """Against numpy's transpose and reversed slices; the eight moves are distinct (the dihedral group of order 8)."""
    t = torch.randn(8, 5, 5, 1, dtype=torch.float64)
    got = symmetry.move(t, ALL_MOVES, "square", AXES)
    for k in range(8):
        want = _numpy_move(t[k, ..., 0].numpy(), *ALL_MOVES[k].tolist())
        np.testing.assert_array_equal(got[k, ..., 0].numpy(), want)
    moved = symmetry.move(t[:1].expand(8, 5, 5, 1), ALL_MOVES, "square", AXES).flatten(1)
    assert len({tuple(row.tolist()) for row in moved}) == 8


def test_augmented_training_moves_the_batches_and_resumes_exactly(tmp_path: Path) -> None:
    """``augment="square"`` changes what is trained on (not the same run as without), and a run cut in two and
    resumed ends where the uninterrupted one does (the moves are drawn from the checkpointed sampler)."""
    config = PRESETS["tiny"].replace(steps=12, checkpoint_every=6, eval_every=6)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    whole = train(config, splits, None, progress=False).trained
    plain = train(config.replace(augment="none"), splits, None, progress=False).trained
    train(config, splits, tmp_path, progress=False, stop_after=6)
    resumed = train(config, splits, tmp_path, progress=False).trained
    for (name, w), r in zip(whole.model.state_dict().items(), resumed.model.state_dict().values(), strict=True):
        torch.testing.assert_close(r, w, rtol=0, atol=0, msg=name)
    assert any(not torch.equal(w, p) for w, p in zip(whole.model.parameters(), plain.model.parameters(), strict=True))


def test_beta2_is_adams_second_moment_decay() -> None:
    """``beta2`` reaches Adam (the weights Muon does not step, and changes the run); 1 or more is refused with the
    bound named."""
    config = PRESETS["tiny"].replace(steps=4, eval_every=4, checkpoint_every=4)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    fast = train(config.replace(beta2=0.9), splits, None, progress=False)
    slow = train(config.replace(beta2=0.999), splits, None, progress=False)
    assert {g["betas"][1] for g in fast.task.optimiser.param_groups if "betas" in g} == {0.9}
    assert {g["betas"][1] for g in slow.task.optimiser.param_groups if "betas" in g} == {0.999}
    pairs = zip(fast.trained.model.parameters(), slow.trained.model.parameters(), strict=True)
    assert any(not torch.equal(a, b) for a, b in pairs)
    with pytest.raises(ConfigError, match=r"beta2=1.0: must be <"):
        config.replace(beta2=1.0)


def test_the_smoothing_penalty_controls_the_series_between_the_nodes() -> None:
    """A 22-term series per axis fitted at 33 uniform nodes is free between them (Runge): least squares on
    exact log-normal solutions is accurate at the nodes and ten times worse at 65² nodes; with the penalty
    (``roughness``, its quadratic form taken from the function itself) it is accurate at both."""
    n, count = 20, 6
    coarse = data.sample("lognormal", count, 33, seed=5, refine=4)  # both solved on the same 129² grid
    fine = data.sample("lognormal", count, 65, seed=5, refine=2)
    b = bubble(n)
    g33, g65 = (vandermonde(Nodes.t(p), n + 2) @ b for p in (33, 65))
    k = torch.kron(g33, g33) / 33  # v (flattened n x n) -> u on the grid, scaled: |k v|² is the mean square
    penalty = torch.autograd.functional.hessian(
        lambda v: roughness((b @ v.reshape(n, n) @ b.T)[None, None], ZERO_BOUNDARIES)[0],
        torch.zeros(n * n, dtype=torch.float64),
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
    u = torch.randn(3, 1, 5, 5, dtype=torch.float64)
    expected = [
        sum(((i / 4) ** 4 + (j / 4) ** 4) * float(s[0, i, j]) ** 2 for i in range(5) for j in range(5)) for s in u
    ]
    torch.testing.assert_close(roughness(u, ZERO_BOUNDARIES), torch.tensor(expected, dtype=torch.float64))


def test_smooth_reaches_the_training_loss_and_smooths_the_prediction() -> None:
    """``smooth`` adds ``λ roughness(u) / mean(exact²)`` to the loss on a bounded domain; trained with it, the series
    is smoother."""
    config = PRESETS["tiny"].replace(steps=20, eval_every=20, checkpoint_every=20, smooth=0.0)
    splits = data.splits(config.family, config.n_train, config.n_test, config.points, refine=config.refine)
    plain = train(config, splits, None, progress=False)
    smooth = train(config.replace(smooth=100.0), splits, None, progress=False)
    model = plain.trained.model
    x, exact = plain.task.x[:4], plain.task.u[:4]
    weights = [a.weights(config.points, exact.dtype) for a in AXES]
    with torch.no_grad():
        u = model(x)
        pred = model.values(u, (config.points, config.points))
        torch.testing.assert_close(objective(model, x, exact, 0.0), relative_sq(pred, exact, weights).mean())
        rough = roughness(smooth.trained.model(x), ZERO_BOUNDARIES).mean()
        assert float(rough) < 0.5 * float(roughness(u, ZERO_BOUNDARIES).mean())
    with pytest.raises(ConfigError, match=r"smooth=-1.0"):
        config.replace(smooth=-1.0)


@pytest.mark.parametrize("boundaries", [("periodic",), ("zero", "periodic"), ("zero",)])
def test_the_constructors_defaults_are_the_operator_configs(boundaries: tuple[str, ...]) -> None:
    """``OperatorModel(axes, 1, 1)`` is the model the operator task builds from its default config (sizes, the
    convolution, the decoder chosen from the axes): the same weights from the same seed, the same outputs."""
    from instances.axes import Axis
    from training.tasks import operator

    axes = tuple(Axis("periodic") if b == "periodic" else Axis("nodes", boundary="zero") for b in boundaries)
    torch.manual_seed(0)
    plain = OperatorModel(axes, 1, 1)
    torch.manual_seed(0)
    built = operator.build(operator.Config(), operator.Shape(axes, 1, 1))
    assert plain.state_dict().keys() == built.state_dict().keys()
    for (name, a), b in zip(plain.state_dict().items(), built.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    x = torch.randn(2, *([24] * len(axes)), 1)
    assert torch.equal(plain(x), built(x))
