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

from typing import Generic, TypeVar, cast

import torch
from torch import nn

from applicative import Field, LayerNorm, Linear, Structure, StructureError
from instances import DAG

from .treefold import Cell, NodeCell

X = TypeVar("X", bound=Structure)
D = TypeVar("D", bound=Structure)

__all__ = ["DAGFold"]


class DAGFold(nn.Module, Generic[X, D]):
    """A DAG network: embed the sources' features ``X`` on ``D``, fold each DAG with a :class:`NodeCell`.

    Args:
        inp: the nodes' feature structure ``X`` (read at the sources).
        state: the state structure ``D``.
        hidden: the cell's hidden structure.
        operations: the number of node operation codes.
        cell: ``"mlp"`` or ``"gated"`` (see :class:`NodeCell`).
    """

    def __init__(
        self,
        inp: X,
        state: D,
        hidden: Structure,
        operations: int,
        cell: Cell = "mlp",
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.inp, self.state = inp, state
        self.embed: Linear[X, D] = Linear(inp, state, dtype=dtype, device=device)
        self.leaf_norm: LayerNorm[D] = LayerNorm(state, dtype=dtype, device=device)
        self.cell: NodeCell[D] = NodeCell(state, hidden, operations, cell, dtype=dtype, device=device)

    def forward(self, dag: DAG, nodes: Field[DAG, X]) -> Field[DAG, D]:
        """Every node's state ``(*batch, N, D)`` of a batch of DAGs with features ``DAG x X`` (read at sources).

        ``dag.last(...)`` of the result is each DAG's output node.
        """
        if dag.operations > self.cell.operations:
            raise StructureError(
                f"DAGFold: the DAGs use {dag.operations} operation codes, the cell was built for {self.cell.operations}"
            )
        h = self.leaf_norm(self.embed(nodes))
        return dag.fold(h, self.cell)

    def __call__(self, dag: DAG, nodes: Field[DAG, X]) -> Field[DAG, D]:
        return cast("Field[DAG, D]", super().__call__(dag, nodes))
