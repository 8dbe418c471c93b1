"""A learned node algebra on DAGs: fold a batch of DAGs from sources to sinks with a :class:`~models.NodeCell`.

The DAG version of :class:`models.TreeFold`. A source's state is ``h = norm_leaf(E x)`` (``x`` its
features on ``X``); an operation node ``v`` with children ``l``, ``r`` and operation ``o`` has
``h_v = cell(h_l, h_r, o)``, the same cell as the tree fold's (an MLP of the two children with a bilinear
term, its hidden layer scaled and shifted by the operation; see :mod:`models.treefold`). The fold is
:meth:`instances.DAG.fold`: one call of the cell per topological level over the whole ragged batch, and a
shared node's state is computed once and read by every parent -- on the unrolled tree the same network
would recompute it once per path (``2^k`` times after ``k`` levels of sharing), with the same result.
"""

from __future__ import annotations

from typing import TypeVar, cast

from applicative import Field, Structure
from instances import DAG

from .treefold import Fold

X = TypeVar("X", bound=Structure)
D = TypeVar("D", bound=Structure)

__all__ = ["DAGFold"]


class DAGFold(Fold[X, D]):
    """A DAG network: embed the sources' features ``X`` on ``D``, fold each DAG with a :class:`~models.NodeCell`."""

    def forward(self, dag: DAG, nodes: Field[DAG, X]) -> Field[DAG, D]:
        """Every node's state ``(*batch, N, D)`` of a batch of DAGs with features ``DAG x X`` (read at sources).

        ``dag.last(...)`` of the result is each DAG's output node.
        """
        return dag.fold(self.leaves(nodes, dag.operations, "DAGs"), self.cell)

    def __call__(self, dag: DAG, nodes: Field[DAG, X]) -> Field[DAG, D]:
        return cast("Field[DAG, D]", super().__call__(dag, nodes))
