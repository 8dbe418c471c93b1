"""Graphs: signals on the nodes of per-example graphs, with attention restricted to edges.

A :class:`Graph` is the index set of a batch of graphs' nodes (``n`` slots, ``count[b]`` of them real in
example ``b``) with the counting measure on the real ones -- the :class:`Padded` contract, so every law
(functor, applicative, counit, fusion, attention) applies as it does there and everything is derived.
Its per-example data also holds directed edges ``(source j, target i)``; they matter only to the
normalisation that reads them:

:class:`EdgeSoftmax` -- attention along edges: query node ``i`` attends to the sources of its in-edges,

    a_ij = exp(s_ij) / Σ_{j' -> i} exp(s_ij'),   s_ij = scale · q_i · k_j,   o_i = Σ_{j -> i} a_ij v_j,

(``o_i = 0`` for a node with no in-edge; add self-loops to let a node see itself; repeated edges count
with their multiplicity). Its generic definition masks the dense ``n x n`` scores (the specification,
used with ``attention(..., fused=False)``); its lowering (:attr:`EdgeSoftmax.lowering`, the hook
:attr:`applicative.Normalise.lowering`) never forms them: one gather of ``q`` at each edge's target and ``k``,
``v`` at its source, a segment softmax over the edges into each target (``scatter_reduce`` max,
``index_add`` sums), and one ``index_add`` of the weighted values -- time and memory linear in the edges.
So ``models.encoder(..., normalise=EdgeSoftmax(d ** -0.5))`` on ``Field[Graph, Model]`` is a graph
Transformer (Dwivedi & Bresson 2021's sparse attention) with no new attention code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar, TypeVarTuple, cast, final

import torch
from torch import Tensor

from applicative import Field, Lowering, Normalise, Ragged, Structure, StructureError, per_example
from applicative.tensors import broadcast_shape, summary

F = TypeVar("F", bound=Structure)
G = TypeVar("G", bound=Structure)
H = TypeVar("H", bound=Structure)
I = TypeVarTuple("I")

__all__ = ["EdgeSoftmax", "Graph"]


@final
class Graph(Ragged):
    """Node signals on a batch of graphs of at most ``size`` nodes (a :class:`~applicative.Ragged` structure).

    Args:
        size: node slots ``n`` (the tensor axis).
        edges: ``(*batch, E, 2)`` integer ``(source, target)`` rows; ``-1, -1`` rows are padding.
        count: ``(*batch,)`` nodes per example in ``[1, n]`` (default ``n``); edges must join real nodes.

    Raises:
        StructureError: on a wrong shape or dtype, half-padded edge rows, or an edge to a node that is not there.
    """

    #: ``(*batch, E, 2)`` ``(source, target)`` rows, ``-1 -1`` at padding (to the most edges, when batches join)
    edges: Tensor = per_example(event_dims=2, pad_axis=-2, fill=-1)

    def __init__(self, size: int, edges: Tensor, count: Tensor | Sequence[int] | None = None) -> None:
        self.size, (self.edges, self.count) = size, _checked(size, edges, count)

    @classmethod
    def from_lists(cls, edges: Sequence[Sequence[tuple[int, int]]], counts: Sequence[int]) -> Graph:
        """A batch from edge lists ``[(source, target), ...]`` and node counts, one per example."""
        if len(edges) != len(counts) or not counts:
            raise StructureError(f"Graph.from_lists: need one edge list per count, got {len(edges)} and {len(counts)}")
        e = max(1, *(len(x) for x in edges))
        rows = [list(x) + [(-1, -1)] * (e - len(x)) for x in edges]
        return cls(max(counts), torch.tensor(rows, dtype=torch.int64).reshape(len(rows), e, 2), counts)

    def with_self_loops(self) -> Graph:
        """The same graphs with an edge ``i -> i`` at every real node."""
        i = torch.arange(self.size, device=self.edges.device).expand(*self.batch_shape, self.size)
        i = torch.where(self.mask, i, -1)
        edges = torch.cat([self.edges, torch.stack([i, i], -1)], -2)
        return self.derived("self-loops", (self.count, edges))

    def adjacency(self) -> Tensor:
        """``(*batch, n, n)`` edge multiplicities ``A[i, j]`` of ``j -> i`` (dense: for references and the spec)."""
        batch = self.count.numel()
        e = self.edges.reshape(batch, -1, 2)
        valid = e[..., 0] >= 0
        flat = (torch.arange(batch, device=e.device)[:, None] * self.size + e[..., 1]) * self.size + e[..., 0]
        a = torch.zeros(batch * self.size * self.size, dtype=torch.int64, device=e.device)
        a.index_add_(0, flat[valid], torch.ones_like(flat[valid]))
        return a.reshape(*self.batch_shape, self.size, self.size)

    def __repr__(self) -> str:
        return f"Graph({self.size}, batch={tuple(self.batch_shape)}, edges<={self.edges.shape[-2]})"


def _checked(size: int, edges: Tensor, count: Tensor | Sequence[int] | None) -> tuple[Tensor, Tensor]:
    """The edges (padding rows set to ``-1 -1``) and counts as fresh int64 tensors, or a named error."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise StructureError(f"Graph: size must be a positive int, got {size!r:.40}")
    if not isinstance(edges, Tensor) or edges.dtype.is_floating_point or edges.dtype == torch.bool:
        raise StructureError(f"Graph: edges must be an integer tensor (*batch, E, 2), got {summary(edges)}")
    if edges.ndim < 2 or edges.shape[-1] != 2:
        raise StructureError(
            f"Graph: edges must have shape (*batch, E, 2) ((source, target) rows), got {tuple(edges.shape)}"
        )
    batch = tuple(edges.shape[:-2])
    e = edges.to(torch.int64).clone()
    if count is None:
        c = torch.full(batch, size, dtype=torch.int64, device=e.device)
    else:
        c = count if isinstance(count, Tensor) else torch.tensor(list(count), dtype=torch.int64)
        if tuple(c.shape) != batch or c.dtype.is_floating_point:
            raise StructureError(f"Graph: count must be integers of shape {batch}, got {summary(c)}")
        c = c.to(e.device, torch.int64)
        if bool(((c < 1) | (c > size)).any()):
            raise StructureError(f"Graph: every count must lie in [1, {size}]")
    pad = (e < 0).all(-1)
    if bool(((e < 0).any(-1) & ~pad).any()):
        raise StructureError("Graph: an edge row has one index -1; padding rows are -1 -1, real ones two nodes")
    if bool(((e >= c[..., None, None]) & ~pad[..., None]).any()):
        raise StructureError(
            f"Graph: an edge joins a node at or beyond its example's count (the nodes are 0 .. count - 1 of {size})"
        )
    return torch.where(pad[..., None], -1, e), c


@dataclass(frozen=True)
class EdgeSoftmax(Normalise):
    """``softmax(scale * s)`` over each query node's in-edges of a :class:`Graph` (see the module)."""

    scale: float = 1.0

    def __call__(self, scores: Field[*I, F]) -> Field[*I, F]:
        """The definition on dense scores ``... x Graph x Graph``: non-edges masked, rows without edges zero."""
        g = _graph_axes(scores.structures[-2:], "EdgeSoftmax")
        t = scores.tensor
        a = g.adjacency().to(t.dtype)  # (*batch, n, n) multiplicities
        a = a.reshape(*a.shape[:-2], *[1] * (t.ndim - a.ndim), *a.shape[-2:])
        s = (t * self.scale).masked_fill(a == 0, float("-inf"))
        m = s.amax(-1, keepdim=True)
        p = a * torch.exp(s - torch.where(torch.isfinite(m), m, 0))
        return scores.with_tensor(p / p.sum(-1, keepdim=True).clamp_min(torch.finfo(t.dtype).tiny))

    @property
    def lowering(self) -> Lowering | None:
        return EDGES


def _edges(
    scale: float, causal: bool, queries: Field[*I, H], keys: Field[F, H], values: Field[F, G]
) -> Field[*I, G] | None:
    """Attention along the edges in time and memory linear in them (no ``n x n`` tensor); not causal."""
    if causal:
        return None
    g = _graph_axes((queries.structures[-2], keys.structures[0], values.structures[0]), "EdgeSoftmax")
    out = edge_attention(queries.tensor, keys.tensor, values.tensor, g, scale)
    return cast("Field[*I, G]", Field.unchecked(out, (*queries.structures[:-1], values.structures[1]), queries.ring))


#: :class:`EdgeSoftmax`'s lowering: a segment softmax over the edge list (edges carry no order: no causal form)
EDGES = Lowering("edges", _edges, causal=False)


def _graph_axes(axes: Sequence[Structure], op: str) -> Graph:
    g = axes[0]
    if not isinstance(g, Graph) or any(not isinstance(a, Graph) or not (a is g or a == g) for a in axes):
        raise StructureError(
            f"{op}: attention along edges needs queries, keys and values on one Graph (self-attention over its "
            f"nodes), got {[repr(a) for a in axes]}"
        )
    return g


def edge_attention(q: Tensor, k: Tensor, v: Tensor, graph: Graph, scale: float) -> Tensor:
    """``o_i = Σ_{j -> i} softmax_j(scale q_i·k_j) v_j`` by a segment softmax over the edge list.

    Args:
        q, k: ``(*batch, *extra, n, d)``; v: ``(*batch, *extra, n, g)``; ``batch`` the graph's, ``extra``
            any axes between (attention heads).

    Returns:
        ``(*batch, *extra, n, g)``.
    """
    nb = len(graph.batch_shape)
    shape = broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    batch, extra = shape[:nb], shape[nb:]
    if tuple(batch) != tuple(graph.batch_shape):
        raise StructureError(
            f"EdgeSoftmax: the values' leading axes {tuple(batch)} must be the graphs' batch "
            f"{tuple(graph.batch_shape)} (one graph per example; heads and other axes come after it)"
        )
    n, b = graph.size, math.prod(graph.batch_shape)
    x = math.prod(extra)

    def rows(t: Tensor) -> Tensor:  # (*batch, *extra, n, c) -> (B n, X, c): one row per node
        t = t.expand(*shape, *t.shape[-2:]).reshape(b, x, n, t.shape[-1])
        return t.transpose(1, 2).reshape(b * n, x, t.shape[-1])

    qr, kr, vr = rows(q), rows(k), rows(v)
    e = graph.edges.reshape(b, -1, 2)
    valid = (e[..., 0] >= 0).reshape(-1)
    base = torch.arange(b, device=e.device)[:, None] * n
    src = (base + e[..., 0].clamp(min=0)).reshape(-1)  # (B E,) rows of the nodes; padding points at row b n
    dst = (base + e[..., 1].clamp(min=0)).reshape(-1)
    s = (qr.index_select(0, dst) * kr.index_select(0, src)).sum(-1) * scale  # (B E, X)
    s = s.masked_fill(~valid[:, None], float("-inf"))
    index = dst[:, None].expand_as(s)
    m = torch.full((b * n, x), float("-inf"), dtype=s.dtype, device=s.device)
    m = m.scatter_reduce(0, index, s, "amax").detach()  # the max cancels in the softmax: no gradient through it
    p = torch.exp(s - torch.where(torch.isfinite(m), m, 0).index_select(0, dst))  # 0 at padding edges
    den = torch.zeros(b * n, x, dtype=s.dtype, device=s.device).index_add(0, dst, p)
    out = torch.zeros(b * n, x, vr.shape[-1], dtype=vr.dtype, device=vr.device)
    out = out.index_add(0, dst, p.unsqueeze(-1) * vr.index_select(0, src))
    out = out / den.clamp_min(torch.finfo(den.dtype).tiny).unsqueeze(-1)  # nodes without in-edges: 0
    return out.reshape(b, n, x, -1).transpose(1, 2).reshape(*batch, *extra, n, -1)
