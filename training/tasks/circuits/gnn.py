"""The message-passing peer: a gated graph network (PyTorch Geometric) with as many rounds as the circuit is deep.

The circuit is a directed graph with edges child -> parent of two types (left and right child: the
difference is not symmetric). Node features are the one-hot digit (sources) or operation (operation
nodes); each round is one :class:`torch_geometric.nn.RGCNConv` over the two edge types followed by a
GRU update of every node's state, with weights shared across rounds (Li et al. 2016's gated graph
network, with relational messages as in Schlichtkrull et al. 2018), so it runs any number of rounds.
A batch runs as many rounds as its deepest circuit: the output node then has heard from every source.
Unlike the fold, every node is updated in every round, before its inputs are final.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from instances import DAG


class CircuitGNN(nn.Module):
    """Embed each node, run ``height`` rounds of relational message passing with a GRU update, read the output node."""

    def __init__(self, width: int, operations: int, classes: int = 10) -> None:
        super().__init__()
        with warnings.catch_warnings():  # PyG's import uses torch.jit.script, which torch deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch_geometric.nn import RGCNConv  # the bench extra: pip install -e ".[bench]"

        self.operations = operations
        self.embed = nn.Linear(10 + operations, width)
        self.conv = RGCNConv(width, width, num_relations=2)
        self.update = nn.GRUCell(width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, dag: DAG, digits: Tensor) -> Tensor:
        """Logits ``(B, classes)`` at each circuit's output node."""
        b, n = digits.shape
        source = dag.sources.reshape(-1)
        feats = torch.cat(
            [
                nnf.one_hot(digits.reshape(-1), 10) * source.unsqueeze(-1),
                nnf.one_hot(dag.ops.reshape(-1), self.operations) * (~source).unsqueeze(-1),
            ],
            -1,
        ).to(torch.float32)
        internal = (dag.mask & ~dag.sources).reshape(-1)
        parent = torch.arange(b * n, device=digits.device)[internal]
        kids = (
            dag.children.reshape(-1, 2) + (torch.arange(b, device=digits.device) * n).repeat_interleave(n)[:, None]
        )[internal]
        edge_index = torch.stack([torch.cat([kids[:, 0], kids[:, 1]]), torch.cat([parent, parent])])
        edge_type = torch.cat([torch.zeros_like(parent), torch.ones_like(parent)])
        h = self.embed(feats)
        for _ in range(dag.height):
            h = self.update(self.conv(h, edge_index, edge_type), h)
        out = h.reshape(b, n, -1)[torch.arange(b), dag.count - 1]
        return self.head(out)  # type: ignore[no-any-return]
