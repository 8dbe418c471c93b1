"""A recurrent network over applicatives: ``h_t = σ(W h_{t-1} + U x_t + b)`` with the state on any structure.

The design source's future work: the state ``h`` is a value on a structure ``H`` -- a ``Vector`` of
units, or a function (``Chebyshev``), or anything else with the contract -- and the input ``x_t`` a value
on ``X``. ``W h`` and ``U x`` are the generic linear maps (contracting ``H``'s and ``X``'s measures),
``σ`` acts at ``H``'s positions (``fmap``), and :func:`scan` runs the cell along an ordered sequence axis
(capability ``ordered``), one step per position::

    h_0 = pure 0,   h_t = cell(h_{t-1}, x_t),   result ``Seq x H`` = (h_1, ..., h_T)

so output ``t`` depends on inputs ``<= t`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Structure, StructureError, add, pointwise

X = TypeVar("X", bound=Structure)
H = TypeVar("H", bound=Structure)
S = TypeVar("S", bound=Structure)


class RNNCell(nn.Module, Generic[X, H]):
    """``h' = σ(W h + U x + b)``: ``W : H -> H`` (no bias), ``U : X -> H`` (with the bias ``b``)."""

    def __init__(
        self,
        inp: X,
        state: H,
        activation: Callable[[Tensor], Tensor] = torch.tanh,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.inp, self.state, self.activation = inp, state, activation
        self.recurrent: Linear[H, H] = Linear(state, state, bias=False, dtype=dtype)
        self.input: Linear[X, H] = Linear(inp, state, dtype=dtype)

    def forward(self, h: Field[H], x: Field[X]) -> Field[H]:
        return self.step(h, self.input(x))

    def step(self, h: Field[H], drive: Field[H]) -> Field[H]:
        """``σ(W h + drive)`` for a precomputed ``drive = U x + b`` (a scan computes it for all steps at once)."""
        return pointwise(self.activation, add(self.recurrent(h), drive))

    def __call__(self, h: Field[H], x: Field[X]) -> Field[H]:
        return cast("Field[H]", super().__call__(h, x))


def scan(cell: RNNCell[X, H], x: Field[S, X], h0: Field[H] | None = None) -> Field[S, H]:
    """Run ``cell`` along the ordered sequence axis of ``x`` (``Seq x X``): the states ``Seq x H``."""
    seq = x.structures[0]
    if not seq.ordered:
        raise StructureError(f"scan: {seq!r} has no order (capability `ordered`); scan along a Vector or Padded axis")
    if len(x.structures) != 2:
        raise StructureError(f"scan: expected values Seq x X, got axes {x.structures}")
    batch = x.batch_shape
    if h0 is None:
        zero = x.tensor.new_zeros(batch)
        h0 = Field(cell.state.pure(zero, -1), (cell.state,), x.ring)
    drive = cell.input(x).tensor  # U x_t + b for every t in one map: only W h is sequential
    h, states = h0, []
    for t in range(seq.size):
        h = cell.step(h, Field(drive[..., t, :], (cell.state,), x.ring))
        states.append(h.tensor)
    return cast("Field[S, H]", Field(torch.stack(states, -2), (seq, cell.state), x.ring))
