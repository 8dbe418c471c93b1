"""Funcformer vs neuraloperator's FNO on Darcy flow, both coefficient families, at equal parameters and steps.

Both learn ``a ↦ u`` for ``-∇·(a∇u) = 1`` on ``[0, 1]²``, ``u = 0`` on the boundary, from the same seeded
finite-difference data (:mod:`examples.darcy.data`: ``points x points`` nodes, solved on a grid twice as
fine), for the smooth ``lognormal`` family ``a = e^g`` and the FNO paper's ``piecewise`` ``a ∈ {3, 12}``.
The Funcformer (:mod:`examples.darcy.model`) reads the Chebyshev interpolant of ``log a`` and writes a
series ``u = (1-x²)(1-y²) v``, evaluated on the grid; the FNO (``neuralop.models.FNO``, 2-D, grid positional
embedding) reads standardised ``log a`` on the grid and writes ``u`` there. Its hidden channels are chosen
to match the Funcformer's parameter count (within 10%). Each trains the same number of steps with Adam
and a warm-up + cosine schedule on the mean squared relative L² error on the grid, one after the other in
one process. Errors are the mean held-out relative L² on the grid; the last line is the worse family's
ratio Funcformer / FNO.

    python benchmarks/darcy_vs_fno.py                 # the measured run (see the README's results)
    python benchmarks/darcy_vs_fno.py --quick         # about a minute
    python benchmarks/darcy_vs_fno.py --steps 2000 --threads 2 --family piecewise

Needs the optional ``bench`` extra: ``pip install -e ".[bench]"`` (``neuraloperator==2.0.0``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from examples.darcy import data
from examples.darcy.config import Config
from examples.darcy.model import bubble_matrix, grid_matrix, input_coefficients
from examples.darcy.train import build_model, predict


def count(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def fno_matching(params: int, modes: int, seed: int) -> nn.Module:
    """The 4-layer 2-D FNO with ``modes`` modes per axis whose hidden channels best match ``params``."""
    from neuralop.models import FNO

    def make(h: int) -> nn.Module:
        return FNO(n_modes=(modes, modes), hidden_channels=h, in_channels=1, out_channels=1)  # type: ignore[no-any-return]

    best = min(range(2, 129), key=lambda h: abs(count(make(h)) - params))
    torch.manual_seed(seed)
    return make(best)


def fit(
    name: str,
    model: nn.Module,
    loss_fn: Callable[[Tensor], Tensor],
    n: int,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
) -> float:
    """Adam, 5% linear warm-up then cosine decay over ``steps``; returns the seconds taken."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    for step in range(steps):
        frac = step / steps
        scale = frac / 0.05 if frac < 0.05 else 0.5 * (1 + math.cos(math.pi * (frac - 0.05) / 0.95))
        for group in opt.param_groups:
            group["lr"] = lr * max(scale, 1e-3)
        loss = loss_fn(torch.randint(0, n, (batch,), generator=g))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    took = time.perf_counter() - start
    print(f"  {name}: {steps} steps in {took:.1f}s, last loss {loss.item():.3e}", flush=True)
    return took


def compare(family: data.Family, cfg: Config, a: argparse.Namespace) -> tuple[float, float]:
    """Train both models on ``family``; returns their mean held-out relative L² errors (Funcformer, FNO)."""
    t0 = time.perf_counter()
    splits = data.splits(family, cfg.n_train, cfg.n_test, cfg.points, cfg.seed, cfg.refine)
    print(f"{family}: {cfg.n_train} train / {cfg.n_test} held-out on {cfg.points}² ({time.perf_counter() - t0:.1f}s)")
    ff = build_model(cfg, splits.train)
    fno = fno_matching(count(ff), a.fno_modes, cfg.seed)
    n_ff, n_fno = count(ff), count(fno)
    print(f"  parameters: funcformer {n_ff}, FNO {n_fno} (modes {a.fno_modes}, ratio {n_fno / n_ff:.3f})")
    if abs(n_fno / n_ff - 1) > 0.1:
        raise SystemExit("could not match parameter counts within 10%")

    x_ff, x_ff_test = input_coefficients(splits.train, cfg.modes).float(), input_coefficients(splits.test, cfg.modes)
    u = splits.train.u.float()
    log_a = splits.train.a.log()
    shift, scale = float(log_a.mean()), float(log_a.std())
    x_fno = ((log_a - shift) / scale).float()[:, None]
    x_fno_test = ((splits.test.a.log() - shift) / scale).float()[:, None]
    s_out = float(u.pow(2).mean().rsqrt())

    def ff_loss(idx: Tensor) -> Tensor:
        return data.relative_l2(ff.on_grid(ff(x_ff[idx])), u[idx]).pow(2).mean()

    def fno_loss(idx: Tensor) -> Tensor:
        return data.relative_l2(fno(x_fno[idx])[:, 0] / s_out, u[idx]).pow(2).mean()

    t_ff = fit("funcformer", ff, ff_loss, len(u), a.steps, cfg.batch, cfg.lr, cfg.seed)
    t_fno = fit("FNO", fno, fno_loss, len(u), a.steps, cfg.batch, a.fno_lr, cfg.seed)
    with torch.no_grad():
        e_ff = data.relative_l2(predict(ff, x_ff_test), splits.test.u)
        e_fno = data.relative_l2((fno(x_fno_test)[:, 0] / s_out).double(), splits.test.u)
    # the best any u = (1-x²)(1-y²) v, v of modes x modes terms, can do: least squares on the grid
    vb = grid_matrix(cfg.modes + 2, cfg.points) @ bubble_matrix(cfg.modes)
    proj = vb @ torch.linalg.pinv(vb)
    floor = data.relative_l2(proj @ splits.test.u @ proj.mT, splits.test.u)
    print(f"  series floor (least-squares u on the grid, {cfg.modes}² terms): mean {floor.mean():.3e}")
    row = "  {}: held-out rel L2 mean {:.3e} median {:.3e} max {:.3e}  ({:.0f}s)"
    print(row.format("funcformer", e_ff.mean(), e_ff.median(), e_ff.max(), t_ff))
    print(row.format("FNO       ", e_fno.mean(), e_fno.median(), e_fno.max(), t_fno))
    print(f"  {family}: funcformer / FNO = {float(e_ff.mean() / e_fno.mean()):.3g}", flush=True)
    return float(e_ff.mean()), float(e_fno.mean())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small data, few steps: about a minute")
    p.add_argument("--family", choices=("both", *data.FAMILIES), default="both")
    p.add_argument("--steps", type=int, default=None, help="training steps for each model (default 1000; quick 60)")
    p.add_argument("--points", type=int, default=33, help="grid nodes per axis (data, FNO and evaluation)")
    p.add_argument("--fno-modes", type=int, default=16, help="neuralop n_modes per axis")
    p.add_argument("--fno-lr", type=float, default=3e-3)
    p.add_argument("--config", action="append", default=[], metavar="FIELD=VALUE", help="Funcformer config override")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    try:
        import neuralop  # noqa: F401
    except ImportError as e:
        print(f"neuraloperator is not installed ({e}); install the bench extra: pip install -e '.[bench]'")
        print("result: darcy_funcformer_over_fno nan (target <= 1.0)")
        return 2
    from examples.training import override

    torch.set_num_threads(a.threads)
    cfg = override(Config(points=a.points), a.config)
    if a.quick:
        cfg = cfg.replace(n_train=96, n_test=16)
        a.steps = a.steps or 60
    a.steps = a.steps or 1000
    cfg = cfg.replace(steps=a.steps)
    families = data.FAMILIES if a.family == "both" else (a.family,)
    print(f"{a.steps} steps each, batch {cfg.batch}, threads {a.threads}; funcformer {cfg}")
    ratios = {}
    for family in families:
        e_ff, e_fno = compare(family, cfg, a)
        ratios[family] = e_ff / e_fno
    worst = max(ratios, key=ratios.__getitem__)
    print("ratios: " + ", ".join(f"{k} {v:.3g}" for k, v in ratios.items()) + f" (reported: the worse, {worst})")
    print(f"result: darcy_funcformer_over_fno {ratios[worst]:.3g} (target <= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
