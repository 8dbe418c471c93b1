"""The Treeformer (generic Transformer over trees) against direct masked-softmax references."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from applicative import Field, MultiHeadAttention, ScaledSoftmax, attention
from instances import NodeAlgebra, Tree, Vector
from models import Readout, encoder, tree_features, treeformer

TREES: list[Any] = [((0, 1), (2, (3, 4))), 5, (6, ((7, (8, 9)), 10)), (11, 12)]


def _inputs(algebra: NodeAlgebra, d: int = 8, seed: int = 0) -> tuple[Tree, torch.Tensor]:
    tree, _ = Tree.from_nested(TREES, algebra)
    g = torch.Generator().manual_seed(seed)
    return tree, torch.randn(len(TREES), tree.size, d, generator=g, dtype=torch.float64)


def _reference_mha(mha: MultiHeadAttention[Any], x: torch.Tensor, tree: Tree, heads: int) -> torch.Tensor:
    """Multi-head self-attention written out per tree: softmax weights ∝ w_j exp(q·k_j / sqrt(d_k)) over real leaves."""
    b, _, d = x.shape
    dk = d // heads
    assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
    qkv = x @ mha.in_proj_weight.T + mha.in_proj_bias
    out = torch.zeros_like(x)
    for i in range(b):
        depths = tree.depths(i)
        n = len(depths)
        w = torch.tensor(
            [1.0 if tree.algebra is NodeAlgebra.SUM else 2.0**-dd for dd in depths], dtype=x.dtype
        )  # the leaf measure
        q, k, v = qkv[i, :n, :d], qkv[i, :n, d : 2 * d], qkv[i, :n, 2 * d :]
        heads_out = []
        for h in range(heads):
            sl = slice(h * dk, (h + 1) * dk)
            s = q[:, sl] @ k[:, sl].T / math.sqrt(dk)
            e = torch.exp(s - s.max(-1, keepdim=True).values) * w
            heads_out.append((e / e.sum(-1, keepdim=True)) @ v[:, sl])
        out[i, :n] = torch.cat(heads_out, -1) @ mha.out_proj.weight.T + mha.out_proj.bias
    return out


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_multihead_attention_over_trees_matches_masked_softmax(algebra: NodeAlgebra) -> None:
    torch.manual_seed(0)
    tree, x = _inputs(algebra)
    heads, model = 2, Vector(8)
    mha = MultiHeadAttention(model, Vector(4), Vector(4), heads, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.normal_()  # type: ignore[union-attr]
    # garbage (finite) features at padding must not change anything at real leaves
    x = torch.where(tree.mask.unsqueeze(-1), x, 1e3)
    got = mha(Field(x, (tree, model))).tensor
    ref = _reference_mha(mha, x, tree, heads)
    m = tree.mask.unsqueeze(-1)
    torch.testing.assert_close(torch.where(m, got, 0), ref)


@pytest.mark.parametrize("algebra", list(NodeAlgebra))
def test_fused_and_generic_attention_agree(algebra: NodeAlgebra) -> None:
    tree, x = _inputs(algebra, d=4)
    g = torch.Generator().manual_seed(1)
    k = torch.randn(x.shape, generator=g, dtype=torch.float64)
    v = torch.randn(*x.shape[:-1], 3, generator=g, dtype=torch.float64)
    q, kf, vf = Field(x, (tree, Vector(4))), Field(k, (tree, Vector(4))), Field(v, (tree, Vector(3)))
    fused = attention(ScaledSoftmax(0.5), q, kf, vf).tensor
    generic = attention(ScaledSoftmax(0.5), q, kf, vf, fused=False).tensor
    m = tree.mask.unsqueeze(-1)
    torch.testing.assert_close(torch.where(m, fused, 0), torch.where(m, generic, 0))


def test_treeformer_forward_backward_and_batch_independence() -> None:
    torch.manual_seed(0)
    feats, model = Vector(6), Vector(8)
    net = treeformer(feats, model, Vector(16), heads=2, depth=2, dtype=torch.float64)
    tree, _ = Tree.from_nested(TREES, NodeAlgebra.MEAN)
    x = torch.randn(len(TREES), tree.size, 6, dtype=torch.float64)
    y = net(Field(x, (tree, feats)))
    assert y.tensor.shape == x.shape and y.structures[0] is tree
    loss = torch.where(tree.mask.unsqueeze(-1), y.tensor, 0).square().sum()
    loss.backward()  # type: ignore[no-untyped-call]
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in net.parameters() if p.requires_grad)
    # a tree's output does not depend on the other trees in its batch (padding is invisible)
    alone, _ = Tree.from_nested([TREES[1]], NodeAlgebra.MEAN)
    y1 = net(Field(x[1:2, : alone.size], (alone, feats))).tensor
    torch.testing.assert_close(y1[0], y.tensor[1, : alone.size])


def test_readout_and_tree_features() -> None:
    torch.manual_seed(0)
    tree, leaves = Tree.from_nested(TREES)
    tokens = torch.zeros(len(TREES), tree.size, dtype=torch.long)
    for i, row in enumerate(leaves):
        tokens[i, : len(row)] = torch.tensor(row) % 5
    x = tree_features(tree, tokens, vocab=5, levels=4)
    assert x.tensor.shape == (len(TREES), tree.size, 9)
    assert x.tensor[0, 4, 5:].tolist() == [1.0, 1.0, 1.0, 0.0]  # leaf 4 of tree 0: right, right, right
    clf = Readout(treeformer(x.structures[1], Vector(8), Vector(16), heads=2, depth=1), classes=3)
    out = clf(x)
    assert out.structures == (Vector(3),)
    logits = out.tensor
    assert logits.shape == (len(TREES), 3)
    logits.sum().backward()  # type: ignore[no-untyped-call]


def test_tree_as_feature_structure_matches_vector_features() -> None:
    """A fixed tree with no padding and the SUM algebra contracts exactly like ``Vector(n)``."""
    torch.manual_seed(0)
    shape, _ = Tree.from_nested([((0, 1), (2, (3, 4)))])
    feat_tree = Tree(shape.depth[0])  # batch (): one tree shared by every position
    seq, model = Vector(7), Vector(8)
    net_t = encoder(feat_tree, model, Vector(16), heads=2, depth=1, dtype=torch.float64)
    net_v = encoder(Vector(5), model, Vector(16), heads=2, depth=1, dtype=torch.float64)
    net_v.load_state_dict(net_t.state_dict())
    x = torch.randn(3, 7, 5, dtype=torch.float64)
    yt = net_t(Field(x, (seq, feat_tree)))
    yv = net_v(Field(x, (seq, Vector(5))))
    assert yt.structures == (seq, feat_tree)
    torch.testing.assert_close(yt.tensor, yv.tensor)
    # with the MEAN algebra the embedding contracts against the weights 2^-depth
    mean = Tree(shape.depth[0], NodeAlgebra.MEAN)
    net_m = encoder(mean, model, Vector(16), heads=2, depth=1, dtype=torch.float64)
    net_m.load_state_dict(net_t.state_dict())
    w = torch.tensor([2.0**-d for d in [2, 2, 2, 3, 3]], dtype=torch.float64)
    h_m = net_m.encode(Field(x, (seq, mean))).tensor
    h_v = net_v.encode(Field(x * w, (seq, Vector(5)))).tensor
    torch.testing.assert_close(h_m, h_v)


# ---- the ListOps example, short --------------------------------------------------------------


def _eval_flat(tokens: list[int]) -> int:
    """A stack machine over the flat tokens ``[OP a1 ... ]`` (independent of the generator's evaluator)."""
    from training.tasks.tree_listops.data import CLOSE, OPS

    stack: list[list[int]] = [[]]
    ops: list[str] = []
    for t in tokens:
        if t < 10:
            stack[-1].append(t)
        elif t == CLOSE:
            vals, op = sorted(stack.pop()), ops.pop()
            r = {"MAX": vals[-1], "MIN": vals[0], "MED": vals[len(vals) // 2], "SM": sum(vals) % 10}[op]
            stack[-1].append(r)
        else:
            ops.append(OPS[t - 10])
            stack.append([])
    return stack[0][0]


def _eval_tree(t: Any) -> Any:
    """Evaluate the binary view: ``(OP, args)`` nodes; the argument subtree's leaves are the arguments."""
    from training.tasks.tree_listops.data import OPS

    def args(u: Any) -> list[int]:
        if isinstance(u, tuple) and not (isinstance(u[0], int) and u[0] >= 10):
            return args(u[0]) + args(u[1])
        return [_eval_tree(u)]

    if not isinstance(t, tuple):
        return t
    vals = sorted(args(t[1]))
    op = OPS[t[0] - 10]
    return {"MAX": vals[-1], "MIN": vals[0], "MED": vals[len(vals) // 2], "SM": sum(vals) % 10}[op]


def test_listops_views_agree_with_the_labels() -> None:
    from training.tasks.tree_listops.data import binary_tree, flat_tokens, generate, tree_batch

    split = generate(200, seed=3)
    for e, y in zip(split.exprs, split.labels.tolist(), strict=True):
        assert _eval_flat(flat_tokens(e)) == y
        assert _eval_tree(binary_tree(e)) == y
    tree, tokens = tree_batch(split.exprs[:5], NodeAlgebra.MEAN)
    for i, e in enumerate(split.exprs[:5]):
        leaves = [t for t in flat_tokens(e) if t != 14]  # the flat tokens without brackets
        assert tokens[i, : len(leaves)].tolist() == leaves
        assert tree.to_nested(leaves, i) == binary_tree(e)


def test_listops_example_runs_short(tmp_path: Any) -> None:
    import json

    from examples.tree_listops.__main__ import main

    args = ["--steps", "3", "--train", "64", "--test", "32", "--batch", "8", "--width", "16", "--hidden", "16"]
    threads = torch.get_num_threads()
    try:
        code = main([*args, "--models", "tree-mean,vector", "--out", str(tmp_path), "--no-progress"])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    results = json.loads((tmp_path / "report.json").read_text())["results"]
    assert results["tree-mean"]["params"] == results["vector"]["params"]
    assert all(0.0 <= r["test_accuracy"] <= 1.0 for r in results.values())


def test_attention_over_trees_lowers_to_one_sdpa_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused path runs: one softmax kernel (:func:`applicative._lowering.fused_attention`) with the tree's
    ``log w`` bias."""
    from applicative import _lowering

    calls: list[torch.Tensor | None] = []
    fused = _lowering.fused_attention

    def spy(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(kwargs.get("attn_mask"))
        return fused(*args, **kwargs)

    monkeypatch.setattr(_lowering, "fused_attention", spy)
    tree, x = _inputs(NodeAlgebra.MEAN)
    mha = MultiHeadAttention(Vector(8), Vector(4), Vector(4), 2, dtype=torch.float64)
    mha(Field(x, (tree, Vector(8))))
    assert len(calls) == 1 and calls[0] is not None
    bias = calls[0][:, 0, 0]  # (batch, N): log 2^-depth at leaves, -inf at padding
    expected = torch.where(tree.mask, -math.log(2.0) * tree.depth.to(torch.float64), float("-inf"))
    torch.testing.assert_close(bias, expected)
