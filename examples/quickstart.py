"""Quickstart: a typed Transformer over Vectors, trained for a few steps to reverse a sequence.

Run: ``python -m examples.quickstart`` (a couple of seconds on a CPU).
"""

import torch

from applicative import Field, StructureError, mul_mv
from instances import Vector
from models import encoder


class Seq(Vector): size = 8  # noqa: E701  -- one class per axis: mypy tells them apart
class Tokens(Vector): size = 4  # noqa: E701
class Model(Vector): size = 32  # noqa: E701
class Hidden(Vector): size = 64  # noqa: E701


def main() -> None:
    torch.manual_seed(0)
    model = encoder(Tokens(), Model(), Hidden(), heads=4, depth=2)  # an ordinary nn.Module
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(201):
        x: Field[Seq, Tokens] = Field(torch.randn(64, 8, 4), (Seq(), Tokens()))  # batch 64, untyped
        y: Field[Seq, Tokens] = model(x)
        loss = (y.tensor - x.tensor.flip(-2)).pow(2).mean()  # learn to reverse the sequence
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    print(y)  # Field[Seq(8), Tokens(4)](batch=(64,), ...)

    w: Field[Model, Tokens] = model.embed.weight_field
    print(mul_mv(w, Field(torch.randn(4), (Tokens(),))))  # Field[Model]
    try:
        mul_mv(w, Field(torch.randn(32), (Model(),)))  # type: ignore[misc]  # mypy rejects it, and so does run time
    except StructureError as e:
        print("StructureError:", e)


if __name__ == "__main__":
    main()
