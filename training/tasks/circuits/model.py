"""The circuit classifiers: a fold (over the DAG or the unrolled tree) or the message-passing peer, read out
at the output node onto the ten digits."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Linear
from instances import DAG, Expressions, Vector
from models import DAGFold, TreeFold

from .data import OPS
from .gnn import CircuitGNN


class Digits(Vector):
    """The ten digits: a source's one-hot value, and the classes."""

    size = 10


class Classifier(nn.Module):
    """A fold (DAG or tree) of one-hot digits, read out at the output node by a linear map onto the 10 digits."""

    def __init__(self, kind: str, width: int, hidden: int) -> None:
        super().__init__()
        self.kind = kind
        if kind == "gnn":
            self.gnn = CircuitGNN(width, len(OPS))
            return
        state, cell_hidden = Vector(width), Vector(hidden)
        fold = DAGFold if kind == "dag" else TreeFold
        self.fold = fold(Digits(), state, cell_hidden, len(OPS))
        self.head: Linear[Vector, Digits] = Linear(state, Digits())

    def forward(self, structure: DAG | Expressions, digits: Tensor) -> Tensor:
        x = nnf.one_hot(digits, 10).to(torch.float32)
        if self.kind == "gnn":
            assert isinstance(structure, DAG)
            return self.gnn(structure, digits)  # type: ignore[no-any-return]
        if isinstance(structure, DAG):
            assert isinstance(self.fold, DAGFold)
            out = structure.last(self.fold(structure, Field(x, (structure, Digits()))))
        else:
            assert isinstance(self.fold, TreeFold)
            out = self.fold(structure, Field(x, (structure.tree, Digits())))
        return self.head(out).tensor  # (B, 10) logits
