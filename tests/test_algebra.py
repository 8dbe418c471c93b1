"""Generic linear algebra over Vectors equals ``torch.einsum``; fused kernels equal their generic definitions.

Shapes, typed leading axes and untyped (broadcasting) batch axes are drawn by
hypothesis; every result is compared with an ``einsum`` (or plain torch)
reference written independently of the library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import hypothesis.extra.numpy as hnp
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

import applicative as ap
from applicative import REAL, Field, Stacked, Structure
from applicative import _kernels as kernels
from instances import MAX_PLUS, Vector

F64 = torch.float64
LETTERS = "pqr"

sizes = st.integers(1, 4)
typed_leading = st.lists(sizes, min_size=0, max_size=2)


def batch_pair() -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """Two untyped batch shapes that broadcast against each other (right-aligned)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3).map(lambda s: s.input_shapes)


seeds = st.integers(0, 2**31 - 1)


def rand(seed: int, *shape: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=F64)


def vec(*ns: int) -> tuple[Vector, ...]:
    return tuple(Vector(n) for n in ns)


def close(got: Field[*tuple[Any, ...]], want: Tensor, axes: Sequence[Structure]) -> None:
    assert got.structures == tuple(axes)
    assert got.tensor.shape == want.shape, (got.tensor.shape, want.shape)
    torch.testing.assert_close(got.tensor, want, rtol=1e-12, atol=1e-12)


# ---- the applicative primitives -----------------------------------------------------------


@given(batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), inner=typed_leading, n=sizes, seed=seeds)
def test_pure(batch: tuple[int, ...], inner: list[int], n: int, seed: int) -> None:
    x = rand(seed, *batch, *inner)
    got = ap.pure(Vector(n), Field(x, vec(*inner)))
    want = torch.stack([x] * n, dim=x.ndim - len(inner))
    close(got, want, vec(n, *inner))


@given(batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), inner=typed_leading, n=sizes, seed=seeds)
def test_counit(batch: tuple[int, ...], inner: list[int], n: int, seed: int) -> None:
    x = rand(seed, *batch, n, *inner)
    got = ap.counit(Field(x, vec(n, *inner)))
    close(got, x.sum(len(batch)), vec(*inner))


@given(batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), f=sizes, g=sizes, h=sizes, seed=seeds)
def test_fmap(batch: tuple[int, ...], f: int, g: int, h: int, seed: int) -> None:
    x, m = rand(seed, *batch, f, g), rand(seed + 1, h, g)
    mf = Field(m, vec(h, g))
    got = ap.fmap(lambda row: ap.mul_mv(mf, row), Field(x, vec(f, g)))
    close(got, torch.einsum("...fg,hg->...fh", x, m), vec(f, h))
    got2 = ap.fmap(lambda row: ap.pointwise(torch.tanh, row), Field(x, vec(f, g)))
    close(got2, torch.tanh(x), vec(f, g))


@given(batches=batch_pair(), f=sizes, g=sizes, seed=seeds)
def test_zip_with(batches: tuple[tuple[int, ...], ...], f: int, g: int, seed: int) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, f, g), rand(seed + 1, *bb, f, g)
    got = ap.zip_with(ap.dot, Field(a, vec(f, g)), Field(b, vec(f, g)))
    close(got, torch.einsum("...fg,...fg->...f", a, b), vec(f))


@given(batches=batch_pair(), axes=st.lists(sizes, min_size=1, max_size=3), seed=seeds)
def test_add_mul_pointwise2(batches: tuple[tuple[int, ...], ...], axes: list[int], seed: int) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, *axes), rand(seed + 1, *bb, *axes)
    fa, fb = Field(a, vec(*axes)), Field(b, vec(*axes))
    close(ap.add(fa, fb), a + b, vec(*axes))
    close(ap.mul(fa, fb), a * b, vec(*axes))
    close(ap.pointwise2(torch.atan2, fa, fb), torch.atan2(a, b), vec(*axes))
    close(ap.scale(2.5, fa), 2.5 * a, vec(*axes))


# ---- derived linear algebra ------------------------------------------------------------------


@given(batches=batch_pair(), lead=typed_leading, n=sizes, seed=seeds)
def test_dot(batches: tuple[tuple[int, ...], ...], lead: list[int], n: int, seed: int) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, *lead, n), rand(seed + 1, *bb, *lead, n)
    got = ap.dot(Field(a, vec(*lead, n)), Field(b, vec(*lead, n)))
    close(got, torch.einsum("...i,...i->...", a, b), vec(*lead))


@given(batches=batch_pair(), f=sizes, g=sizes, seed=seeds)
def test_mul_mv_mul_vm(batches: tuple[tuple[int, ...], ...], f: int, g: int, seed: int) -> None:
    bm, bv = batches
    m = rand(seed, *bm, f, g)
    close(ap.mul_mv(Field(m, vec(f, g)), Field(v := rand(seed + 1, *bv, g), vec(g))),
          torch.einsum("...fg,...g->...f", m, v), vec(f))  # fmt: skip
    close(ap.mul_vm(Field(u := rand(seed + 2, *bv, f), vec(f)), Field(m, vec(f, g))),
          torch.einsum("...f,...fg->...g", u, m), vec(g))  # fmt: skip


@given(batches=batch_pair(), lead=typed_leading, g=sizes, h=sizes, seed=seeds)
def test_mul_mm(batches: tuple[tuple[int, ...], ...], lead: list[int], g: int, h: int, seed: int) -> None:
    """``mul_mm`` with typed leading axes on the left (``Field[A, B, G]``) and broadcasting batches."""
    ba, bb = batches
    a, b = rand(seed, *ba, *lead, g), rand(seed + 1, *bb, g, h)
    got = ap.mul_mm(Field(a, vec(*lead, g)), Field(b, vec(g, h)))
    ls = LETTERS[: len(lead)]
    close(got, torch.einsum(f"...{ls}g,...gh->...{ls}h", a, b), vec(*lead, h))


@given(batches=batch_pair(), lead=typed_leading, f=sizes, g=sizes, seed=seeds)
def test_mul_mmt(batches: tuple[tuple[int, ...], ...], lead: list[int], f: int, g: int, seed: int) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, f, g), rand(seed + 1, *bb, *lead, g)
    got = ap.mul_mmt(Field(a, vec(f, g)), Field(b, vec(*lead, g)))
    ls = LETTERS[: len(lead)]
    close(got, torch.einsum(f"...fg,...{ls}g->...{ls}f", a, b), vec(*lead, f))


@given(batches=batch_pair(), f=sizes, g=sizes, seed=seeds)
def test_outer(batches: tuple[tuple[int, ...], ...], f: int, g: int, seed: int) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, f), rand(seed + 1, *bb, g)
    close(ap.outer(Field(a, vec(f)), Field(b, vec(g))), torch.einsum("...f,...g->...fg", a, b), vec(f, g))


@given(
    batches=batch_pair(), lead=typed_leading, i=sizes, o=sizes, bias=st.booleans(), batched_w=st.booleans(), seed=seeds
)
def test_linear_and_mlp(
    batches: tuple[tuple[int, ...], ...], lead: list[int], i: int, o: int, bias: bool, batched_w: bool, seed: int
) -> None:
    """``W x + b`` at every position of the typed leading axes; weights may carry their own batch."""
    bx, bw = batches if batched_w else (batches[0], ())
    x, w, b = rand(seed, *bx, *lead, i), rand(seed + 1, *bw, o, i), rand(seed + 2, *bw, o)
    ls = LETTERS[: len(lead)]

    def align(t: Tensor, inner: int) -> Tensor:  # the weight's batch aligns with x's batch, not its typed axes
        return t.reshape(*t.shape[: t.ndim - inner], *([1] * len(lead)), *t.shape[t.ndim - inner :]) if bw else t

    want = torch.einsum(f"...{ls}i,...oi->...{ls}o", x, w)
    if bias:
        want = want + align(b, 1)
    got = ap.linear(Field(w, vec(o, i)), Field(b, vec(o)) if bias else None, Field(x, vec(*lead, i)))
    close(got, want, vec(*lead, o))

    w2, b2 = rand(seed + 3, i, o), rand(seed + 4, i)
    got_mlp = ap.mlp(
        Field(w, vec(o, i)),
        Field(b, vec(o)),
        Field(w2, vec(i, o)),
        Field(b2, vec(i)),
        torch.relu,
        Field(x, vec(*lead, i)),
    )
    hidden = torch.relu(want if bias else want + align(b, 1))
    close(got_mlp, torch.einsum(f"...{ls}o,io->...{ls}i", hidden, w2) + b2, vec(*lead, i))


@given(batches=batch_pair(), f=sizes, g=sizes, h=sizes, seed=seeds)
def test_mul_mm_max_plus(batches: tuple[tuple[int, ...], ...], f: int, g: int, h: int, seed: int) -> None:
    """Over the tropical ring ``mul_mm`` is ``max_j (a_ij + b_jk)``: the generic definition, no ``matmul``."""
    ba, bb = batches
    a, b = rand(seed, *ba, f, g), rand(seed + 1, *bb, g, h)
    got = ap.mul_mm(Field(a, vec(f, g), MAX_PLUS), Field(b, vec(g, h), MAX_PLUS))
    close(got, (a.unsqueeze(-1) + b.unsqueeze(-3)).amax(-2), vec(f, h))


# ---- fused kernels equal their generic definitions --------------------------------------------


@given(batches=batch_pair(), m=sizes, n=sizes, k=sizes, seed=seeds)
def test_vector_contract_is_generic_contract(
    batches: tuple[tuple[int, ...], ...], m: int, n: int, k: int, seed: int
) -> None:
    ba, bb = batches
    a, b = rand(seed, *ba, m, n), rand(seed + 1, *bb, n, k)
    s = Vector(n)
    fused, generic = s.contract(a, b, REAL), kernels.generic_contract(s, a, b, REAL)
    torch.testing.assert_close(fused, generic, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fused, torch.einsum("...mn,...nk->...mk", a, b), rtol=1e-12, atol=1e-12)
    w = rand(seed + 2, k, n)
    torch.testing.assert_close(s.affine(a, w, None, REAL), kernels.generic_affine(s, a, w, None, REAL))


@given(copies=st.integers(1, 3), n=sizes, m=sizes, k=sizes, seed=seeds)
def test_stacked_contract_is_generic_contract(copies: int, n: int, m: int, k: int, seed: int) -> None:
    s = Stacked(Vector(n), copies)
    a, b = rand(seed, 2, m, s.size), rand(seed + 1, 2, s.size, k)
    torch.testing.assert_close(s.contract(a, b, REAL), kernels.generic_contract(s, a, b, REAL), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(s.contract(a, b, REAL), a @ b, rtol=1e-12, atol=1e-12)


# ---- no broadcast intermediates ------------------------------------------------------------------


class _LargestAllocation(TorchDispatchMode):
    """Records the largest storage any aten op allocates (views of existing storage do not count)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0
        self.by_op: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        for t in _tensors(out):
            storage = t.untyped_storage()
            if storage.data_ptr() not in inputs:  # a fresh allocation, not a view
                n = storage.nbytes() // t.element_size()
                self.largest = max(self.largest, n)
                self.by_op[str(func)] = max(self.by_op.get(str(func), 0), n)
        return out


def _tensors(tree: object) -> Iterator[Tensor]:
    if isinstance(tree, Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for t in tree:
            yield from _tensors(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from _tensors(t)


@contextmanager
def largest_allocation() -> Iterator[_LargestAllocation]:
    with _LargestAllocation() as mode:
        yield mode


N = 32  # F = G = H = N, so an F x G x H intermediate has N**3 elements and every real value at most N**2


def _mul_mm_forward_backward() -> None:
    a = torch.randn(N, N, dtype=F64, requires_grad=True)
    b = torch.randn(N, N, dtype=F64, requires_grad=True)
    out = ap.mul_mm(Field(a, vec(N, N)), Field(b, vec(N, N)))
    out.tensor.sum().backward()


def _attention_unfused() -> None:
    q, k, v = (torch.randn(N, N, dtype=F64, requires_grad=True) for _ in range(3))
    out = ap.attention(
        ap.ScaledSoftmax(0.1), Field(q, vec(N, N)), Field(k, vec(N, N)), Field(v, vec(N, N)), fused=False
    )
    out.tensor.sum().backward()


@pytest.mark.parametrize("run", [_mul_mm_forward_backward, _attention_unfused], ids=["mul_mm", "attention"])
def test_no_cubic_intermediate(run: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """Vector's ``mul_mm`` (forward and backward) never allocates an ``F x G x H`` tensor.

    The same probe applied to the generic definition does see one, so the probe can fail.
    """
    with largest_allocation() as mode:
        run()
    assert mode.largest <= N * N, mode.by_op

    monkeypatch.setattr(Vector, "contract", kernels.generic_contract)
    with largest_allocation() as mode:
        run()
    assert mode.largest >= N**3
