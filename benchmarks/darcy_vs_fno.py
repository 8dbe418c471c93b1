"""Funcformer vs neuraloperator's FNO on Darcy flow: equal parameters, equal steps, equal wall clock, resolution.

Both learn ``a ↦ u`` for ``-∇·(a∇u) = 1`` on ``[0, 1]²``, ``u = 0`` on the boundary, from the same seeded
finite-difference data (:mod:`operators.darcy.data`: ``points x points`` nodes, solved on a grid twice as fine),
for the smooth ``lognormal`` family ``a = e^g`` and the FNO paper's ``piecewise`` ``a ∈ {3, 12}``.

* The Funcformer: the operator model (:class:`models.OperatorModel`) as ``python -m examples.darcy`` trains it,
  with the ``--preset`` (default: the example's default) and ``--config`` overrides; its own recipe (Adam,
  one-cycle schedule, gradient clipping).
* The FNO, as neuraloperator recommends for Darcy (``config/darcy_config.py`` of neuraloperator 2.0: the
  small 2-D FNO, ``n_modes=(16, 16)``, 4 layers, lifting and projection channel ratios 2, ``norm="group_norm"``,
  grid positional embedding; AdamW, learning rate ``5e-3``, weight decay ``1e-4``, StepLR halving the rate
  five times over the run -- theirs is every 60 of 300 epochs -- batch 16), its hidden channels chosen from the
  parameter budget: trained at every width whose count is within 10% of the Funcformer's, the best compared
  (the error swings with the width more than the counts differ). It reads
  standardised ``log a`` on the grid (their recipe standardises the input too) and writes ``u`` there.
  Their recipe trains on the H1 loss; here both train on the metric reported, the squared relative L² error.

With the preset's ``augment`` (the square's symmetries, :mod:`operators.symmetry`) both models train on the same
moved batches: the symmetries are a property of the data, not of either model, so the FNO gets them too
(neuraloperator's recipe has no augmentation; ``--config augment=none`` trains both without).

Budgets: **equal steps** (both ``--steps``, the same batch and data order) and **equal wall clock**: the model
faster per step is trained again, from scratch with its schedule stretched over as many steps as fit in the
slower model's measured training time. The held-out error is recorded along the way (``--evals`` points):
the training curves, to show where each flattens. **Resolution**: every trained model is evaluated, with no
retraining, on held-out data of the same coefficient functions at ``--fine`` nodes (solved on a grid twice as
fine): the Funcformer's series at the finer nodes, the FNO zero-shot on the finer grid.

The last line is the worse of the four ratios Funcformer / FNO (two families, two budgets); target <= 0.8.

``--compile funcformer`` (or ``fno``, or both, repeated) runs a model through ``torch.compile``: compiled once before
its clock starts (one forward and backward, no step taken; the seconds are printed and kept in the JSON), the same
model and trajectory otherwise. Each model runs the way it is faster: measured on an Intel Xeon, one thread, two runs
side by side, the Funcformer's step is 84 ms eager and 51 ms compiled, the FNO's 82 ms eager and 102 ms compiled.

Subnormal floats are flushed to zero on the CPU for both models, as :func:`training.fit` does
(:mod:`training.denormals`): the Funcformer's windowed attention makes them in bulk, and on that Xeon its compiled
step takes 109 ms with them kept (``--keep-denormals``), the FNO's unchanged. The first line names the CPU.

    python benchmarks/darcy_vs_fno.py --quick                  # about a minute
    python benchmarks/darcy_vs_fno.py --compile funcformer     # the README's run: 6000 steps
    python benchmarks/darcy_vs_fno.py --family piecewise --config window=0

Needs the optional ``bench`` extra: ``pip install -e ".[bench]"`` (``neuraloperator==2.0.0``).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from instances.chebyshev import bubble, vandermonde
from models.operator import OperatorModel
from operators import symmetry
from operators.darcy import data
from training import UserError, denormals_flushed, flush_denormals
from training.cli import Parser, run_cli, threads
from training.distributed import device_of
from training.tasks.darcy.config import PRESETS, Config
from training.tasks.darcy.model import SHAPE
from training.tasks.darcy.train import samples_of
from training.tasks.operator.fno import count
from training.tasks.operator.task import build_model, objective


def host() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else the platform's processor string): step times differ
    between hosts (what a subnormal float costs varies widely between cores, :mod:`training.denormals`)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "CPU unknown"


def fno(hidden: int, modes: int) -> nn.Module:
    """neuraloperator's small 2-D FNO for Darcy with ``hidden`` channels."""
    from neuralop.models import FNO

    model: nn.Module = FNO(
        n_modes=(modes, modes),
        in_channels=1,
        out_channels=1,
        hidden_channels=hidden,
        n_layers=4,
        lifting_channel_ratio=2,
        projection_channel_ratio=2,
        norm="group_norm",
    )
    return model


def fno_widths(params: int, modes: int) -> list[int]:
    """Every hidden width whose FNO has ``params`` parameters within 10% (at least the nearest one).

    The peer is trained at each and the best is compared: its error swings with the width more than the
    widths' parameter counts differ (log-normal, 1500 steps: 1.08e-2 at 14 channels, 1.88e-2 at 15).
    """
    counts = {h: count(fno(h, modes)) for h in range(2, 97)}
    within = [h for h, c in counts.items() if abs(c / params - 1) <= 0.1]
    return within or [min(counts, key=lambda h: abs(counts[h] - params))]


def moved(t: Tensor, which: Tensor | None) -> Tensor:
    """Samples ``(batch, P, P, C)`` moved by the square's symmetries ``which`` (``None``: as they are)."""
    return t if which is None else symmetry.move(t, which, "square", SHAPE.axes)


def fno_seeded(hidden: int, modes: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return fno(hidden, modes)


@dataclass
class Run:
    """One training run: its curve ``(step, seconds, held-out error)`` and final errors."""

    name: str
    steps: int
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    seconds: float = 0.0
    compile_seconds: float = 0.0  # torch.compile's warm-up (``--compile``), not in ``seconds``
    error: float = math.nan
    fine_error: float = math.nan


@dataclass
class Learner:
    """What the training loop needs of a model: its module, loss, prediction and optimiser recipe."""

    name: str
    make: Callable[[], nn.Module]
    loss: Callable[[nn.Module, Tensor, Tensor | None], Tensor]  # (model, indices, symmetries or None) -> scalar
    predict: Callable[[nn.Module, bool], Tensor]  # (model, fine grid?) -> u on the held-out grid
    optimiser: Callable[[nn.Module, int], tuple[torch.optim.Optimizer, Callable[[int], None]]]
    clip: float = 0.0  # gradient-norm clipping (the Funcformer's recipe; neuraloperator's Trainer has none)
    compile: bool = False  # torch.compile the model (``--compile``)


def train(
    learner: Learner,
    steps: int,
    n: int,
    batch: int,
    seed: int,
    evals: int,
    exact: Tensor,
    fine_exact: Tensor,
    augment: bool = False,
    device: torch.device | None = None,
) -> Run:
    """Train from scratch for ``steps``; the held-out error at ``evals`` points (evaluation time not counted).

    ``augment``: each batch moved by random symmetries of the square (:func:`operators.symmetry.draw`), the same
    draws for every learner.
    """
    device = device or torch.device("cpu")
    model = learner.make().to(device)
    opt, schedule = learner.optimiser(model, steps)
    g = torch.Generator().manual_seed(seed + 1)
    run = Run(learner.name, steps)
    if learner.compile:  # compiled before the clock starts: one forward and backward, no step taken
        t0 = time.perf_counter()
        model.compile()
        learner.loss(model, torch.arange(batch) % n, None).backward()  # type: ignore[no-untyped-call]
        model.zero_grad(set_to_none=True)
        run.compile_seconds = time.perf_counter() - t0
        print(f"    {learner.name} compiled in {run.compile_seconds:.0f}s (not in its clock)", flush=True)
    marks = {round(steps * (i + 1) / evals) for i in range(evals)}
    clock = 0.0
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    for step in range(1, steps + 1):
        sync()
        t0 = time.perf_counter()
        model.train()
        idx = torch.randint(0, n, (batch,), generator=g)
        which = symmetry.draw("square", batch, SHAPE.axes, exact.shape[-2:], g) if augment else None
        loss = learner.loss(model, idx, which)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        if learner.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), learner.clip)
        opt.step()
        schedule(step)
        sync()  # the clock counts the device's work, not only its launch
        clock += time.perf_counter() - t0
        if step in marks:  # printed as it comes: a run cut short still shows its curve
            run.curve.append((step, clock, error(learner, model, False, exact)))
            print(f"    {learner.name} step {step}/{steps}, {clock:.0f}s: held-out {run.curve[-1][2]:.2e}", flush=True)
    run.seconds, run.error = clock, run.curve[-1][2]
    run.fine_error = error(learner, model, True, fine_exact)
    return run


@torch.no_grad()
def error(learner: Learner, model: nn.Module, fine: bool, exact: Tensor) -> float:
    model.eval()
    return float(data.relative_l2(learner.predict(model, fine).cpu(), exact).mean())


def learners(
    cfg: Config, a: argparse.Namespace, splits: data.Splits, fine: data.DarcyData
) -> tuple[Learner, list[Learner]]:
    """The Funcformer, and the FNO at every hidden width within the parameter budget (:func:`fno_widths`).

    The data live on ``a.device`` beside the models; predictions come back in float64 on the CPU.
    """
    on = a.device
    train_set = splits.train
    u = train_set.u.float().to(on)
    samples = samples_of(train_set, "training set")
    probe = build_model(cfg, samples)
    x_ff, u_ff = samples.inputs.to(on), samples.outputs.to(on, probe.dtype)
    x_ff_test, x_ff_fine = splits.test.a[..., None].to(on), fine.a[..., None].to(on)
    log_a = train_set.a.log()
    shift, scale = float(log_a.mean()), float(log_a.std())
    x_fno = ((log_a - shift) / scale).float()[:, None].to(on)
    x_fno_test = ((splits.test.a.log() - shift) / scale).float()[:, None].to(on)
    x_fno_fine = ((fine.a.log() - shift) / scale).float()[:, None].to(on)
    s_out = float(u.pow(2).mean().rsqrt())
    params = count(probe)

    def ff_loss(m: nn.Module, idx: Tensor, which: Tensor | None) -> Tensor:
        assert isinstance(m, OperatorModel)
        x, exact = moved(x_ff[idx], which), moved(u_ff[idx], which)
        return objective(m, x.contiguous(), exact, cfg.smooth)  # one memory layout for every move: no recompiling

    def ff_predict(m: nn.Module, on_fine: bool) -> Tensor:
        assert isinstance(m, OperatorModel)
        x, p = (x_ff_fine, fine.a.shape[-1]) if on_fine else (x_ff_test, cfg.points)
        return torch.cat([m.values(m(x[i : i + 50]), (p, p))[..., 0].double() for i in range(0, len(x), 50)])

    def ff_opt(m: nn.Module, steps: int) -> tuple[torch.optim.Optimizer, Callable[[int], None]]:
        opt = torch.optim.Adam(m.parameters(), lr=cfg.lr, betas=(0.9, cfg.beta2), weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=steps, pct_start=cfg.warmup)

        def step(_: int) -> None:
            if sched.last_epoch < steps:
                sched.step()

        return opt, step

    def fno_loss(m: nn.Module, idx: Tensor, which: Tensor | None) -> Tensor:
        x, exact = moved(x_fno[idx].movedim(1, -1), which), moved(u[idx, ..., None], which)[..., 0]
        return data.relative_l2(m(x.movedim(-1, 1))[:, 0] / s_out, exact).pow(2).mean()

    def fno_predict(m: nn.Module, on_fine: bool) -> Tensor:
        x = x_fno_fine if on_fine else x_fno_test
        return torch.cat([(m(x[i : i + 50])[:, 0] / s_out).double() for i in range(0, len(x), 50)])

    def fno_opt(m: nn.Module, steps: int) -> tuple[torch.optim.Optimizer, Callable[[int], None]]:
        opt = torch.optim.AdamW(m.parameters(), lr=a.fno_lr, weight_decay=a.fno_weight_decay)
        every = max(1, steps // 5)  # neuraloperator's Darcy recipe: halve every 60 of 300 epochs

        def step(i: int) -> None:
            if i % every == 0:
                for group in opt.param_groups:
                    group["lr"] *= 0.5

        return opt, step

    def make_ff() -> nn.Module:
        return build_model(cfg, samples)

    compiled = set(a.compile or ())
    ff = Learner("funcformer", make_ff, ff_loss, ff_predict, ff_opt, cfg.clip, "funcformer" in compiled)
    fnos = [
        Learner(
            "FNO",
            functools.partial(fno_seeded, h, a.fno_modes, cfg.seed),
            fno_loss,
            fno_predict,
            fno_opt,
            compile="fno" in compiled,
        )
        for h in fno_widths(params, a.fno_modes)
    ]
    return ff, fnos


def compare(family: data.Family, cfg: Config, a: argparse.Namespace) -> dict[str, object]:
    """Both models on ``family``: equal steps, then the faster one again at the slower one's wall clock."""
    t0 = time.perf_counter()
    splits = data.splits(family, cfg.n_train, cfg.n_test, cfg.points, cfg.seed, cfg.refine)
    fine = data.sample(family, cfg.n_test, a.fine, 2 * cfg.seed + 1, cfg.refine)  # the held-out draws, finer
    assert torch.equal(fine.xi, splits.test.xi)
    print(
        f"{family}: {cfg.n_train} train / {cfg.n_test} held-out on {cfg.points}², the same held-out on {a.fine}² "
        f"({time.perf_counter() - t0:.0f}s)",
        flush=True,
    )
    cfg = cfg.replace(family=family)  # the preset's own family is the one --family overrides
    if cfg.augment not in ("none", "square"):
        raise UserError(f"config field augment={cfg.augment}: both models move by the square's (or none)")
    augment = cfg.augment == "square"
    print(f"  funcformer {cfg}", flush=True)
    ff, fnos = learners(cfg, a, splits, fine)
    n_ff = count(ff.make())
    go = lambda learner, steps: train(  # noqa: E731
        learner, steps, len(splits.train), a.batch, cfg.seed, a.evals, splits.test.u, fine.u, augment, a.device
    )
    tried = []
    for learner in fnos:  # the peer at every width within the budget; the best is compared
        model = learner.make()
        n, hidden = count(model), model.hidden_channels
        if abs(n / n_ff - 1) > 0.1:
            raise SystemExit("could not match parameter counts within 10%")
        tried.append((go(learner, a.steps), learner, n, hidden))
        print(f"  FNO hidden {hidden} ({n} parameters, {n / n_ff:.3f}x): held-out {tried[-1][0].error:.3e}", flush=True)
    best, fo, n_fno, hidden = min(tried, key=lambda t: t[0].error)
    print(
        f"  parameters: funcformer {n_ff}, FNO {n_fno} (hidden {hidden}, the best of {len(tried)} in budget; "
        f"modes {a.fno_modes}; {n_fno / n_ff:.3f}x)"
    )
    runs = [go(ff, a.steps), best]
    for r in runs:
        print(f"  {r.name}: {r.steps} steps in {r.seconds:.0f}s, held-out {r.error:.3e}", flush=True)
    fast, slow = sorted(runs, key=lambda r: r.seconds)
    longer = max(a.steps, round(a.steps * slow.seconds / fast.seconds))
    again = go(ff if fast.name == ff.name else fo, longer)
    print(f"  {again.name} at {slow.name}'s wall clock: {again.steps} steps in {again.seconds:.0f}s", flush=True)
    clock = {slow.name: slow, again.name: again}
    print("  training curves (held-out rel. L2 at step / seconds):")
    for r in (*runs, again):
        pts = "  ".join(f"{s}/{t:.0f}s {e:.2e}" for s, t, e in r.curve)
        print(f"    {r.name:10s} {r.steps:5d} steps: {pts}")
    nodes = torch.linspace(-1, 1, cfg.points, dtype=torch.float64)
    vb = vandermonde(nodes, cfg.modes + 2) @ bubble(cfg.modes)  # the zero-boundary series at the grid's nodes
    proj = vb @ torch.linalg.pinv(vb)
    floor = float(data.relative_l2(proj @ splits.test.u @ proj.mT, splits.test.u).mean())
    print(f"  series floor (least-squares u on the grid, {cfg.modes}² terms): {floor:.2e}")
    steps_ratio = runs[0].error / runs[1].error
    clock_ratio = clock[ff.name].error / clock[fo.name].error
    print(
        f"  | budget | funcformer {cfg.points}² | funcformer {a.fine}² | FNO {cfg.points}² "
        f"| FNO {a.fine}² zero-shot | ratio |"
    )
    for label, f, o, ratio in (
        (f"{a.steps} steps", runs[0], runs[1], steps_ratio),
        (f"{slow.seconds:.0f}s", clock[ff.name], clock[fo.name], clock_ratio),
    ):
        print(
            f"  | {label} ({f.steps} / {o.steps} steps) | {f.error:.2e} | {f.fine_error:.2e} | {o.error:.2e} | "
            f"{o.fine_error:.2e} | {ratio:.2f} |"
        )
    print(f"  {family}: funcformer / FNO = {steps_ratio:.3g} (equal steps), {clock_ratio:.3g} (equal wall clock)")
    print(f"  {family}: funcformer {a.fine}² / {cfg.points}² = {runs[0].fine_error / runs[0].error:.3g}", flush=True)
    return {
        "family": family,
        "parameters": {"funcformer": n_ff, "fno": n_fno, "fno_hidden": hidden},
        "fno_widths": {str(h): r.error for r, _, _, h in tried},
        "runs": [r.__dict__ for r in (*runs, again)],
        "series_floor": floor,
        "ratio_steps": steps_ratio,
        "ratio_clock": clock_ratio,
    }


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small data, few steps: about a minute")
    p.add_argument("--family", choices=("both", *data.FAMILIES), default="both")
    p.add_argument("--steps", type=int, default=None, help="equal-steps budget (default 6000: near the plateaus)")
    p.add_argument("--batch", type=int, default=16, help="batch of both models (neuraloperator's Darcy recipe: 16)")
    p.add_argument("--evals", type=int, default=6, help="held-out evaluations along each run (the curves)")
    p.add_argument("--fine", type=int, default=65, help="nodes per axis of the resolution test (no retraining)")
    p.add_argument("--fno-modes", type=int, default=16, help="neuralop n_modes per axis (the recipe's 16)")
    p.add_argument("--fno-lr", type=float, default=5e-3)
    p.add_argument("--fno-weight-decay", type=float, default=1e-4)
    p.add_argument("--preset", choices=sorted(PRESETS), default="default", help="the Funcformer's preset")
    p.add_argument("--config", action="append", default=[], metavar="FIELD=VALUE", help="Funcformer config override")
    p.add_argument("--out", type=Path, default=None, help="write the curves and figures as JSON here")
    p.add_argument("--threads", type=threads, default=1)
    p.add_argument("--device", default="cpu", help="where both models train (cpu, cuda, cuda:N)")
    p.add_argument(
        "--compile",
        action="append",
        choices=("funcformer", "fno"),
        help="torch.compile this model (repeat for both); its warm-up is reported, not counted in its clock",
    )
    p.add_argument(
        "--keep-denormals",
        action="store_true",
        help="do not flush subnormal floats to zero on the CPU (training.fit flushes; see training.denormals)",
    )
    a = p.parse_args(argv)
    a.device = device_of(a.device)  # checked before any work
    try:
        import neuralop  # noqa: F401
    except ImportError as e:
        print("result: darcy_funcformer_over_fno nan (target <= 0.8)")
        fix = "install the bench extra: pip install -e '.[bench]'"
        raise UserError(f"neuraloperator is not installed ({e}); {fix}") from None
    from training import override

    torch.set_num_threads(a.threads)
    flush_denormals(not a.keep_denormals)  # both models, as training.fit runs them
    cfg = override(PRESETS[a.preset], a.config)
    if a.quick:
        cfg = cfg.replace(n_train=96, n_test=16)
        a.steps, a.evals = a.steps or 40, min(a.evals, 2)
    a.steps = a.steps or 6000
    families = data.FAMILIES if a.family == "both" else (a.family,)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    where = torch.cuda.get_device_name(a.device) if a.device.type == "cuda" else f"threads {a.threads} ({host()})"
    compiled = ", ".join(a.compile or ()) or "none"
    subnormals = "flushed" if denormals_flushed() else "kept"
    print(
        f"{a.steps} steps, batch {a.batch}, {where}, load {load:.1f}; --preset {a.preset}; "
        f"compiled: {compiled}; subnormals {subnormals}"
    )
    results = [compare(family, cfg, a) for family in families]
    ratios = {f"{r['family']} {b}": float(r[f"ratio_{b}"]) for r in results for b in ("steps", "clock")}  # type: ignore[arg-type]
    worst = max(ratios, key=ratios.__getitem__)
    if a.out is not None:
        a.out.write_text(
            json.dumps(
                {
                    "config": cfg.__dict__ | {"family": a.family},
                    "args": vars(a) | {"out": str(a.out)},
                    "results": results,
                },
                indent=1,
                default=str,
            )
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    print(
        "ratios: "
        + ", ".join(f"{k} {v:.3g}" for k, v in ratios.items())
        + f" (reported: the worst, {worst}; load {load:.1f})"
    )
    print(f"result: darcy_funcformer_over_fno {ratios[worst]:.3g} (target <= 0.8)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("darcy_vs_fno", main))
