r"""Random smooth sources and their exact Poisson solutions, as Chebyshev coefficient matrices.

A source is :math:`f(x, y) = \sum_{k,l < n} f_{kl} T_k(x) T_l(y)` with

.. math::  f_{kl} = z_{kl}\, \rho^{k + l} \,/\, \|\cdot\|, \qquad z_{kl} \sim \mathcal N(0, 1),

and :math:`f_{kl} = 0` for :math:`k \ge m` or :math:`l \ge m` (the highest ``n - m`` modes are zero,
as in the design source); each source is scaled to unit :math:`L^2([-1,1]^2)` norm. The solution
:math:`g = \Delta^{-1} f` (zero on the boundary) is computed by :class:`~training.tasks.poisson.solver.PoissonSolver`
at degree ``N`` (exact to rounding for these data; the ``(N+1)^2`` coefficients are kept so that errors
are measured against the whole function, not its truncation to ``n x n``).

Out-of-distribution sources use a slower decay and all ``n`` modes (higher frequencies).

Norms: :math:`\|g\|^2 = \int\!\!\int g^2 = \mathrm{tr}(G^T W G W)` with the Chebyshev Gram matrix
:math:`W_{kl} = \int_{-1}^1 T_k T_l` (zero when ``k + l`` is odd).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from training import CheckpointError, UserError
from training.checkpoint import read, save_checkpoint

from .solver import PoissonSolver


@functools.cache
def _gram_cpu(n: int) -> Tensor:
    k = torch.arange(n, dtype=torch.float64)
    s, d = k[:, None] + k[None, :], k[:, None] - k[None, :]
    # ∫ T_k T_l = (1/2) ∫ (T_{k+l} + T_{|k-l|}), and ∫ T_j = 2 / (1 - j²) for even j, 0 for odd j
    w = 1.0 / (1.0 - s**2) + 1.0 / (1.0 - d**2)
    return torch.where(s.remainder(2) == 0, w, torch.zeros_like(w))


def gram(n: int, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float64) -> Tensor:
    """The ``n x n`` Gram matrix ``W_kl = ∫_{-1}^{1} T_k(x) T_l(x) dx``."""
    return _gram_cpu(n).to(device=device, dtype=dtype)


def l2_norm_sq(c: Tensor) -> Tensor:
    """``∫∫ g²`` for coefficient matrices ``c`` ``(..., m, m')``: ``tr(cᵀ W c W)``."""
    wx, wy = gram(c.shape[-2], c.device, c.dtype), gram(c.shape[-1], c.device, c.dtype)
    return ((wx @ c @ wy) * c).sum((-2, -1))


def pad(c: Tensor, m: int) -> Tensor:
    """Zero-pad (or truncate) the last two axes of a coefficient matrix to ``m x m``."""
    c = c[..., :m, :m]
    return torch.nn.functional.pad(c, (0, m - c.shape[-1], 0, m - c.shape[-2]))


def relative_l2(pred: Tensor, exact: Tensor) -> Tensor:
    """``‖pred - exact‖ / ‖exact‖`` in ``L²([-1,1]²)``, per sample; coefficient matrices of any sizes."""
    m = max(pred.shape[-1], exact.shape[-1], pred.shape[-2], exact.shape[-2])
    p, e = pad(pred.to(exact.dtype), m), pad(exact, m)
    return (l2_norm_sq(p - e) / l2_norm_sq(e)).sqrt()


@dataclass(frozen=True)
class SourceSpec:
    """How random sources are drawn: ``n`` coefficients per axis, ``active`` nonzero, decay ``rho``."""

    n: int = 16
    active: int = 12
    rho: float = 0.7


IN_DISTRIBUTION = SourceSpec()
OUT_OF_DISTRIBUTION = SourceSpec(active=16, rho=0.85)


def random_sources(spec: SourceSpec, count: int, seed: int) -> Tensor:
    """``count`` random sources ``(count, n, n)`` (float64), unit L² norm, reproducible from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(count, spec.n, spec.n, generator=g, dtype=torch.float64)
    k = torch.arange(spec.n, dtype=torch.float64)
    decay = spec.rho ** (k[:, None] + k[None, :])
    mask = ((k[:, None] < spec.active) & (k[None, :] < spec.active)).to(torch.float64)
    f = z * decay * mask
    return f / l2_norm_sq(f).sqrt()[:, None, None]


@dataclass(frozen=True)
class PoissonData:
    """Sources ``f`` ``(count, n, n)`` and exact solutions ``g`` ``(count, N+1, N+1)``, float64."""

    f: Tensor
    g: Tensor

    def __len__(self) -> int:
        return self.f.shape[0]

    def target(self, n: int) -> Tensor:
        """The solutions' leading ``n x n`` coefficients (what an ``n``-mode model can output)."""
        return pad(self.g, n)


def make(spec: SourceSpec, count: int, seed: int, degree: int = 48) -> PoissonData:
    """Draw ``count`` sources from ``spec`` and solve them exactly at collocation degree ``degree``."""
    f = random_sources(spec, count, seed)
    return PoissonData(f, PoissonSolver(degree).solve(f))


def training_law(sources: str, count: int, g: torch.Generator, n: int = 16) -> Tensor:
    """``count`` sources ``(count, n, n)`` (float64, unit L² norm) of the training law ``sources``, drawn with ``g``.

    ``"decaying"``: :data:`IN_DISTRIBUTION` (for ``n`` modes, as :func:`splits` scales it; the ``"decaying"``
    family of :data:`~training.tasks.poisson.families.FAMILIES`); ``"mixed"``:
    :func:`training.tasks.poisson.families.training_sources`. What an online run (``Config.online``) trains on.
    """
    from . import families

    if sources == "mixed":
        return families.training_sources(count, g, n)
    if sources == "decaying":
        draw, _ = families.FAMILIES["decaying"]
        return draw(count, g, n)
    raise ValueError(f"training_law: sources must be 'decaying' or 'mixed', got {sources!r}")


@functools.cache
def _response(n: int, out: int) -> Tensor:
    basis = torch.eye(n * n, dtype=torch.float64).reshape(n * n, n, n)
    return pad(PoissonSolver(DEGREE).solve(basis), out).reshape(n * n, out * out)


def solutions(f: Tensor, out: int) -> Tensor:
    """The exact solutions of ``(count, n, n)`` sources cut to ``(count, out, out)`` coefficients, float64.

    :class:`~training.tasks.poisson.solver.PoissonSolver` at :data:`DEGREE` is linear, so it is applied as the
    matrix of its responses to the ``n²`` unit sources (solved once per ``(n, out)``): equal to
    ``pad(solve(f), out)`` to rounding, and a millisecond for a batch.
    """
    n = f.shape[-1]
    if f.ndim != 3 or f.shape[-2] != n:
        raise ValueError(f"solutions: expected sources (count, n, n), got shape {tuple(f.shape)}")
    g: Tensor = f.to(torch.float64).reshape(-1, n * n) @ _response(n, out).to(f.device)
    return g.reshape(-1, out, out)


def _split_seed(seed: int, i: int) -> int:
    """The seed of split ``i`` (0 train, 1 test, 2 OOD): ``3 seed + i``, wrapped into the generator's 64 bits."""
    return (3 * seed + i) % 2**64


@dataclass(frozen=True)
class Splits:
    train: PoissonData
    test: PoissonData
    ood: PoissonData


def splits(
    n_train: int, n_test: int, seed: int = 0, n: int = 16, cache: Path | None = None, sources: str = "decaying"
) -> Splits:
    """Train / held-out test (same distribution, disjoint seeds) / out-of-distribution sets.

    ``sources``: the training (and held-out) law, ``"decaying"`` (:data:`IN_DISTRIBUTION`) or ``"mixed"``
    (:func:`training.tasks.poisson.families.training_sources`). With ``cache``, the tensors are saved there
    (``torch.save``) and reloaded when the arguments match.
    """
    if sources not in ("decaying", "mixed"):
        raise ValueError(f"splits: sources must be 'decaying' or 'mixed', got {sources!r}")
    tag = "" if sources == "decaying" else f"_{sources}"
    key = f"poisson_n{n}_tr{n_train}_te{n_test}_s{seed}{tag}.pt"
    path = None if cache is None else cache / key
    if path is not None and path.exists():
        return read_cache(path, {"train": n_train, "test": n_test, "ood": n_test}, n)
    ind = SourceSpec(n=n, active=IN_DISTRIBUTION.active * n // 16, rho=IN_DISTRIBUTION.rho ** (16 / n))
    ood = SourceSpec(n=n, active=n, rho=OUT_OF_DISTRIBUTION.rho ** (16 / n))
    if sources == "mixed":
        from .families import training_sources

        solver = PoissonSolver(48)
        train, test = (
            training_sources(count, torch.Generator().manual_seed(_split_seed(seed, i)), n)
            for i, count in ((0, n_train), (1, n_test))
        )
        out = Splits(
            PoissonData(train, solver.solve(train)),
            PoissonData(test, solver.solve(test)),
            make(ood, n_test, _split_seed(seed, 2)),
        )
    else:
        out = Splits(
            make(ind, n_train, seed=_split_seed(seed, 0)),
            make(ind, n_test, seed=_split_seed(seed, 1)),
            make(ood, n_test, seed=_split_seed(seed, 2)),
        )
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(
                f"--cache {path.parent}: cannot create it ({e.strerror}); pass a writable directory"
            ) from None
        blob = {k: (getattr(out, k).f, getattr(out, k).g) for k in ("train", "test", "ood")}
        # a temporary file per process, then an atomic rename: two runs filling one new cache never collide
        save_checkpoint(path, blob, f"the data were not cached in {path}", "free some space or pass another --cache")
    return out


#: the collocation degree of the cached exact solutions (``make``'s): ``(count, DEGREE + 1, DEGREE + 1)``
DEGREE = 48


def read_cache(path: Path, counts: dict[str, int], n: int) -> Splits:
    """The splits cached in ``path``, checked (split names, tensor shapes and dtypes, finite values).

    Read like a checkpoint (:func:`training.checkpoint.read`: tensors only, a planted file runs
    nothing); anything else is a :class:`~training.CheckpointError` naming the file.
    """
    fix = "delete it (it is regenerated), or pass another --cache"
    blob = read(path, "data cache", fix)
    if not isinstance(blob, dict) or set(blob) != set(counts):
        got = sorted(map(str, blob)) if isinstance(blob, dict) else type(blob).__name__
        raise CheckpointError(f"{path}: expected the splits {', '.join(counts)}, found {got}; {fix}")
    parts = []
    for name, count in counts.items():
        want = {"f": (count, n, n), "g": (count, DEGREE + 1, DEGREE + 1)}
        pair = blob[name]
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise CheckpointError(f"{path}: split {name} is not a pair of tensors (sources, solutions); {fix}")
        for (what, shape), t in zip(want.items(), pair, strict=True):
            if not isinstance(t, Tensor) or tuple(t.shape) != shape or t.dtype != torch.float64:
                found = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
                raise CheckpointError(
                    f"{path}: split {name}.{what} is {found}, expected {shape} torch.float64 "
                    f"(for these arguments); {fix}"
                )
        parts.append(PoissonData(*pair))
    return Splits(*parts)
