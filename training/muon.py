"""Muon for a model's hidden matrices, Adam for the rest of its weights, in one optimiser.

Muon (Jordan et al., 2024) steps a weight matrix ``W`` along the orthogonalised momentum: with ``B`` the momentum of
the gradients ``G`` (Nesterov's form), the step is ``-γ s O(B)``, where ``O(B) ≈ U Vᵀ`` for ``B = U S Vᵀ`` (every
singular value of the step near one) and ``s = 0.2 √max(m, n)`` for an ``m × n`` matrix, so that the step's root
mean square is about Adam's and Adam's rates carry over (Liu et al., 2025, "Muon is scalable for LLM training").
``O`` is a few steps of a quintic Newton--Schulz iteration (:func:`orthogonalise`). It suits the matrices between
hidden states (attention's projections, the MLPs); the weights that read the input or give the output, biases and
other vectors keep Adam.

:class:`Muon` is ``torch.optim.Muon`` with ``adjust_lr_fn="match_rms_adamw"`` for the matrices, taken in ``float32``
(``torch``'s iterates in ``bfloat16``) and batched over matrices of one shape (on one CPU thread, torch's takes a
sixteen-layer Funcformer's forty matrices one at a time in 16.7 ms where Adam steps the whole model in 1.5 ms; this
one, 1.5 ms), and :class:`torch.optim.Adam` for the other weights. A weight of more than two axes,
``(out, in, *k)``, is the matrix ``(out, in ∏k)``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

#: the quintic Newton--Schulz iteration's coefficients (Jordan et al.): the largest slope at zero for which five
#: steps take every singular value of a normalised matrix into about ``[0.7, 1.2]``
COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def orthogonalise(g: Tensor, steps: int = 5, eps: float = 1e-7) -> Tensor:
    """``≈ U Vᴴ`` for ``g = U S Vᴴ``, of each matrix of ``g`` (``(..., m, n)``, real or complex), by ``steps``
    quintic Newton--Schulz steps ``X ← aX + (bA + cA²)X`` with ``A = XXᴴ``, from ``X = g / ‖g‖_F``
    (:data:`COEFFICIENTS`). The singular vectors are ``g``'s; its singular values land near one, not on it. In
    ``g``'s dtype."""
    a, b, c = COEFFICIENTS
    tall = g.shape[-2] > g.shape[-1]
    x = g.mH if tall else g  # the Gram matrix of the shorter side is the cheaper one
    x = (x / x.norm(dim=(-2, -1), keepdim=True).clamp_min(eps)).reshape(-1, *x.shape[-2:])
    for _ in range(steps):
        gram = torch.bmm(x, x.mH)
        x = torch.baddbmm(x, torch.baddbmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    x = x.reshape(*g.shape[:-2], *x.shape[-2:])
    out: Tensor = x.mH if tall else x
    return out


def hidden_matrices(model: nn.Module, layers: tuple[type[nn.Module], ...]) -> list[nn.Parameter]:
    """The weights of two or more axes inside the modules of the types ``layers`` (a transformer's layers: their
    attention's projections and their MLPs), each once, in ``model.parameters()``'s order."""
    inside = {id(p) for m in model.modules() if isinstance(m, layers) for p in m.parameters() if p.ndim >= 2}
    return [p for p in model.parameters() if id(p) in inside]


class Muon(torch.optim.Optimizer):
    """Muon on ``matrices`` and on ``modal`` weights, Adam on the ``others``, at one rate ``lr`` (a schedule moves
    all).

    ``matrices``: real weights ``(out, in, *k)``, each the matrix ``(out, in ∏k)``. ``modal``: weights
    ``(in, out, *modes)``, real or complex, one matrix ``(in, out)`` per mode (an FNO's spectral weights, a matrix
    per kept frequency). The Muon groups hold ``momentum`` (Muon's, Nesterov's form), held through a one-cycle
    schedule (``cycle_momentum`` false: :class:`~training.schedule.OneCycle` moves only Adam's ``β₁``, in the
    others' ``betas``). Held at ``0.95`` rather than moved ``0.95 → 0.85 → 0.95`` with Adam's, the Funcformer was
    6–22% better on the zoo's five 1D rows, Poisson and Navier--Stokes, level on Darcy (the lab note
    ``docs/notes/2026-12-01-muon.md``).
    ``weight_decay``: Adam's L2 penalty on the others, decoupled (``W ← (1 - γλ) W``) on the Muon weights, as
    ``torch.optim.Muon`` has it.
    """

    def __init__(
        self,
        matrices: Iterable[nn.Parameter],
        others: Iterable[nn.Parameter],
        lr: float,
        momentum: float = 0.95,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        steps: int = 5,
        modal: Iterable[nn.Parameter] = (),
    ) -> None:
        matrices, others, modal = list(matrices), list(others), list(modal)
        if flat := [tuple(p.shape) for p in matrices if p.ndim < 2 or p.is_complex()]:
            raise ValueError(
                f"Muon: matrices must be real with two or more axes, got shapes {flat} (or complex ones); give them "
                "as others, or a complex weight of a matrix per mode as modal"
            )
        if flat := [tuple(p.shape) for p in modal if p.ndim < 2]:
            raise ValueError(f"Muon: modal weights must be (in, out, *modes), got shapes {flat}; give them as others")
        held = {"momentum": momentum, "cycle_momentum": False}
        groups: list[dict[str, Any]] = [{"params": matrices, "muon": "matrix"} | held]
        if modal:
            groups.append({"params": modal, "muon": "modal"} | held)
        if others:
            groups.append({"params": others, "muon": "", "betas": betas})
        super().__init__(groups, {"lr": lr, "eps": eps, "weight_decay": weight_decay, "steps": steps})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                (_muon if group["muon"] else _adam)(self, group, params)
        return loss


def for_model(
    model: nn.Module, matrices: Iterable[nn.Parameter], modal: Iterable[nn.Parameter] = (), **kw: Any
) -> Muon:
    """:class:`Muon` on ``model``: Muon on ``matrices`` and ``modal``, Adam on every other weight of ``model``
    (``kw``: the optimiser's settings)."""
    matrices, modal = list(matrices), list(modal)
    chosen = {id(p) for p in matrices + modal}
    return Muon(matrices, [p for p in model.parameters() if id(p) not in chosen], modal=modal, **kw)


def _muon(opt: Muon, group: dict[str, Any], params: list[Tensor]) -> None:
    lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
    grads = [p.grad for p in params if p.grad is not None]
    bufs = [opt.state[p].setdefault("momentum_buffer", torch.zeros_like(p)) for p in params]
    torch._foreach_lerp_(bufs, grads, 1 - mu)
    nesterov = torch._foreach_lerp(grads, bufs, mu)
    if wd:
        torch._foreach_mul_(params, 1 - lr * wd)
    by_shape: dict[tuple[torch.device, torch.Size], list[int]] = defaultdict(list)
    for i, p in enumerate(params):
        by_shape[(p.device, p.shape)].append(i)
    modal = group["muon"] == "modal"
    for (_, shape), idx in by_shape.items():
        stacked = torch.stack([nesterov[i] for i in idx])
        if modal:  # (P, in, out, *modes) -> (P, *modes, in, out): a matrix per mode
            m, n = shape[0], shape[1]
            stacked = stacked.movedim((1, 2), (-2, -1))
        else:
            m, n = shape[0], math.prod(shape[1:])
            stacked = stacked.reshape(len(idx), m, n)
        work = torch.complex64 if stacked.is_complex() else torch.float32
        steps = orthogonalise(stacked.to(work), group["steps"]).to(stacked.dtype)
        steps = steps.movedim((-2, -1), (1, 2)) if modal else steps.reshape(len(idx), *shape)
        ps = [params[i] for i in idx]
        torch._foreach_add_(ps, list(steps.unbind(0)), alpha=-lr * 0.2 * math.sqrt(max(m, n)))


def _adam(opt: Muon, group: dict[str, Any], params: list[Tensor]) -> None:
    lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    # a complex weight steps as its real and imaginary parts, as torch's Adam steps it; its moments are real pairs
    reals = [_real(p) for p in params]
    grads = [_real(p.grad) for p in params if p.grad is not None]
    if wd:
        grads = list(torch._foreach_add(grads, reals, alpha=wd))
    for p, r in zip(params, reals, strict=True):
        state = opt.state[p]
        if not state:  # the count a tensor, as torch's Adam keeps it (a checkpoint's state is tensors)
            state.update(step=torch.tensor(0.0), exp_avg=torch.zeros_like(r), exp_avg_sq=torch.zeros_like(r))
    counts = [opt.state[p]["step"] for p in params]
    torch._foreach_add_(counts, 1.0)
    by_step: dict[int, list[int]] = defaultdict(list)  # weights that have stepped equally often: one foreach each
    for i, t in enumerate(torch.stack(counts).tolist()):
        by_step[int(t)].append(i)
    for t, idx in by_step.items():
        g = [grads[i] for i in idx]
        m = [opt.state[params[i]]["exp_avg"] for i in idx]
        v = [opt.state[params[i]]["exp_avg_sq"] for i in idx]
        torch._foreach_lerp_(m, g, 1 - b1)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, g, g, 1 - b2)
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, math.sqrt(1 - b2**t))
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_([reals[i] for i in idx], m, denom, -lr / (1 - b1**t))


def _real(t: Tensor) -> Tensor:
    return torch.view_as_real(t) if t.is_complex() else t
