"""Operators with exact solutions, sampled in every layout: the operator task's test data (written to files)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from operators.layout import Axis

Exact = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Case:
    """A family of input functions and their exact outputs, on one or two axes."""

    name: str
    axes: tuple[Axis, ...]
    draw: Callable[[np.random.Generator, int], np.ndarray]  # coefficients (count, ...)
    inputs: Callable[[np.ndarray, tuple[np.ndarray, ...]], np.ndarray]  # (count, *points) at coordinates
    outputs: Callable[[np.ndarray, tuple[np.ndarray, ...]], np.ndarray]

    def sample(self, count: int, points: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``(inputs, outputs)`` of ``count`` draws on the layouts' ``points`` samples per axis."""
        c = self.draw(np.random.default_rng(seed), count)
        xs = tuple(a.coordinates(points).numpy() for a in self.axes)
        return self.inputs(c, xs), self.outputs(c, xs)


K = np.arange(1, 4)


def _sines(c: np.ndarray, xs: tuple[np.ndarray, ...], scale: np.ndarray) -> np.ndarray:
    sx, sy = (np.sin(math.pi * np.outer(x, K)) for x in xs)
    return np.einsum("nkl,ik,jl->nij", c * scale, sx, sy)


def poisson(layout: str) -> Case:
    """``-Δu = a`` on the unit square, ``u = 0`` on its boundary: ``a = Σ c_kl sin kπx sin lπy`` and
    ``u = Σ c_kl / (π²(k² + l²)) sin kπx sin lπy``."""
    lam = math.pi**2 * (K[:, None] ** 2 + K[None, :] ** 2)
    axis = Axis(layout, boundary="zero")  # type: ignore[arg-type]
    return Case(
        f"poisson-{layout}",
        (axis, axis),
        lambda rng, n: rng.standard_normal((n, 3, 3)),
        lambda c, xs: _sines(c, xs, np.ones(1)),
        lambda c, xs: _sines(c, xs, 1 / lam),
    )


def _trig(c: np.ndarray, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    th = 2 * math.pi * np.outer(x, K)
    return (c[:, 0] * scale) @ np.cos(th).T + (c[:, 1] * scale) @ np.sin(th).T


def periodic_inverse() -> Case:
    """``-u'' = a`` on the circle ``[0, 1)`` with zero means: ``u = Σ (a_k cos 2πkx + b_k sin 2πkx) / (2πk)²``."""
    scale = 1 / (2 * math.pi * K) ** 2
    return Case(
        "circle",
        (Axis("periodic"),),
        lambda rng, n: rng.standard_normal((n, 2, 3)),
        lambda c, xs: _trig(c, xs[0], np.ones(1)),
        lambda c, xs: _trig(c, xs[0], scale),
    )


def antiderivative(layout: str) -> Case:
    """``u(x) = ∫_0^x a``: ``a = c_0 + Σ c_k cos kπx`` gives ``u = c_0 x + Σ c_k sin kπx / (kπ)``."""

    def a(c: np.ndarray, xs: tuple[np.ndarray, ...]) -> np.ndarray:
        return c[:, :1] + c[:, 1:] @ np.cos(math.pi * np.outer(xs[0], K)).T

    def u(c: np.ndarray, xs: tuple[np.ndarray, ...]) -> np.ndarray:
        return c[:, :1] * xs[0] + (c[:, 1:] / (math.pi * K)) @ np.sin(math.pi * np.outer(xs[0], K)).T

    return Case(f"antiderivative-{layout}", (Axis(layout),), lambda rng, n: rng.standard_normal((n, 4)), a, u)  # type: ignore[arg-type]


def heat(n: int, points: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """u0 of modes 1..4 on the unit period and u(t = 0.02) of u_t = 0.1 u_xx, exactly (each mode decays)."""
    rng = np.random.default_rng(seed)
    k = np.arange(1, 5)
    c, s = rng.standard_normal((n, 4)) / k, rng.standard_normal((n, 4)) / k
    x = np.arange(points) / points
    waves = np.cos(2 * np.pi * k[:, None] * x), np.sin(2 * np.pi * k[:, None] * x)
    decay = np.exp(-4 * np.pi**2 * 0.1 * k**2 * 0.02)
    return c @ waves[0] + s @ waves[1], (c * decay) @ waves[0] + (s * decay) @ waves[1]
