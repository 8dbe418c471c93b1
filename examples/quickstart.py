"""Quickstart: a typed Transformer over Vectors -- build it, run it, train a step, see the types.

Run: ``python -m examples.quickstart`` (about a second on a CPU).
"""

import torch

from applicative import Field, StructureError, mul_mv
from instances import Vector
from models import decoder


# fmt: off
class Seq(Vector): size = 16  # noqa: E701  -- one class per axis: mypy tells them apart
class Tokens(Vector): size = 8  # noqa: E701
class Model(Vector): size = 32  # noqa: E701
class Hidden(Vector): size = 64  # noqa: E701
# fmt: on


def main() -> None:
    model = decoder(Tokens(), Model(), Hidden(), heads=4, depth=2)  # causal; an ordinary nn.Module
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x: Field[Seq, Tokens] = Field(torch.randn(4, 16, 8), (Seq(), Tokens()))  # batch 4 is untyped
    y: Field[Seq, Tokens] = model(x)
    loss = (y.tensor[:, :-1] - x.tensor[:, 1:]).pow(2).mean()  # predict the next position
    torch.autograd.backward(loss)  # loss.backward(), in a form mypy --strict accepts
    opt.step()
    print(y)  # Field[Seq(16), Tokens(8)](batch=(4,), dtype=torch.float32, ...)

    w: Field[Model, Tokens] = model.embed.weight_field
    print(mul_mv(w, Field(torch.randn(8), (Tokens(),))))  # Field[Model(32)]
    try:
        mul_mv(w, Field(torch.randn(32), (Model(),)))  # type: ignore[misc]  # mypy rejects this line...
    except StructureError as e:  # ...and so does the run-time check
        print("StructureError:", e)


if __name__ == "__main__":
    main()
