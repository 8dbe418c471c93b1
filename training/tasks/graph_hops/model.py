"""The models of the two-hop task: the generic encoder on a :class:`instances.Graph` with
:class:`instances.EdgeSoftmax` (attention along the edges), and PyTorch Geometric's TransformerConv and GATConv."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn
from torch.nn import functional as nnf

from applicative import Field, Vector
from instances import EdgeSoftmax, Graph
from models import encoder


class Features(Vector):
    """A node's features: marked or not (in), the two classes (out), one-hot."""

    size = 2


class Ours(nn.Module):
    """:func:`models.encoder` (width 32, 4 heads, MLP 64) over the graph's nodes, attention along the edges."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.net = encoder(Features(), Vector(32), Vector(64), heads=4, depth=depth, normalise=EdgeSoftmax(8**-0.5))

    def forward(self, g: Graph, marks: Tensor) -> Tensor:
        x = Field(nnf.one_hot(marks, 2).to(torch.float32), (g, Features()))
        return self.net(x).tensor  # (B, n, 2) logits


class PyG(nn.Module):
    """Two PyG attention layers on the batch flattened into one graph (PyG's batching), and a linear head."""

    def __init__(self, kind: str, width: int) -> None:
        super().__init__()
        with warnings.catch_warnings():  # PyG's import uses torch.jit.script, which torch deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch_geometric.nn import GATConv, TransformerConv
        self.kind, self.embed = kind, nn.Linear(2, width)
        if kind == "transformerconv":
            self.convs = nn.ModuleList([TransformerConv(width, width // 4, heads=4) for _ in range(2)])
        else:
            self.convs = nn.ModuleList([GATConv(width, width // 4, heads=4) for _ in range(2)])
        self.head = nn.Linear(width, 2)

    def forward(self, g: Graph, marks: Tensor) -> Tensor:
        b, n = marks.shape
        e = g.edges.reshape(b, -1, 2)
        e = e[e[..., 0] != e[..., 1]]  # TransformerConv's root weight and GAT's own self-loops see the node itself
        real = g.edges[..., 0] != g.edges[..., 1]
        off = (torch.arange(b, device=marks.device)[:, None] * n).expand(-1, g.edges.shape[-2])[real]
        edge_index = (e + off[:, None]).T  # (2, E): sources, targets
        h = self.embed(nnf.one_hot(marks.reshape(-1), 2).to(torch.float32))
        for conv in self.convs:
            h = conv(h, edge_index)
            h = torch.relu(h) if self.kind == "transformerconv" else nnf.elu(h)
        return self.head(h).reshape(b, n, 2)  # type: ignore[no-any-return]


def build(kind: str) -> nn.Module:
    """A fresh model of ``kind``, the PyG models at the widths nearest ours in parameters."""
    if kind == "ours":
        return Ours(2)
    if kind == "ours-1":
        return Ours(1)
    return PyG(kind, 48 if kind == "transformerconv" else 92)  # widths nearest ours in parameters (+10%, +4%)
