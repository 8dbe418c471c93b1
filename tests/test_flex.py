"""FlexAttention lowering: the block mask from the keys' measure, against the generic definition and torch."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as nnf

from applicative import REAL, Causal, Field, FlexSoftmax, ScaledSoftmax, Vector, attention, flex_softmax_attention
from applicative.laws import FLEX_LAWS, run_laws
from instances import DistributionArbitrary, Padded, PaddedArbitrary, TreeArbitrary

F64 = torch.float64


@pytest.mark.parametrize("arb", [Vector(5), PaddedArbitrary(), TreeArbitrary(), DistributionArbitrary()], ids=repr)
def test_flex_laws_hold(arb: object) -> None:
    report = run_laws(arb, REAL, laws=FLEX_LAWS, max_examples=6)
    assert not report.failures, report.failure_text()
    assert any(r.status != "n/a" for r in report.results)


def _padded_fields(dtype: torch.dtype) -> tuple[Field, Field, Field, torch.Tensor]:  # type: ignore[type-arg]
    g = torch.Generator().manual_seed(0)
    n, lengths = 12, torch.tensor([7, 12, 3])
    s = Padded(n, lengths).unsqueeze_batch(-1)  # heads (2) between the batch and the positions
    q, k, v = (torch.randn(3, 2, n, 4, dtype=dtype, generator=g) for _ in range(3))
    return *(Field(t, (s, Vector(4))) for t in (q, k, v)), lengths  # type: ignore[return-value]


def test_eager_flex_matches_torch_sdpa_with_the_mask() -> None:
    q, k, v, lengths = _padded_fields(F64)
    n = q.structures[0].size
    valid = torch.arange(n) < lengths[:, None, None, None]  # (3, 1, 1, n)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for norm, mask in ((FlexSoftmax(0.4, compiled=False), valid), (Causal(FlexSoftmax(0.4, False)), valid & causal)):
        expected = nnf.scaled_dot_product_attention(q.tensor, k.tensor, v.tensor, attn_mask=mask, scale=0.4)
        torch.testing.assert_close(attention(norm, q, k, v).tensor, expected)
        torch.testing.assert_close(attention(norm, q, k, v, fused=False).tensor, expected)


def test_flex_falls_back_to_dense_sdpa_where_torch_does_not_provide_it() -> None:
    q, k, v, _ = _padded_fields(F64)  # compiled float64 on CPU: not provided
    torch.testing.assert_close(
        attention(FlexSoftmax(0.4), q, k, v).tensor, attention(ScaledSoftmax(0.4), q, k, v).tensor
    )
    grad = q.tensor.float().requires_grad_()
    qg = Field(grad, q.axes)  # a backward on CPU: not provided either
    k32, v32 = (Field(t.tensor.float(), t.axes) for t in (k, v))
    out = attention(FlexSoftmax(0.4), qg, k32, v32).tensor
    out.sum().backward()
    assert grad.grad is not None


@pytest.mark.slow
# inductor's own import
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_compiled_flex_matches_sdpa() -> None:
    q, k, v, _ = _padded_fields(torch.float32)
    for norm in (FlexSoftmax(0.4), Causal(FlexSoftmax(0.4))):
        torch.testing.assert_close(
            attention(norm, q, k, v).tensor, attention(norm, q, k, v, fused=False).tensor, rtol=1e-5, atol=1e-5
        )
    direct = flex_softmax_attention(q.tensor, k.tensor, v.tensor, None, causal=True, scale=0.4)
    expected = nnf.scaled_dot_product_attention(q.tensor, k.tensor, v.tensor, is_causal=True, scale=0.4)
    torch.testing.assert_close(direct, expected, rtol=1e-5, atol=1e-5)


def test_block_masks_are_built_once_per_mask_and_never_reused_for_another(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.nn.attention.flex_attention as fa

    from applicative import _flex

    built: list[int] = []
    create = fa.create_block_mask

    def counting(*args: object, **kwargs: object) -> object:
        built.append(1)
        return create(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fa, "create_block_mask", counting)
    monkeypatch.setattr(_flex, "_BLOCK_MASKS", OrderedDict(), raising=False)  # start empty
    g = torch.Generator().manual_seed(3)
    n = 12
    q, k, v = (torch.randn(3, n, 4, dtype=F64, generator=g) for _ in range(3))
    norm = Causal(FlexSoftmax(0.4, compiled=False))
    for lengths in ([7, 12, 3], [7, 12, 3], [2, 5, 12], [7, 12, 3]):  # same shape, two different masks
        s = Padded(n, lengths)  # a new structure (and new tensors) every time
        out = attention(norm, *(Field(t, (s, Vector(4))) for t in (q, k, v))).tensor
        mask = torch.ones(n, n, dtype=torch.bool).tril() & (torch.arange(n) < torch.tensor(lengths)[:, None, None])
        torch.testing.assert_close(out, nnf.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.4))
    assert len(built) == 2  # one per distinct mask
