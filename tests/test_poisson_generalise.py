"""The Poisson operator learner beyond its training law: exact linearity and scale equivariance of the model,
resolution-independent input, and the source families' exact solutions.

References: numpy einsum loops (the separable linear path), ``numpy.polynomial.chebyshev`` (residual of
``Δg = f`` by ``chebder``, boundary values by ``chebgrid2d``, monomials by ``polyval``), ``numpy.sin``
(the sines family), and the model itself at another amplitude / on the cut source (equivariances).
"""

from __future__ import annotations

import numpy as np
import numpy.polynomial.chebyshev as C
import pytest
import torch

from applicative import _lowering
from examples.poisson import generalise as program
from instances import Vector
from models.funcformer import SeparableLinear, odd_part, unit_scaled
from operators.poisson import families, norms
from operators.poisson.solver import PoissonSolver, lobatto_points
from training.tasks.poisson import data, generalise, train
from training.tasks.poisson.config import PRESETS
from training.tasks.poisson.model import PoissonModel

TINY = PRESETS["tiny"].replace(dtype="float64")


def _model(**changes: object) -> PoissonModel:
    torch.manual_seed(0)
    return PoissonModel(TINY.replace(**changes), out_scale=3.0).eval()


def test_separable_linear_against_numpy() -> None:
    torch.manual_seed(1)
    lin = SeparableLinear((5, 4), (7, 6), rank=3, dtype=torch.float64)
    u = torch.randn(2, 5, 4, dtype=torch.float64)
    a, b = lin.a.detach().numpy(), lin.b.detach().numpy()
    want = sum(a[r] @ u.numpy()[i] @ b[r].T for r in range(3) for i in [0])
    got = lin(u).detach().numpy()
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"expected coefficients \(\.\.\., 5, 4\)"):
        lin(torch.zeros(2, 4, 5, dtype=torch.float64))


@pytest.mark.parametrize("correction", [True, False])
def test_scale_equivariance_across_four_decades(correction: bool) -> None:
    """``model(c f) = c model(f)`` for ``c`` in ``1e-2 .. 1e2``, with or without the nonlinear Transformer."""
    model = _model(rank=3, correction=correction)
    f = families.draw("flat", 3, seed=2)
    with torch.no_grad():
        base = model(f)
        for c in np.logspace(-2, 2, 9):
            torch.testing.assert_close(model(c * f), c * base, rtol=1e-10, atol=1e-14 * c)
        assert torch.equal(model(0 * f), torch.zeros_like(base))  # the zero source: zero, not NaN


def test_without_the_transformer_the_model_is_exactly_linear() -> None:
    model = _model(rank=3, correction=False)
    f1, f2 = families.draw("flat", 2, seed=3), families.draw("sines", 2, seed=4)
    with torch.no_grad():
        torch.testing.assert_close(model(2 * f1 - 3 * f2), 2 * model(f1) - 3 * model(f2), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(model(-f1), -model(f1), rtol=1e-12, atol=0)


def test_the_homogeneous_wrapper_is_the_norm_times_the_operator_on_the_unit_sphere() -> None:
    u = torch.randn(3, 4, 4, dtype=torch.float64)
    norm = norms.l2_norm_sq(u).sqrt()
    got = unit_scaled(torch.tanh, u, norm)
    want = torch.stack([torch.tanh(u[i] / norm[i]) * norm[i] for i in range(3)])
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)


def test_the_odd_part_keeps_the_odd_terms_of_a_polynomial() -> None:
    """``odd_part`` of ``1 + 2u + 3u² + 4u³`` is ``2u + 4u³``, element by element (numpy's polynomial)."""
    u = torch.randn(5, 3, 4, dtype=torch.float64)
    got = odd_part(lambda v: 1 + 2 * v + 3 * v**2 + 4 * v**3, u)
    want = np.polynomial.polynomial.polyval(u.numpy(), [0.0, 2.0, 0.0, 4.0])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("odd", [True, False])
def test_the_odd_model_answers_every_real_scale_exactly(odd: bool) -> None:
    """With ``odd`` and ``homogeneous``: ``model(c f) = c model(f)`` for negative ``c`` too; without ``odd`` the
    Transformer's even-order terms break it (so the check can fail)."""
    model = _model(odd=odd)
    f = families.draw("flat", 3, seed=2)
    with torch.no_grad():
        base = model(f)
        for c in (-1e2, -3.0, -1.0, -1e-2):
            if odd:
                torch.testing.assert_close(model(c * f), c * base, rtol=1e-10, atol=1e-14 * abs(c))
            else:
                assert not torch.allclose(model(c * f), c * base, rtol=1e-6, atol=0)
        if not odd:
            return
        plain = _model(odd=False)  # the odd model is the odd part of the plain one with the same weights
        plain.load_state_dict(model.state_dict())
        torch.testing.assert_close(base, (plain(f) - plain(-f)) / 2, rtol=1e-12, atol=1e-15)


def test_finer_sources_are_cut_to_the_model_modes_and_output_has_out_modes() -> None:
    model = _model()
    n, p = TINY.modes, TINY.out_modes
    fine = families.draw("modes32", 2, seed=5)
    assert fine.shape[-1] == 32
    with torch.no_grad():
        got = model(fine)
        assert got.shape == (2, p, p)
        torch.testing.assert_close(got, model(fine[:, :n, :n].clone()), rtol=0, atol=0)
        coarse = fine[:, :8, :8]
        torch.testing.assert_close(model(coarse), model(torch.nn.functional.pad(coarse, (0, n - 8, 0, n - 8))))
    with pytest.raises(ValueError, match=r"PoissonModel: f must have shape \(batch, m, m'\) of source coefficients"):
        model(fine[0])


@pytest.mark.parametrize("name", list(families.FAMILIES))
def test_family_solutions_satisfy_the_equation(name: str) -> None:
    """``Δg = f`` at the solver's interior points by numpy's chebder, ``g = 0`` on the boundary."""
    f = families.draw(name, 2, seed=6)
    g = PoissonSolver(48).solve(f).numpy()
    x = lobatto_points(48)[1:-1]
    t = np.linspace(-1, 1, 7)
    for i in range(2):
        lap = C.chebgrid2d(x, x, C.chebder(g[i], 2, axis=0)) + C.chebgrid2d(x, x, C.chebder(g[i], 2, axis=1))
        want = C.chebgrid2d(x, x, f[i].numpy())
        assert np.abs(lap - want).max() < 1e-8 * np.abs(want).max()
        edges = np.concatenate([C.chebgrid2d([-1.0, 1.0], t, g[i]).ravel(), C.chebgrid2d(t, [-1.0, 1.0], g[i]).ravel()])
        assert np.abs(edges).max() < 1e-11 * np.abs(g[i]).max()


def test_families_are_what_they_say() -> None:
    k = np.arange(16)
    flat, rising = families.draw("flat", 400, 7), families.draw("rising", 400, 7)
    # mean square coefficient per mode: flat is flat, rising grows like ((k+1)(l+1))²
    for f, slope in ((flat, 0.0), (rising, 2.0)):
        power = f.square().mean(0).mean(1).numpy()
        fit = np.polyfit(np.log(k + 1), np.log(power), 1)[0]
        assert fit == pytest.approx(slope, abs=0.25), (slope, fit)
    amp = norms.l2_norm_sq(families.draw("amplitudes", 200, 7)).sqrt()
    assert amp.min() < 0.05 and amp.max() > 20 and amp.min() >= 1e-2 * 0.999 and amp.max() <= 1e2 * 1.001
    assert families.truncation_of_sines(50, 16) < 2e-4
    with pytest.raises(ValueError, match="unknown source family 'nope'"):
        families.draw("nope", 1, 0)


def test_sines_and_polynomials_against_their_formulas() -> None:
    """Re-derive one sample of each from the generator's draws and compare values at random points."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, 20), rng.uniform(-1, 1, 20)
    g = torch.Generator().manual_seed(8)
    a = torch.randn(1, 3, generator=g, dtype=torch.float64).numpy()[0]
    w1, p1 = (torch.rand(1, 3, 1, generator=g, dtype=torch.float64).numpy()[0, :, 0] for _ in range(2))
    w2, p2 = (torch.rand(1, 3, 1, generator=g, dtype=torch.float64).numpy()[0, :, 0] for _ in range(2))
    want = sum(
        a[j] * np.sin((1 + 7 * w1[j]) * x + 2 * np.pi * p1[j]) * np.sin((1 + 7 * w2[j]) * y + 2 * np.pi * p2[j])
        for j in range(3)
    )
    f = families.draw("sines", 1, 8)[0].numpy()
    got = C.chebval2d(x, y, f)
    scale = got.std() / want.std()  # the family is normalised to unit norm
    np.testing.assert_allclose(got, scale * want, atol=3e-4 * np.abs(got).max())

    g = torch.Generator().manual_seed(9)
    mono = torch.randn(1, 2, 3, 16, generator=g, dtype=torch.float64).numpy()[0]
    want = sum(
        np.polynomial.polynomial.polyval(x, mono[0, j]) * np.polynomial.polynomial.polyval(y, mono[1, j])
        for j in range(3)
    )
    got = C.chebval2d(x, y, families.draw("polynomials", 1, 9)[0].numpy())
    np.testing.assert_allclose(got, (got.std() / want.std()) * want, rtol=1e-9, atol=1e-12 * np.abs(want).max())


def test_training_law_excites_every_mode_and_is_seeded() -> None:
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    f = families.training_sources(300, g1, 16)
    assert torch.equal(f, families.training_sources(300, g2, 16))
    torch.testing.assert_close(norms.l2_norm_sq(f), torch.ones(300, dtype=torch.float64))
    top = f[:, 12:, 12:].abs().amax((-2, -1))
    assert (top == 0).sum() == 100  # the decaying third never uses modes >= 12; the others always do
    assert (top > 1e-3).sum() > 120


def test_short_training_of_the_linear_path_generalises(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = PRESETS["tiny"].replace(steps=150, n_train=128, batch=32, lr=3e-2, rank=12, correction=False, eval_every=150)
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes, sources=cfg.sources)
    before = generalise.table(train.build(cfg, splits, torch.device("cpu")).model, 16)
    model = train.train(cfg, splits, tmp_path, progress=False).model
    after = generalise.table(model, 16)
    for name in ("decaying", "flat", "sines", "polynomials", "amplitudes"):
        assert after[name]["mean"] < 0.1 * before[name]["mean"], (name, before[name], after[name])
    assert program.main(["--out", str(tmp_path), "--count", "4"]) == 0


def test_generalise_command_line_errors(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert program.main(["--out", str(tmp_path / "none")]) == 2
    assert "no checkpoint there" in capsys.readouterr().err
    assert program.main(["--out", str(tmp_path), "--count", "0"]) == 2


def test_the_funcformer_alone_reads_and_writes_its_domain_modes() -> None:
    """``domain_modes``: the source zero-padded to ``m x m`` and an ``m``-mode output, heads with keys of ``m``."""
    model = _model(rank=0, domain_modes=TINY.out_modes, key_size=TINY.out_modes)
    m = TINY.out_modes
    assert model.net.sequence.size == m and model.net.features.size == m
    assert model.net.transformer.layers[0].self_attn.key == Vector(m)
    f = families.draw("flat", 2, seed=6)
    with torch.no_grad():
        got = model(f)
        torch.testing.assert_close(got, model(torch.nn.functional.pad(f, (0, m - 16, 0, m - 16))), rtol=0, atol=0)
    assert got.shape == (2, m, m)


@pytest.mark.parametrize("normalise", ["softmax", "linear"])
def test_two_dimensional_domain_funcformer_attends_over_the_square(normalise: str) -> None:
    """``sequence=xy``: the sequence is ``Pairs(X, Y)`` and the features one channel; a softmax lowers to one
    fused call per layer (keys at the product quadrature grid), the linear attention to none (Galerkin)."""
    from unittest import mock

    from applicative import Pairs

    model = _model(rank=0, sequence="xy", normalise=normalise, domain_modes=6, modes=6, out_modes=8)
    assert model.net.sequence == Pairs(model.domain.a, model.domain.b)
    assert model.net.features == Vector(1)
    f = torch.randn(3, 6, 6, dtype=torch.float64)
    with mock.patch.object(_lowering, "fused_attention", wraps=_lowering.fused_attention) as spy:
        with torch.no_grad():
            g = model(f)
    assert spy.call_count == (TINY.depth if normalise == "softmax" else 0)
    assert g.shape == (3, 8, 8)
    with torch.no_grad():  # homogeneous by construction, as the 1D model
        torch.testing.assert_close(model(7.0 * f), 7.0 * g, rtol=1e-10, atol=1e-14)
