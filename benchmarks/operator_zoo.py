"""One table of the field's operator problems: the Funcformer against neuraloperator's FNO on every row.

Rows: **Poisson** (``Δu = f`` on ``[-1, 1]²``, ``u = 0`` on the boundary; the project's exact spectral solutions),
**Darcy** in both coefficient families (``-∇·(a∇u) = 1`` on ``[0, 1]²``; log-normal and the FNO paper's piecewise
``a ∈ {3, 12}``), **Burgers** (1D periodic, ``u0 ↦ u(·, 1)``, at ``ν = 0.1``, ``0.01`` and ``0.001``), Burgers'
**trajectory** (``u0 ↦ u(t, x)`` on a ``(T, X)`` grid, ``ν = 0.01``, sixteen states as output channels, as public
time-dependent sets store them), **KdV** (``u_t + u u_x + δ² u_xxx = 0``: dispersion) and **Navier--Stokes** in
vorticity form on the unit torus (``ν = 1e-3``, ten states in, the next out, rolled out over the rest of the
trajectory). Every row's data are generated here, seeded (:mod:`operators.poisson`, :mod:`operators.darcy`,
:mod:`operators.burgers`, :mod:`operators.kdv`, :mod:`operators.navier_stokes`: solvers checked against exact or
refined solutions), and sampled as a user's files would be; both models read the same samples.

* The Funcformer: :class:`training.tasks.operator.OperatorModel` (Chebyshev series on bounded axes, Fourier on
  periodic ones) with the row's settings, trained as the operator config trains it (Muon on its hidden matrices).
* The FNO (``--peer plain``, the default): neuraloperator's ``FNO`` configured the ordinary way
  (:class:`training.tasks.operator.peers.PlainFNOTask`: its defaults, the relative L² loss, a cosine schedule at a
  swept rate, AdamW or Muon on its channel mixers and spectral weights, raw or normalised data:
  :func:`fno_settings`), its width from the Funcformer's best setting's real weights (within 10%; a complex weight
  counts twice), on the same batches. ``--peer recipe``: by its authors' recipe for each problem inside this
  project's habits (:mod:`training.tasks.operator.fno`: standardised data, the squared loss, five halvings), the
  peer of earlier tables, 4 times off the plain one on Burgers. Trajectory rows train both by teacher
  forcing, or with ``--unroll K`` (recipe peer) both on a loss unrolled over ``K`` steps.

A second peer (``--unet``): a U-Net (:class:`training.tasks.operator.unet.UNetTask`) of the same parameter count,
trained as the plain FNO is, with as many settings, at equal steps.

Equal tuning effort: each model tries the same number of configurations (``--configs``, at most four, in order;
:func:`funcformer_settings`, :func:`fno_settings`), each listed with its figure; the best of each is compared.
Budgets: **equal steps** and **equal wall clock** (the faster model trained again, from scratch, with as many steps
as fit in the slower one's training time, the two models' times per step measured in alternating bursts so that a
changing load does not tilt the budget); held-out errors along the way are the training curves (saved with
``--json``). **Resolution**: every trained model is evaluated with no retraining on the same held-out functions at
twice the resolution. **Baseline**: the ``linear`` column is the least-squares linear map on the same samples
(:func:`training.tasks.operator.linear.least_squares`: per Fourier mode on periodic rows, dense otherwise);
``--residual`` trains both models on what it leaves instead (the composites map + model, rows of pairs only).

The last line is the worst Funcformer/FNO ratio over the Burgers and Navier--Stokes rows and both budgets
(target <= 0.9; every row's ratios are printed above it).

    python benchmarks/operator_zoo.py --quick                   # every row, small: a few minutes
    python benchmarks/operator_zoo.py --rows burgers --steps 2000 --json runs/zoo-burgers.json
    python benchmarks/operator_zoo.py --rows navier-stokes --unroll 3 --device cuda   # both trained on rollouts

Needs the ``bench`` extra (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from models.operator import sizes
from operators.dataset import Samples, samples
from operators.layout import Axis
from training import UserError
from training.cli import Parser, bounded, output_file, run_cli, threads, writable_dir
from training.denormals import flush_denormals
from training.tasks.operator import PRESETS, Config
from training.tasks.operator import fno as peer
from training.tasks.operator.linear import least_squares
from training.tasks.operator.peers import Plain, PlainFNOTask
from training.tasks.operator.rollout import UnrolledTask, horizon_errors, rollout, windows
from training.tasks.operator.task import PROBE, OperatorTask, check_fit, collapse, errors
from training.tasks.operator.unet import UNetTask

ROWS = (
    "poisson",
    "darcy-lognormal",
    "darcy-piecewise",
    "burgers",
    "burgers-0.01",
    "burgers-0.001",
    "burgers-trajectory",
    "kdv",
    "navier-stokes",
)
#: the nonlinear rows, where the ratio target is
TARGETED = ("burgers", "burgers-0.01", "burgers-0.001", "burgers-trajectory", "kdv", "navier-stokes")


@dataclass(frozen=True)
class Sizes:
    """How big a row is: samples, resolution, steps."""

    train: int
    test: int
    points: int
    steps: int
    batch: int


@dataclass
class Problem:
    """A row's data and its two models' settings."""

    name: str
    train: Samples
    tests: dict[str, Samples]  # "test" at the training resolution, "fine" at twice it
    funcformer: Config
    recipe: peer.Recipe
    rollout: tuple[Tensor, Tensor, int] | None = None  # test and fine trajectories, the window (Navier--Stokes)
    paper: str = ""
    trajectories: Tensor | None = None  # the training trajectories (Navier--Stokes): for an unrolled loss
    unroll: int = 0  # steps of the unrolled loss on the trajectories (0: teacher forcing)
    residual: Tensor | None = None  # the least-squares map's per-sample test errors, when the models learn its rest


def on_residual(p: Problem) -> Problem:
    """``p`` with both models trained on what the least-squares map ``L`` leaves, ``y - L x``: the composites
    ``L + model``. Scored on ``y`` on the training grid, where ``L`` is fitted: a residual's relative error times
    ``‖y - L x‖ / ‖y‖``, the map's own error on that sample."""
    if p.rollout is not None:
        raise UserError(f"--residual: the {p.name} row rolls out; it applies to the rows of pairs")
    fit = least_squares(p.train)
    test = p.tests["test"]

    def rest(s: Samples) -> Samples:
        return samples(s.inputs, s.outputs - fit(s.inputs), s.axes, where=f"{s.where}, less least squares")

    tests = {"test": rest(test), "fine": rest(test)}  # "fine" unused: the map is fitted on one grid
    return replace(p, name=f"{p.name}+lsq", train=rest(p.train), tests=tests, residual=fit.errors(test))


def _grid(fun: Tensor, points: int, lo: float = -1.0) -> Tensor:
    """A 2D Chebyshev series ``(N, n, n)`` on ``[lo, 1]²`` at the nodes ``i/(P-1)`` of that square: ``(N, P, P)``."""
    from instances.chebyshev import evaluate_2d

    t = torch.linspace(-1, 1, points, dtype=torch.float64)
    return evaluate_2d(fun, t, t)


def poisson(s: Sizes, seed: int) -> Problem:
    from operators.poisson import sources as data

    def pairs(count: int, points: int, split: int) -> tuple[Tensor, Tensor]:
        d = data.make(data.IN_DISTRIBUTION, count, 3 * seed + split)
        return _grid(d.f, points), _grid(d.g, points)

    axis = Axis("nodes", -1.0, 1.0, "zero")
    axes = (axis, axis)
    train = samples(*pairs(s.train, s.points, 0), axes, where="poisson train")
    tests = {
        "test": samples(*pairs(s.test, s.points, 1), axes, where="poisson test"),
        "fine": samples(*pairs(s.test, 2 * s.points - 1, 1), axes, where="poisson fine"),
    }
    return Problem("poisson", train, tests, PRESETS["default"], peer.DARCY)


def darcy(family: str) -> Callable[[Sizes, int], Problem]:
    def make(s: Sizes, seed: int) -> Problem:
        from operators.darcy import data

        splits = data.splits(family, s.train, s.test, s.points, seed)  # type: ignore[arg-type]
        fine = data.sample(family, s.test, 2 * s.points - 1, 2 * seed + 1)  # type: ignore[arg-type]
        axis = Axis("nodes", boundary="zero")
        axes = (axis, axis)
        train = samples(splits.train.a, splits.train.u, axes, where=f"darcy {family} train")
        tests = {
            "test": samples(splits.test.a, splits.test.u, axes, where=f"darcy {family} test"),
            "fine": samples(fine.a, fine.u, axes, where=f"darcy {family} fine"),
        }
        paper = "FNO 1.08e-2 (piecewise, 85², 1000 samples)" if family == "piecewise" else ""
        return Problem(f"darcy-{family}", train, tests, PRESETS["darcy"], peer.DARCY, paper=paper)

    return make


@dataclass(frozen=True)
class Source:
    """Where the Burgers and Navier--Stokes data are solved (``--device``) and kept between runs (``--cache``)."""

    device: str = "cpu"
    cache: Path | None = None


SOURCE: list[Source] = [Source()]


def burgers(s: Sizes, seed: int) -> Problem:
    from operators import burgers as b

    fine_solve, src = 4 * s.points, SOURCE[-1]
    kw: dict[str, Any] = {"fine": fine_solve, "cache": src.cache, "device": src.device}
    tr = b.dataset(s.train, s.points, 2 * seed, **kw)
    te = b.dataset(s.test, s.points, 2 * seed + 1, **kw)
    te2 = b.dataset(s.test, 2 * s.points, 2 * seed + 1, **kw)
    axes = (Axis("periodic"),)
    train = samples(tr.u0, tr.u1, axes, where="burgers train")
    tests = {"test": samples(te.u0, te.u1, axes, where="burgers test")}
    tests["fine"] = samples(te2.u0, te2.u1, axes, where="burgers fine")
    cfg = PRESETS["default"].replace(modes=33, augment="shifts")
    return Problem("burgers", train, tests, cfg, peer.BURGERS, paper="FNO 2.5e-3 (1024 points, the authors' code)")


def _periodic_pairs(name: str, make: Callable[[int, int, int], tuple[Tensor, Tensor]], s: Sizes, seed: int) -> Problem:
    """A 1D periodic row of pairs from ``make(count, points, seed)`` (the same functions at twice the points for
    the ``fine`` test), with the Burgers row's settings."""
    axes = (Axis("periodic"),)
    train = samples(*make(s.train, s.points, 2 * seed), axes, where=f"{name} train")
    tests = {
        "test": samples(*make(s.test, s.points, 2 * seed + 1), axes, where=f"{name} test"),
        "fine": samples(*make(s.test, 2 * s.points, 2 * seed + 1), axes, where=f"{name} fine"),
    }
    cfg = PRESETS["default"].replace(modes=33, augment="shifts")
    return Problem(name, train, tests, cfg, peer.BURGERS)


def burgers_at(nu: float) -> Callable[[Sizes, int], Problem]:
    """Burgers at viscosity ``nu``: solved on :func:`operators.burgers.solve_grid` of the row's points, the initial
    field on the modes of 1024 nodes (the same inputs at every viscosity)."""

    def make(s: Sizes, seed: int) -> Problem:
        from operators import burgers as b

        src, solve = SOURCE[-1], b.solve_grid(nu, s.points)
        kw: dict[str, Any] = {"nu": nu, "fine": solve, "modes": b.band(4 * s.points), "cache": src.cache}

        def pairs(count: int, points: int, sd: int) -> tuple[Tensor, Tensor]:
            d = b.dataset(count, points, sd, device=src.device, **kw)
            return d.u0, d.u1

        return _periodic_pairs(f"burgers-{nu:g}", pairs, s, seed)

    return make


def burgers_trajectory(s: Sizes, seed: int) -> Problem:
    """``u0 ↦ u(t, x)`` at ``ν = 0.01``: sixteen states at ``t = 1/16 … 1`` as output channels."""
    from operators import burgers as b

    src = SOURCE[-1]
    kw: dict[str, Any] = {"nu": 0.01, "steps": 16, "fine": b.solve_grid(0.01, s.points), "cache": src.cache}
    kw |= {"modes": b.band(4 * s.points), "device": src.device}

    def pairs(count: int, points: int, sd: int) -> tuple[Tensor, Tensor]:
        u = b.trajectories(count, points, sd, **kw)
        return u[:, 0], u[:, 1:].movedim(1, -1)

    return _periodic_pairs("burgers-trajectory", pairs, s, seed)


def kdv(s: Sizes, seed: int) -> Problem:
    """KdV's ``u0 ↦ u(·, T)`` (:mod:`operators.kdv`'s defaults: solved on 512 nodes, the lab note's accuracy)."""
    from operators import kdv as k

    src = SOURCE[-1]

    def pairs(count: int, points: int, sd: int) -> tuple[Tensor, Tensor]:
        d = k.dataset(count, points, sd, fine=max(512, points), cache=src.cache, device=src.device)
        return d.u0, d.u1

    return _periodic_pairs("kdv", pairs, s, seed)


WINDOW = 10


def navier_stokes(s: Sizes, seed: int) -> Problem:
    from operators import navier_stokes as ns

    steps = 2 * WINDOW  # ten states in, ten rolled out
    modes = min(ns.MODES, (s.points - 1) // 3)  # the initial field's modes: the same functions at both resolutions
    src = SOURCE[-1]
    kw: dict[str, Any] = {"steps": steps - 1, "modes": modes, "cache": src.cache, "device": src.device}
    tr = ns.dataset(s.train, s.points, 2 * seed, **kw)
    te = ns.dataset(s.test, s.points, 2 * seed + 1, **kw)
    te2 = ns.dataset(s.test, 2 * s.points, 2 * seed + 1, **kw)
    axes = (Axis("periodic"), Axis("periodic"))
    train = windows(tr, WINDOW, axes, where="navier-stokes train")
    tests = {"test": windows(te, WINDOW, axes, where="navier-stokes test")}
    tests["fine"] = windows(te2, WINDOW, axes, where="navier-stokes fine")
    cfg = PRESETS["default"].replace(modes=25, smooth=0.0)
    paper = "FNO-2D 1.28e-2 (T=50, 1000 samples)"
    return Problem("navier-stokes", train, tests, cfg, peer.NAVIER_STOKES, (te, te2, WINDOW), paper, tr)


MAKERS: dict[str, Callable[[Sizes, int], Problem]] = {
    "poisson": poisson,
    "darcy-lognormal": darcy("lognormal"),
    "darcy-piecewise": darcy("piecewise"),
    "burgers": burgers,
    "burgers-0.01": burgers_at(0.01),
    "burgers-0.001": burgers_at(0.001),
    "burgers-trajectory": burgers_trajectory,
    "kdv": kdv,
    "navier-stokes": navier_stokes,
}
FULL = {
    "poisson": Sizes(1000, 100, 33, 2000, 32),
    "darcy-lognormal": Sizes(1000, 100, 33, 2000, 32),
    "darcy-piecewise": Sizes(1000, 100, 33, 2000, 32),
    "burgers": Sizes(1000, 200, 256, 2000, 20),
    "burgers-0.01": Sizes(1000, 200, 256, 2000, 20),
    "burgers-0.001": Sizes(1000, 200, 256, 2000, 20),
    "burgers-trajectory": Sizes(1000, 200, 256, 2000, 20),
    "kdv": Sizes(1000, 200, 256, 2000, 20),
    "navier-stokes": Sizes(200, 50, 64, 2000, 20),
}
QUICK = {
    "poisson": Sizes(64, 8, 17, 30, 8),
    "darcy-lognormal": Sizes(64, 8, 17, 30, 8),
    "darcy-piecewise": Sizes(64, 8, 17, 30, 8),
    "burgers": Sizes(32, 8, 64, 30, 8),
    "burgers-0.01": Sizes(32, 8, 64, 30, 8),
    "burgers-0.001": Sizes(32, 8, 64, 30, 8),
    "burgers-trajectory": Sizes(32, 8, 64, 30, 8),
    "kdv": Sizes(32, 8, 64, 30, 8),
    "navier-stokes": Sizes(8, 4, 16, 30, 8),
}


@dataclass
class Run:
    """One model trained once: its curve ``(step, seconds, held-out error)``, final errors and seconds."""

    model: str
    setting: str
    parameters: int
    steps: int
    seconds: float = 0.0
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    errors: dict[str, float] = field(default_factory=dict)
    #: the step where its predictions stopped depending on the input (:func:`~training.tasks.operator.task.collapse`)
    #: and the run was stopped, if it did
    collapsed: int | None = None


Learner = tuple[Callable[[], Tensor], Callable[[Samples], Tensor], Callable[[Tensor], Tensor], int]


def _funcformer(cfg: Config, p: Problem, device: torch.device) -> Learner:
    k, w, axes = p.unroll, WINDOW, p.train.axes
    if k and p.trajectories is not None:
        task: OperatorTask = UnrolledTask(cfg, p.trajectories, axes, w, k, device)
    else:
        task = OperatorTask(cfg, p.train, {}, device)
    model = task.model

    def step(x: Tensor) -> Tensor:
        return model.values(model(x.to(device)), tuple(x.shape[1:-1])).double().cpu()

    return task.train_step, lambda s: errors(model, s), step, peer.count(model)


def _plain(cfg: Config, plain: Plain, p: Problem, params: int, device: torch.device) -> Learner:
    task = PlainFNOTask(cfg, plain, p.train, params, device)
    return task.train_step, task.errors, task.predict, task.parameters


def _unet(cfg: Config, plain: Plain, p: Problem, params: int, device: torch.device) -> Learner:
    task = UNetTask(cfg, plain, p.train, params, device)
    return task.train_step, task.errors, task.predict, task.parameters


#: the U-Net's settings, in the order tried (the plain FNO's, the data standardised first: it trains slowly on raw)
UNET_SETTINGS = (Plain(data="standardised"), Plain(), Plain(data="standardised", lr=3e-3), Plain(lr=2e-3))


def _fno(cfg: Config, recipe: peer.Recipe, p: Problem, params: int, device: torch.device) -> Learner:
    k, w, axes = p.unroll, WINDOW, p.train.axes
    if k and p.trajectories is not None:
        task: peer.FNOTask = peer.UnrolledFNOTask(cfg, recipe, p.trajectories, axes, w, k, params, device)
    else:
        task = peer.FNOTask(cfg, recipe, p.train, params, device)
    return task.train_step, task.errors, task.predict, task.parameters


def _score(p: Problem, evaluate: Callable[[Samples], Tensor], step: Callable[[Tensor], Tensor]) -> dict[str, float]:
    """Held-out errors: per test set; for a trajectory row, the rollout's relative L² over the horizon instead."""
    if p.residual is not None:
        return {"test": float((evaluate(p.tests["test"]) * p.residual).mean()), "fine": float("nan")}
    if p.rollout is None:
        return {name: float(evaluate(s).mean()) for name, s in p.tests.items()}
    te, te2, w = p.rollout
    axes = p.train.axes
    out = {}
    for name, traj in (("test", te), ("fine", te2)):
        pred = rollout(step, traj[:, :w], traj.shape[1] - w, dims=2)
        out[name] = float(horizon_errors(pred, traj[:, w:, ..., None], axes)[1].mean())
    return out


def linear(p: Problem) -> float:
    """The held-out error of the least-squares linear map (the rollout's, on a trajectory row): the baseline."""
    if p.residual is not None:
        return float(p.residual.mean())
    fit = least_squares(p.train)
    if p.rollout is None:
        return float(fit.errors(p.tests["test"]).mean())
    te, _, w = p.rollout
    pred = rollout(fit, te[:, :w], te.shape[1] - w, dims=2)
    return float(horizon_errors(pred, te[:, w:, ..., None], p.train.axes)[1].mean())


def train(make: Callable[[], Learner], p: Problem, steps: int, evals: int, label: str, setting: str) -> Run:
    """Train from scratch for ``steps``; the clock counts the steps only (not the evaluations)."""
    restore = flush_denormals()
    try:
        step_fn, evaluate, predict, params = make()
        run = Run(label, setting, params, steps)
        marks = {round(steps * (i + 1) / evals) for i in range(evals)}
        for i in range(1, steps + 1):
            t0 = time.perf_counter()
            step_fn()
            run.seconds += time.perf_counter() - t0
            if i in marks:
                score = _score(p, evaluate, predict)
                run.curve.append((i, run.seconds, score["test"]))
                print(
                    f"    {label} [{setting}] step {i}/{steps}, {run.seconds:.0f}s: held-out {score['test']:.3e}",
                    flush=True,
                )
                with torch.no_grad():
                    why = collapse(predict(p.train.inputs[:PROBE]), p.train.outputs[:PROBE])
                if why is not None:
                    print(f"    {label} [{setting}] collapsed at step {i}: {why}; stopped", flush=True)
                    run.collapsed = i
                    break
        run.errors = _score(p, evaluate, predict)
        return run
    finally:
        restore()


def per_step(makes: list[Callable[[int], Learner]], steps: int, rounds: int = 5, burst: int = 10) -> list[float]:
    """Seconds per training step of each learner (built for ``steps``), timed in alternating bursts after a
    warm-up: medians over ``rounds``. A load that changes while the models train does not tilt the equal-clock
    budget, as whole-run times measured minutes apart can."""
    restore = flush_denormals()
    try:
        learners = [make(steps)[0] for make in makes]
        for step in learners:
            for _ in range(3):
                step()
        times: list[list[float]] = [[] for _ in learners]
        for _ in range(rounds):
            for i, step in enumerate(learners):
                t0 = time.perf_counter()
                for _ in range(burst):
                    step()
                times[i].append((time.perf_counter() - t0) / burst)
        return [sorted(t)[len(t) // 2] for t in times]
    finally:
        restore()


def fitted(cfg: Config, train: Samples) -> Config:
    """``cfg`` with no more modes than the grid determines (a small ``--quick`` grid), checked like a user's run."""
    grid = train.grid
    fits = [m for m in range(2, cfg.modes + 1) if all(n <= p for n, p in zip(sizes(train.axes, m), grid, strict=True))]
    out = cfg.replace(modes=max(fits, default=cfg.modes))
    check_fit(out, train)
    return out


#: the operator config's sizes and layer norms before six layers of 28 without norms became the default (the lab
#: note ``docs/notes/2026-11-30-six-layers.md``): four layers of 36 with norms, 8–11% more weights
FOUR_NORMED: dict[str, Any] = {"depth": 4, "width": 36, "hidden": 108, "norms": True}

#: sixteen layers of which every fourth attends (``attend_every=4``), MLPs as wide as the state (28): the default's
#: weights (the attentions left out and the narrower MLPs pay for ten more layers) and its time per step; at equal
#: steps 11–17% better than the default at ν = 0.001 and 0.01, on KdV and the trajectory map (two seeds each), 8%
#: worse at ν = 0.1 (one seed): the lab note ``docs/notes/2026-11-30-sparse-attention.md``
DEEP_SPARSE: dict[str, Any] = {"depth": 16, "hidden": 28, "attend_every": 4}


#: the axial form's second setting: no more than 8 modes per axis. Its attention costs ``n_x n_y (n_x + n_y)`` per
#: layer; on Navier--Stokes 8 modes instead of the row's 25 were as good at equal steps on seed 0 (6.518e-3 against
#: 6.541e-3; 0.91 of the 16-mode FNO over three seeds against 0.87, as at 12 and 16) at 0.84 of an FNO step instead
#: of 4.95: the best at equal clock (the lab note ``docs/notes/2026-11-30-modes.md``). The FNO is tried with the same
#: cut (:func:`fno_settings`)
AXIAL_MODES = 8


def funcformer_settings(base: Config, axes: tuple[Axis, ...]) -> list[tuple[str, Config]]:
    """The Funcformer's settings, in the order tried. Where every axis is periodic: the exact Fourier reader with the
    relative loss (the best measured on every periodic row); then on two axes the same in the axial form (its
    default: interleaved, as many functions handed along as the state is wide; Navier--Stokes' best at equal steps,
    6.541e-3; 16 functions, 7.358e-3; composed, 1.251e-2), the same at no more than :data:`AXIAL_MODES` modes (the
    best at equal clock), and the row's own; on one axis the first without the learned position (no weight depends
    on where it acts), then both with sixteen layers of which every fourth attends (:data:`DEEP_SPARSE`). Elsewhere:
    the row's, and the same with the earlier four layers of 36 with norms; the relative loss, with each."""
    if all(a.boundary.periodic for a in axes):
        tuned = base.replace(reader="fourier", loss="relative")
        first = ("fourier reader, relative loss", tuned)
        if len(axes) == 2:
            axial = tuned.replace(axial=True)  # as many functions as the state is wide: the axial form's default
            return [
                first,
                ("fourier reader, relative loss, axial", axial),
                (
                    f"fourier reader, relative loss, axial, {AXIAL_MODES} modes",
                    axial.replace(modes=min(axial.modes, AXIAL_MODES)),
                ),
                ("recipe", base),
            ]
        sparse = tuned.replace(**DEEP_SPARSE)
        return [
            first,
            ("fourier reader, relative loss, no position", tuned.replace(positional=False)),
            ("fourier reader, relative loss, sixteen layers attending every fourth", sparse),
            (
                "fourier reader, relative loss, sixteen layers attending every fourth, no position",
                sparse.replace(positional=False),
            ),
        ]
    relative = base.replace(loss="relative")
    return [
        ("recipe", base),
        ("four layers of 36 with norms", base.replace(**FOUR_NORMED)),
        ("relative loss", relative),
        ("relative loss, four layers of 36 with norms", relative.replace(**FOUR_NORMED)),
    ]


#: the plain FNO's settings, its strongest first. Adam (neuraloperator's ordinary configuration: cosine, the
#: relative loss) at the rates swept on the zoo's rows, where its authors' ``1e-3`` was never the best
#: (``docs/notes/2026-11-30-four-settings.md``): standardised data at ``4e-3`` and raw data at ``8e-3``, the best of
#: four on every row sized to the six-layer Funcformer. And Muon on its channel mixers and spectral weights
#: (:attr:`Plain.optimiser`), as the Funcformer is trained by default, so that the comparison is not of
#: optimisers: at ν = 0.001 it took the FNO from 2.825e-2 to 1.725e-2 (raw data at ``8e-3``; on the mixers alone
#: 2.006e-2), on KdV from 9.24e-2 to 7.31e-2 (the lab note ``docs/notes/2026-12-01-muon.md``)
FNO_SETTINGS = (
    Plain(optimiser="muon", lr=8e-3),
    Plain(optimiser="muon", data="standardised", lr=4e-3),
    Plain(lr=8e-3),
    Plain(data="standardised", lr=4e-3),
)


def fno_settings(axes: tuple[Axis, ...]) -> tuple[Plain, ...]:
    """The FNO's settings on a row: :data:`FNO_SETTINGS`; on two periodic axes the standardised ones replaced by the
    same cut the Funcformer's axial form is tried with, :data:`AXIAL_MODES` modes (the same frequencies, up to 4),
    raw data at ``8e-3`` (Navier--Stokes' best rate), with either optimiser. There, at equal weights and with Adam,
    it reached 6.201e-3 and 6.129e-3 against 7.346e-3 and 7.502e-3 at 16 modes (two seeds), at about twice the time
    per step: the same weights make it wider."""
    if len(axes) == 2 and all(a.boundary.periodic for a in axes):
        cut = [replace(p, data="raw", lr=8e-3, modes=AXIAL_MODES) for p in FNO_SETTINGS if p.data == "standardised"]
        return tuple(p for p in FNO_SETTINGS if p.data == "raw") + tuple(cut)
    return FNO_SETTINGS


def _best(tried: list[tuple[Run, Callable[[int], Learner]]]) -> tuple[Run, Callable[[int], Learner]]:
    """The setting with the lowest held-out error, and how to train it again."""
    return min(tried, key=lambda t: t[0].errors["test"])


def compare(
    p: Problem, s: Sizes, configs: int, evals: int, device: torch.device, plain: bool = True, unet: bool = False
) -> dict[str, Any]:
    """Both models on one row: each setting at equal steps, the best of each, then the faster again at the slower's
    clock. ``plain``: the FNO configured the ordinary way (:func:`fno_settings`), else by the row's recipe.
    ``unet``: the U-Net too, its settings (:data:`UNET_SETTINGS`) at equal steps."""
    base = fitted(p.funcformer.replace(steps=s.steps, batch=s.batch, eval_every=max(1, s.steps)), p.train)
    ff_settings = funcformer_settings(base, p.train.axes)[:configs]
    if plain and (p.unroll or p.residual is not None):
        raise UserError("--peer plain trains on pairs: --unroll and --residual take --peer recipe")
    tried: dict[str, list[tuple[Run, Callable[[int], Learner]]]] = {"funcformer": [], "FNO": []}
    for name, cfg in ff_settings:

        def ff(steps: int, cfg: Config = cfg) -> Learner:
            return _funcformer(cfg.replace(steps=steps), p, device)

        tried["funcformer"].append((train(lambda: ff(s.steps), p, s.steps, evals, "funcformer", name), ff))
    # the peers are sized to the Funcformer they are compared with: its best setting (settings differ in size: the
    # Fourier reader has no weights of its own)
    params = _best(tried["funcformer"])[0].parameters
    if plain:
        for setting in fno_settings(p.train.axes)[:configs]:

            def fo(steps: int, setting: Plain = setting) -> Learner:
                return _plain(base.replace(steps=steps), setting, p, params, device)

            tried["FNO"].append((train(lambda: fo(s.steps), p, s.steps, evals, "FNO", setting.label()), fo))
    else:
        for name, recipe in [("recipe", p.recipe), ("lr/2", replace(p.recipe, lr=p.recipe.lr / 2))][:configs]:

            def fr(steps: int, recipe: peer.Recipe = recipe) -> Learner:
                return _fno(base.replace(steps=steps), recipe, p, params, device)

            tried["FNO"].append((train(lambda: fr(s.steps), p, s.steps, evals, "FNO", name), fr))
    if unet:
        tried["U-Net"] = []
        for setting in UNET_SETTINGS[:configs]:

            def un(steps: int, setting: Plain = setting) -> Learner:
                return _unet(base.replace(steps=steps), setting, p, params, device)

            tried["U-Net"].append((train(lambda: un(s.steps), p, s.steps, evals, "U-Net", setting.label()), un))
    best = {k: _best(v) for k, v in tried.items()}
    (ff_run, ff_make), (fno_run, fno_make) = best["funcformer"], best["FNO"]
    if abs(fno_run.parameters / ff_run.parameters - 1) > 0.1:
        print(f"  note: FNO {fno_run.parameters} parameters against {ff_run.parameters}: outside 10% (width steps)")
    speeds = per_step([ff_make, fno_make], s.steps)
    print(f"  seconds per step, alternating bursts: Funcformer {speeds[0]:.4f}, FNO {speeds[1]:.4f}", flush=True)
    runs = [(ff_run, ff_make), (fno_run, fno_make)]
    (fast, fast_per), (slow, slow_per) = sorted(zip(runs, speeds, strict=True), key=lambda t: t[1])
    longer = max(s.steps, round(s.steps * slow_per / fast_per))
    again = train(lambda: fast[1](longer), p, longer, evals, fast[0].model, fast[0].setting + ", equal clock")
    clock = {slow[0].model: slow[0], again.model: again}
    ratios = {
        "steps": ff_run.errors["test"] / fno_run.errors["test"],
        "clock": clock["funcformer"].errors["test"] / clock["FNO"].errors["test"],
    }
    second = {} if not unet else {"unet_steps": ff_run.errors["test"] / best["U-Net"][0].errors["test"]}
    zero_shot = {k: r.errors["fine"] / r.errors["test"] for k, r in (("funcformer", ff_run), ("FNO", fno_run))}
    return {
        "row": p.name,
        "paper": p.paper,
        "sizes": s.__dict__,
        "tried": {k: [t[0].__dict__ for t in v] for k, v in tried.items()},
        "equal_clock": again.__dict__,
        "ratio": ratios,
        "second_peer": second,
        "fine_over_test": zero_shot,
        "linear": linear(p),
        "per_step": {"funcformer": speeds[0], "FNO": speeds[1]},
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        f"{'row':18s} {'Funcformer':>10s} {'FNO':>10s} {'linear':>10s} {'steps':>6s} {'clock':>6s} {'2x/1x FF':>8s} "
        f"{'2x/1x FNO':>9s} {'U-Net':>10s} {'FF/U-Net':>8s}"
    ]
    for r in results:
        ff = min(t["errors"]["test"] for t in r["tried"]["funcformer"])
        fo = min(t["errors"]["test"] for t in r["tried"]["FNO"])
        z = r["fine_over_test"]
        lines.append(
            f"{r['row']:18s} {ff:10.3e} {fo:10.3e} {r['linear']:10.3e} {r['ratio']['steps']:6.3f} "
            f"{r['ratio']['clock']:6.3f} {z['funcformer']:8.2f} {z['FNO']:9.2f}"
        )
        if "U-Net" in r["tried"]:
            un = min(t["errors"]["test"] for t in r["tried"]["U-Net"])
            lines[-1] += f" {un:10.3e} {r['second_peer']['unet_steps']:8.3f}"
    return "\n".join(lines)


def main() -> None:
    p = Parser(prog="operator_zoo", description=__doc__.split("\n")[0])
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated rows (default all: {', '.join(ROWS)})")
    p.add_argument("--steps", type=int, default=None, help="training steps of every row (default: the row's)")
    p.add_argument(
        "--configs", type=int, choices=(1, 2, 3, 4), default=2, help="settings tried per model (equal for both)"
    )
    p.add_argument("--unet", action="store_true", help="a second peer: a U-Net, as many settings, equal steps")
    p.add_argument(
        "--peer",
        choices=("plain", "recipe"),
        default="plain",
        help="the FNO configured the ordinary way (default), or by its authors' recipe inside this project's habits",
    )
    p.add_argument("--evals", type=int, default=8, help="held-out evaluations along each run (the curve)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--json", type=output_file, default=None, help="write every run, curves included, here")
    p.add_argument("--cache", type=writable_dir, default=None, help="keep the generated PDE data here between runs")
    p.add_argument("--quick", action="store_true", help="every row small, one setting each: a few minutes")
    p.add_argument(
        "--unroll",
        type=bounded(0, WINDOW, ""),
        default=0,
        help="Navier-Stokes: train both models on a loss unrolled over this many steps (default 0: teacher forcing)",
    )
    p.add_argument(
        "--residual",
        action="store_true",
        help="train both models on what the least-squares map leaves (the composites map + model; no zero-shot)",
    )
    a = p.parse_args()
    rows = [r.strip() for r in a.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown or not rows:
        raise UserError(f"--rows {a.rows!r}: the rows are {', '.join(ROWS)}")
    if a.peer == "plain" and (a.residual or a.unroll):
        raise UserError("--residual and --unroll train the recipe peer: add --peer recipe")
    if a.residual and "navier-stokes" in rows:
        raise UserError("--residual: the navier-stokes row rolls out; it applies to the rows of pairs")
    try:
        device = torch.device(a.device)
    except RuntimeError:
        raise UserError(f"--device {a.device}: not a device; use cpu or cuda") from None
    if device.type == "cuda" and (not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count()):
        raise UserError(f"--device {a.device}: this machine has no such device; use cpu")
    try:
        peer.check_available()
    except UserError:
        print("result: operator_zoo_funcformer_over_fno nan (target <= 0.9)")
        raise UserError("the FNO needs neuraloperator: pip install -e '.[bench]'") from None
    torch.set_num_threads(a.threads)
    SOURCE.append(Source(str(device), a.cache))
    sizes = QUICK if a.quick else FULL
    configs = 1 if a.quick else a.configs
    results = []
    for row in rows:
        s = sizes[row] if a.steps is None else replace(sizes[row], steps=a.steps)
        t0 = time.perf_counter()
        problem = replace(MAKERS[row](s, a.seed), unroll=a.unroll)
        problem = on_residual(problem) if a.residual else problem
        took = time.perf_counter() - t0
        print(f"{row}: {len(problem.train)} training pairs on {problem.train.grid}, data in {took:.0f}s")
        results.append(compare(problem, s, configs, a.evals, device, plain=a.peer == "plain", unet=a.unet))
        r = results[-1]
        print(f"  ratio {r['ratio']['steps']:.3f} at equal steps, {r['ratio']['clock']:.3f} at equal clock", flush=True)
    print(table(results))
    if a.json is not None:
        a.json.write_text(json.dumps(results, indent=1))
    targeted = [r for r in results if r["row"] in TARGETED] or results
    worst = max(max(r["ratio"].values()) for r in targeted)
    print(
        f"result: operator_zoo_funcformer_over_{'plain_' if a.peer == 'plain' else ''}fno {worst:.3f} (target <= 0.9)"
    )


if __name__ == "__main__":
    sys.exit(run_cli("operator_zoo", main))
