"""Tropical semirings: their laws, and iterated generic ``mul_mm`` as shortest / longest paths.

References: ``scipy.sparse.csgraph.shortest_path`` (min-plus) and a plain-Python
dynamic programme over a DAG (max-plus longest paths).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path

from applicative import Field, Ring, Structure, mul_mm
from applicative.laws import EXACT, LAWS, Elements, check_laws
from instances.rings import MAX_PLUS, MIN_PLUS
from instances.vector import Vector


@pytest.mark.parametrize("ring", [MAX_PLUS, MIN_PLUS], ids=repr)
def test_tropical_ring_laws_hold_exactly(ring: Ring) -> None:
    zero = float(ring.zero(torch.zeros(())).item())
    wide = Elements(-1000, 1000, integral=True, specials=(zero,))
    ring_laws = [law for law in LAWS if law.area == "Ring"]
    report = check_laws(Vector(4), ring, laws=ring_laws, elements=wide, max_examples=20)
    assert all(r.status == "exact" and r.tolerance == EXACT for r in report.results), report.table()


def _random_graph(n: int, density: float, seed: int, dag: bool = False, low: int = 0) -> np.ndarray:
    """Edge weights (integers in ``[low, 9]``) with ``nan`` where there is no edge."""
    rng = np.random.default_rng(seed)
    w = rng.integers(low, 10, size=(n, n)).astype(np.float64)
    w[rng.random((n, n)) >= density] = np.nan
    np.fill_diagonal(w, np.nan)
    if dag:
        w[np.tril_indices(n)] = np.nan
    return w


def _closure(w: Field[Structure, Structure], steps: int) -> Field[Structure, Structure]:
    """``D_{k+1} = D_k ⊗ W`` from ``D_0 = W``: best paths of at most ``steps + 1`` edges."""
    d = w
    for _ in range(steps):
        d = mul_mm(d, w)
    return d


def _adjacency(w: np.ndarray, ring: Ring) -> Field[Structure, Structure]:
    """The ring's adjacency matrix: edge weights, ``zero`` for no edge, ``one`` on the diagonal."""
    t = torch.from_numpy(w)
    t = torch.where(torch.isnan(t), ring.zero(t), t)
    t.diagonal().copy_(ring.one(t.diagonal()))
    node = Vector(len(w))
    return Field(t, (node, node), ring)


@given(n=st.integers(2, 30), density=st.floats(0.05, 0.6), seed=st.integers(0, 2**32 - 1))
def test_min_plus_mul_mm_iterated_is_all_pairs_shortest_paths(n: int, density: float, seed: int) -> None:
    w = _random_graph(n, density, seed)
    got = _closure(_adjacency(w, MIN_PLUS), n - 2).tensor.numpy()
    want = shortest_path(csgraph_from_dense(w, null_value=np.nan), method="FW", directed=True)
    np.testing.assert_array_equal(got, want)


@given(n=st.integers(2, 30), density=st.floats(0.05, 0.6), seed=st.integers(0, 2**32 - 1))
def test_min_plus_repeated_squaring(n: int, density: float, seed: int) -> None:
    w = _random_graph(n, density, seed)
    d = _adjacency(w, MIN_PLUS)
    for _ in range(max(1, math.ceil(math.log2(n)))):
        d = mul_mm(d, d)
    want = shortest_path(csgraph_from_dense(w, null_value=np.nan), method="D", directed=True)
    np.testing.assert_array_equal(d.tensor.numpy(), want)


def _longest_paths_dag(w: np.ndarray) -> np.ndarray:
    """Heaviest path weights in a DAG whose edges go from lower to higher index (plain Python)."""
    n = len(w)
    best = [[-math.inf] * n for _ in range(n)]
    for i in range(n):
        best[i][i] = 0.0
        for j in range(i + 1, n):
            for k in range(i, j):
                if best[i][k] > -math.inf and not math.isnan(w[k][j]):
                    best[i][j] = max(best[i][j], best[i][k] + w[k][j])
    return np.array(best)


@given(n=st.integers(2, 20), density=st.floats(0.1, 0.8), seed=st.integers(0, 2**32 - 1))
def test_max_plus_mul_mm_iterated_is_longest_paths_in_a_dag(n: int, density: float, seed: int) -> None:
    w = _random_graph(n, density, seed, dag=True, low=-5)  # negative weights are fine in a DAG
    got = _closure(_adjacency(w, MAX_PLUS), n - 2).tensor.numpy()
    np.testing.assert_array_equal(got, _longest_paths_dag(w))


def _floyd_warshall(w: np.ndarray) -> np.ndarray:
    """All-pairs shortest path lengths by Floyd--Warshall in numpy (``inf``: unreachable)."""
    d = np.where(np.isnan(w), np.inf, w)
    np.fill_diagonal(d, 0.0)
    for k in range(len(d)):
        d = np.minimum(d, d[:, k : k + 1] + d[k : k + 1, :])
    return d


@pytest.mark.parametrize(("density", "seed"), [(0.2, 0), (0.08, 1), (0.04, 2)])
def test_min_plus_closure_of_30_nodes_is_floyd_warshall(density: float, seed: int) -> None:
    """30 nodes, 28 generic (materialised n³) min-plus products: every shortest path of up to 29 edges.

    Timing is not a unit test's business (see ``benchmarks/``); this checks the result against a
    Floyd--Warshall written in numpy, independent of both the library and scipy.
    """
    w = _random_graph(30, density, seed=seed)
    got = _closure(_adjacency(w, MIN_PLUS), 28).tensor.numpy()
    want = _floyd_warshall(w)
    assert (want < np.where(np.isnan(w), np.inf, w)).sum() > 30  # many best paths take more than one edge
    np.testing.assert_array_equal(got, want)
