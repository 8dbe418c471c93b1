"""On a CUDA device every built-in structure and model computes what it computes on the CPU.

The CPU is the reference here (its results are checked against torch, numpy
and recursive Python elsewhere), in float64 so that only rounding separates
the two. Trees take a different path on each device -- a compiled two-pointer
merge on the CPU, one batched sort on CUDA -- so these tests also check the
two merges against each other. Skipped where no GPU is present.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import pytest
import torch
from torch import nn

from applicative import REAL, CausalSoftmax, Field, ScaledSoftmax, attention, counit, kernels, zip_with
from instances import Chebyshev, Distribution, NodeAlgebra, Tree, Vector, tree_field
from models import EncoderLayer, Funcformer, FuncformerConfig, Readout, tree_features, treeformer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")
DEVICE = "cuda"
F64 = torch.float64


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), want, rtol=1e-10, atol=1e-12)


def _random_tree(rng: random.Random, n: int, depth: int) -> Any:
    if n == 1:
        return float(rng.randint(-9, 9))
    cap = 2 ** (depth - 1)
    k = rng.randint(max(1, n - cap), min(n - 1, cap))
    return (_random_tree(rng, k, depth - 1), _random_tree(rng, n - k, depth - 1))


def _caterpillar(n: int) -> Any:
    t: Any = 1.0
    for _ in range(n - 1):
        t = (t, 2.0)
    return t


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_tree_pair_and_counit(algebra: NodeAlgebra) -> None:
    rng = random.Random(0)
    ta = [_random_tree(rng, rng.randint(1, 40), 20) for _ in range(200)] + [_caterpillar(60), 3.0]
    tb = [_random_tree(rng, rng.randint(1, 40), 20) for _ in range(200)] + [4.0, _caterpillar(61)]
    out = {}
    for dev in ("cpu", "cuda"):
        a, b = tree_field(ta, algebra, dtype=F64, device=dev), tree_field(tb, algebra, dtype=F64, device=dev)
        c = zip_with(lambda u, v: Field(u.tensor * 10 + v.tensor, ()), a, b)
        tree = c.structures[0]
        assert isinstance(tree, Tree)
        out[dev] = (counit(c).tensor, tree.start, tree.depth, tree.mask, tree.take(c.tensor, -1, None))
    for got, want in zip(out["cuda"], out["cpu"], strict=True):
        if want.dtype.is_floating_point:
            _close(got, want)
        else:
            assert torch.equal(got.cpu(), want)


def test_treeformer_forward_and_gradients() -> None:
    torch.manual_seed(0)
    rng = random.Random(1)
    nested = [_random_tree(rng, rng.randint(1, 30), 12) for _ in range(16)]
    outputs, grads = {}, {}
    net = Readout(treeformer(Vector(5 + 6), Vector(16), Vector(32), heads=4, depth=2, dtype=F64), classes=3)
    for dev in ("cpu", "cuda"):
        tree, leaves = Tree.from_nested(nested, NodeAlgebra.MEAN, device=dev)
        tokens = torch.zeros(len(nested), tree.size, dtype=torch.long)
        for i, row in enumerate(leaves):
            tokens[i, : len(row)] = torch.tensor(row, dtype=torch.long) % 5
        model = net if dev == "cpu" else copy.deepcopy(net).to(CUDA)
        model.zero_grad()
        logits = model(tree_features(tree, tokens.to(dev), vocab=5, levels=6, dtype=F64)).tensor
        logits.square().sum().backward()
        outputs[dev] = logits
        grads[dev] = [p.grad for p in model.parameters()]
    _close(outputs["cuda"], outputs["cpu"].detach())
    for g_cuda, g_cpu in zip(grads["cuda"], grads["cpu"], strict=True):
        assert (g_cuda is None) == (g_cpu is None)  # a parameter the readout never reaches has none on both
        if g_cuda is not None and g_cpu is not None:
            _close(g_cuda, g_cpu)


class X(Chebyshev):
    pass


class Y(Chebyshev):
    pass


@pytest.mark.parametrize("model", [Vector(8), Chebyshev(5)])
def test_funcformer(model: Vector | Chebyshev) -> None:
    torch.manual_seed(0)
    heads = 2 if isinstance(model, Vector) else 1
    net = Funcformer(X(12), Y(9), model, Vector(16), FuncformerConfig(heads=heads, depth=2), dtype=F64)
    u = torch.randn(4, 12, 9, dtype=F64)
    want = net(Field(u, (X(12), Y(9)))).tensor
    got = copy.deepcopy(net).to(CUDA)(Field(u.to(CUDA), (X(12), Y(9)))).tensor
    _close(got, want.detach())


def test_chebyshev_fft_transforms() -> None:
    """Above 256 points the transforms switch from a dense matrix to ``torch.fft``."""
    x = torch.randn(3, 300, dtype=F64)
    s = Chebyshev(300)
    for f in (lambda t: kernels.softmax(s, t, -1), lambda t: s.counit(t, -1, REAL)):
        _close(f(x.to(CUDA)), f(x))


@pytest.mark.parametrize("causal", [False, True])
def test_encoder_layer_matches_torch(causal: bool) -> None:
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, dtype=F64, device=CUDA)
    normalise = CausalSoftmax(1 / math.sqrt(8)) if causal else None
    gen = EncoderLayer(Vector(32), Vector(64), 4, normalise=normalise, dtype=F64, device=CUDA)
    gen.load_state_dict(ref.state_dict())
    x = torch.randn(5, 11, 32, dtype=F64, device=CUDA)
    mask = nn.Transformer.generate_square_subsequent_mask(11, dtype=F64, device=CUDA)
    want = ref(x, src_mask=mask, is_causal=True) if causal else ref(x)
    got = gen(Field(x, (Vector(11), Vector(32)))).tensor
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_distribution_attention() -> None:
    """Attention over outcomes weighted by a distribution (the probabilities stay on the CPU)."""
    torch.manual_seed(0)
    d = Distribution(torch.softmax(torch.randn(7, dtype=F64), -1))
    q, k, v = (torch.randn(3, 7, 4, dtype=F64) for _ in range(3))

    def run(dev: str) -> torch.Tensor:
        fields = [Field(t.to(dev), (d, Vector(4))) for t in (q, k, v)]
        return attention(ScaledSoftmax(0.5), *fields).tensor

    _close(run("cuda"), run("cpu"))


@pytest.mark.parametrize(
    "program, argv",
    [
        ("examples.circuits.__main__", ["--models", "dag,tree"]),
        ("examples.graph_hops", ["--models", "ours"]),
        ("examples.observer", []),
    ],
)
def test_a_program_trains_on_cuda(program: str, argv: list[str], tmp_path: Any) -> None:
    """``--device cuda``: the model and every batch on the GPU, a report and a checkpoint written."""
    import importlib
    import json

    main = importlib.import_module(program).main
    out = tmp_path / "run"
    shared = ["--preset", "tiny", "--steps", "4", "--device", "cuda", "--no-progress", "--out", str(out)]
    assert main([*shared, *argv]) == 0
    assert json.loads((out / "report.json").read_text())["device"] == "cuda"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's inductor imports torch.jit.script_method
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`:UserWarning")
@pytest.mark.filterwarnings("ignore:TensorFloat32 tensor cores:UserWarning")  # Inductor's advice on CUDA
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")  # Dynamo 2.11
def test_the_compiled_darcy_model_on_cuda() -> None:
    """``torch.compile`` (Inductor) on CUDA: the loss and its gradients equal the eager model's (both windows on)."""
    from training.tasks.darcy.config import PRESETS
    from training.tasks.darcy.model import SHAPE
    from training.tasks.operator import build
    from training.tasks.operator.task import objective

    cfg = PRESETS["tiny"].replace(smooth=1.0, channels=2, window=40.0, reader_window=40.0)
    torch.manual_seed(0)
    model = build(cfg, SHAPE).to(CUDA)
    x = torch.rand(3, cfg.points, cfg.points, 1, device=CUDA) + 0.5
    exact = torch.randn_like(x)
    results = []
    for m in (model, torch.compile(model)):
        model.zero_grad()
        loss = objective(m, x, exact, cfg.smooth)  # type: ignore[arg-type]
        loss.backward()  # type: ignore[no-untyped-call]
        results.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (eager, g_eager), (compiled, g_compiled) = results
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-6)
    assert len(g_compiled) == len(g_eager) > 0
    for a, b in zip(g_compiled, g_eager, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)


def test_fourier_attention_and_transforms_match_the_cpu() -> None:
    from instances import Fourier

    torch.manual_seed(0)
    s = Fourier(9)
    keys = Field(torch.randn(3, 9, 4, dtype=F64), (s, Vector(4)))
    values = Field(torch.randn(3, 9, 2, dtype=F64), (s, Vector(2)))
    queries = Field(torch.randn(3, 5, 4, dtype=F64), (Vector(5), Vector(4)))
    want = attention(ScaledSoftmax(0.5), queries, keys, values).tensor
    got = attention(ScaledSoftmax(0.5), queries.to(CUDA), keys.to(CUDA), values.to(CUDA)).tensor
    _close(got, want)
    big = torch.randn(2, 301, dtype=F64)  # the FFT path
    _close(s.basis.positions(big.to(CUDA)[:, :9], -1, 17), s.basis.positions(big[:, :9], -1, 17))


def test_the_operator_model_trains_and_predicts_on_cuda() -> None:
    """The general operator task on CUDA: a step of training and ``predict`` equal the CPU's (float64)."""
    from operators.dataset import samples
    from operators.layout import Axis
    from training.tasks.operator import PRESETS, predict
    from training.tasks.operator.task import OperatorTask

    axes = (Axis("periodic", boundary="zero"), Axis("periodic"))
    x = torch.linspace(0, 1, 17, dtype=F64)[:-1]
    c = torch.randn(12, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    u = c[:, :1, None] * torch.sin(math.pi * x)[:, None] * torch.cos(2 * math.pi * x)[None, :]  # zero at x = 0
    s = samples((u + c[:, 1:, None]).exp(), u, axes)
    cfg = PRESETS["tiny"].replace(dtype="float64", log_input=True, augment="shifts", batch=4)
    tasks = {dev: OperatorTask(cfg, s, {}, torch.device(dev)) for dev in ("cpu", DEVICE)}
    losses = {dev: float(t.train_step().detach()) for dev, t in tasks.items()}
    assert math.isclose(losses["cpu"], losses[DEVICE], rel_tol=1e-9)
    t = torch.linspace(0, 1, 7, dtype=F64)
    want = predict(tasks["cpu"].model, s.inputs[:3], at=(t, t))
    torch.testing.assert_close(predict(tasks[DEVICE].model, s.inputs[:3], at=(t, t)), want, rtol=1e-9, atol=1e-12)
