"""training.muon against independent references: the singular value decomposition for the orthogonalisation,
``torch.optim.Muon`` and ``torch.optim.Adam`` for the optimiser's steps."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from models.transformer import EncoderLayer
from training.muon import COEFFICIENTS, Muon, hidden_matrices, orthogonalise


def _quintic(s: torch.Tensor, steps: int) -> torch.Tensor:
    a, b, c = COEFFICIENTS
    for _ in range(steps):
        s = a * s + b * s**3 + c * s**5
    return s


@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (3, 6, 6), (2, 3, 9, 4)])
def test_orthogonalise_maps_each_singular_value_by_the_quintic(shape: tuple[int, ...]) -> None:
    # the iteration acts on each singular value of g / ‖g‖_F alone: U p(S / ‖S‖) Vᵀ, p the quintic five times
    g = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    u, s, vt = torch.linalg.svd(g, full_matrices=False)
    s = s / s.norm(dim=-1, keepdim=True)
    expect = u @ torch.diag_embed(_quintic(s, 5)) @ vt
    torch.testing.assert_close(orthogonalise(g), expect, rtol=1e-10, atol=1e-10)
    sv = torch.linalg.svdvals(orthogonalise(g))
    assert sv.min() > 0.5 and sv.max() < 1.3  # near one, not on it


@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 6)])
def test_a_complex_matrix_is_orthogonalised_by_its_own_singular_vectors(shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(1)
    g = torch.complex(torch.randn(*shape, generator=gen), torch.randn(*shape, generator=gen)).to(torch.complex128)
    u, s, vh = torch.linalg.svd(g, full_matrices=False)
    s = s / s.norm(dim=-1, keepdim=True)
    expect = u @ torch.diag_embed(_quintic(s, 5)).to(g.dtype) @ vh
    torch.testing.assert_close(orthogonalise(g), expect, rtol=1e-10, atol=1e-10)


def test_a_modal_weight_steps_as_its_modes_matrices_each() -> None:
    # (in, out, modes): one Muon step of the whole equals a step of each mode's (in, out) matrix alone
    gen = torch.Generator().manual_seed(2)
    w = nn.Parameter(torch.randn(4, 3, 5, dtype=torch.complex64, generator=gen))
    g = torch.randn(4, 3, 5, dtype=torch.complex64, generator=gen)
    mats = [nn.Parameter(w.detach()[..., k].clone()) for k in range(5)]
    w.grad = g.clone()
    for k, m in enumerate(mats):
        m.grad = g[..., k].clone()
    Muon([], [], lr=0.1, modal=[w]).step()
    for k, m in enumerate(mats):
        Muon([], [], lr=0.1, modal=[m]).step()
        torch.testing.assert_close(w.detach()[..., k], m.detach(), rtol=1e-5, atol=1e-6)


def _pair(dtype: torch.dtype) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Linear(8, 2)).to(dtype)
    return model, copy.deepcopy(model)


def _steps(model: nn.Module, opt: torch.optim.Optimizer, n: int) -> None:
    gen = torch.Generator().manual_seed(1)
    for _ in range(n):
        x = torch.randn(16, 3, generator=gen, dtype=next(model.parameters()).dtype)
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()


def test_the_other_weights_step_as_torch_adam() -> None:
    ours, theirs = _pair(torch.float64)
    opt = Muon([], ours.parameters(), lr=1e-2, betas=(0.85, 0.99), weight_decay=1e-3)
    ref = torch.optim.Adam(theirs.parameters(), lr=1e-2, betas=(0.85, 0.99), weight_decay=1e-3)
    _steps(ours, opt, 5)
    _steps(theirs, ref, 5)
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-12)


def test_the_matrices_step_as_torch_muon() -> None:
    # torch's iterates in bfloat16, ours in float32: the same steps to bfloat16's precision, on gradients whose
    # singular values are not small (the iteration multiplies a small one's error by up to 3.4 a step)
    gen = torch.Generator().manual_seed(0)
    ours = nn.Parameter(torch.randn(8, 6, generator=gen))
    theirs = nn.Parameter(ours.detach().clone())
    opt = Muon([ours], [], lr=1e-2, momentum=0.9, weight_decay=0.1)
    ref = torch.optim.Muon([theirs], lr=1e-2, momentum=0.9, weight_decay=0.1, adjust_lr_fn="match_rms_adamw")
    before = theirs.detach().clone()
    for _ in range(3):
        g = torch.randn(8, 6, generator=gen)
        ours.grad, theirs.grad = g.clone(), g.clone()
        opt.step()
        ref.step()
    assert (ours - theirs).norm() < 3e-2 * (theirs - before).norm()


def test_a_weight_of_more_axes_is_its_matrix() -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4, 3, 2, dtype=torch.float64))
    flat = nn.Parameter(w.detach().reshape(4, 6).clone())
    g = torch.randn(4, 3, 2, dtype=torch.float64)
    w.grad, flat.grad = g.clone(), g.reshape(4, 6).clone()
    Muon([w], [], lr=0.1).step()
    Muon([flat], [], lr=0.1).step()
    torch.testing.assert_close(w.detach().reshape(4, 6), flat.detach(), rtol=1e-6, atol=1e-6)


def test_hidden_matrices_are_the_layers_weights() -> None:
    from applicative import Vector

    layer = EncoderLayer(Vector(8), Vector(16), heads=2)
    model = nn.Sequential(nn.Linear(3, 8), layer, nn.Linear(8, 2))
    found = hidden_matrices(model, (EncoderLayer,))
    expect = [p for p in layer.parameters() if p.ndim == 2]
    assert [id(p) for p in found] == [id(p) for p in expect] and len(found) == 4


def test_flat_matrices_are_refused() -> None:
    with pytest.raises(ValueError, match="two or more axes"):
        Muon([nn.Parameter(torch.zeros(3))], [], lr=1e-2)
    with pytest.raises(ValueError, match="complex"):
        Muon([nn.Parameter(torch.zeros(3, 3, dtype=torch.complex64))], [], lr=1e-2)


def test_a_complex_weight_steps_as_torch_adam_steps_it() -> None:
    gen = torch.Generator().manual_seed(0)
    ours = nn.Parameter(torch.randn(3, 4, dtype=torch.complex128, generator=gen))
    theirs = nn.Parameter(ours.detach().clone())
    opt, ref = Muon([], [ours], lr=1e-2), torch.optim.Adam([theirs], lr=1e-2)
    for _ in range(4):
        g = torch.randn(3, 4, dtype=torch.complex128, generator=gen)
        ours.grad, theirs.grad = g.clone(), g.clone()
        opt.step()
        ref.step()
    torch.testing.assert_close(ours.detach(), theirs.detach(), rtol=1e-12, atol=1e-12)


def test_the_operator_model_steps_its_layers_matrices_by_muon_and_an_old_run_by_adam() -> None:
    from operators.dataset import samples
    from operators.layout import Axis
    from training.tasks.operator import PRESETS
    from training.tasks.operator.model import config_of
    from training.tasks.operator.task import OperatorTask

    gen = torch.Generator().manual_seed(0)
    train = samples(torch.randn(6, 16, generator=gen), torch.randn(6, 16, generator=gen), (Axis("periodic"),))
    cfg = PRESETS["tiny"].replace(steps=3, batch=2, reader="fourier")
    task = OperatorTask(cfg, train, {}, torch.device("cpu"))
    assert isinstance(task.optimiser, Muon)
    layers = [m for m in task.model.modules() if isinstance(m, EncoderLayer)]
    expect = [p for m in layers for p in m.parameters() if p.ndim == 2]
    assert {id(p) for p in task.optimiser.param_groups[0]["params"]} == {id(p) for p in expect} and expect
    task.train_step()
    adam = OperatorTask(cfg.replace(optimiser="adam"), train, {}, torch.device("cpu"))
    assert type(adam.optimiser) is torch.optim.Adam
    # a checkpoint written before the field trained with Adam: it resumes with Adam
    fields = {k: v for k, v in cfg.__dict__.items() if k != "optimiser"}
    assert config_of(fields).optimiser == "adam"


def test_the_one_cycle_schedule_moves_adams_momentum_and_holds_muons() -> None:
    from training.schedule import OneCycle, one_cycle_momentum, step_progress

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Linear(8, 8), nn.Linear(8, 2))
    opt = Muon([model[1].weight], [p for p in model.parameters() if p is not model[1].weight], lr=1e-2)
    schedule = OneCycle(opt, 1e-2, 10, 0.3)
    for step in range(1, 6):
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        opt.step()
        schedule.step()
        muon, adam = opt.param_groups
        assert muon["momentum"] == 0.95
        assert adam["betas"][0] == pytest.approx(one_cycle_momentum(*step_progress(step, 10, 0.3)))
        assert muon["lr"] == adam["lr"]
    assert adam["betas"][0] < 0.95
