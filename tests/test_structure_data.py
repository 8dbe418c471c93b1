"""Structure data in torch's world (DESIGN §6), capabilities (§5) and layering (§9).

Per-example data (tree shapes, probabilities, lengths) moves with ``.to``, is
indexed, concatenated and collated with the values, is traced by
``torch.compile`` without host synchronisation, and is copied at construction.
"""

from __future__ import annotations

import dataclasses
import gc
import subprocess
import sys
import weakref
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from torch.utils.data import default_collate

import applicative as ap
from applicative import REAL, Field, Linear, StructureError, Vector, counit, dot, zip_with
from instances import DAG, MAX_PLUS, Chebyshev, Distribution, NodeAlgebra, Padded, Tree, tree_field
from models import FuncformerConfig, Transformer, funcformer, treeformer

F64 = torch.float64
TREES: list[Any] = [((1.0, 2.0), (3.0, (4.0, 5.0))), 7.0, (0.5, -1.0)]


def _tensors(x: object) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def test_to_moves_every_tensor_of_a_field() -> None:
    tree_f = tree_field(TREES, NodeAlgebra.MEAN)
    dist_f = Field(torch.randn(2, 3, 4), (Distribution(torch.softmax(torch.randn(2, 3), -1)), Vector(4)))
    pad_f = Field(torch.randn(2, 5), (Padded(5, [2, 5]),))
    for f in (tree_f, dist_f, pad_f):
        leaves = _tensors(f)
        assert len(leaves) >= 2  # the values and the structure's data are leaves
        moved = f.to("meta")
        assert all(t.device.type == "meta" for t in _tensors(moved))
        assert moved.to("meta").structures == moved.structures  # moving twice: the same structure object
        assert f.to(F64).structures == f.structures  # a dtype change leaves integer data alone


def test_collate_of_tree_fields_equals_the_batch_built_directly() -> None:
    examples = [tree_field([t]) for t in TREES]
    batch = default_collate([ex[0] for ex in examples])
    direct = tree_field(TREES)
    tb, td = batch.structures[0], direct.structures[0]
    assert isinstance(tb, Tree) and isinstance(td, Tree)
    assert tb.equals(td) and tb.batch_shape == (3,)
    torch.testing.assert_close(batch.tensor, direct.tensor)
    torch.testing.assert_close(counit(batch).tensor, counit(direct).tensor)


def test_index_and_cat_split_a_batch_like_a_sampler() -> None:
    f = tree_field(TREES)
    parts = [f[torch.tensor([0, 2])], f[1:2]]
    joined = ap.cat(parts)
    torch.testing.assert_close(counit(joined).tensor, counit(f).tensor[[0, 2, 1]])
    one = f[1]  # one example: no batch axis left, on the values or on the tree
    assert one.batch_shape == () and one.structures[0].batch_shape == ()  # type: ignore[attr-defined]
    torch.testing.assert_close(counit(one).tensor, counit(f).tensor[1])


def test_equality_never_reads_values() -> None:
    p = torch.tensor([0.25, 0.75])
    d1, d2 = Distribution(p), Distribution(p)
    assert d1 == d1 and d1 != d2  # separate constructions hold separate (copied) tensors
    assert d1.equals(d2)  # value equality is explicit
    p[0] = 10.0  # the caller's tensor changes; the structure kept its own copy
    x = torch.ones(2, dtype=F64)
    assert d1.counit(x, -1, REAL).item() == pytest.approx(1.0)


def test_equality_is_by_lineage_and_keeps_nothing_alive() -> None:
    """Derivations of one structure by the same steps are equal without a cache; other steps, or other data, are not."""
    p = Padded(5, [2, 5, 3])
    assert p.to("meta") == p.to("meta") and p.to("meta") is not p.to("meta")
    assert p.to("meta") != p  # another device
    assert p.index_batch(slice(0, 2)) == p.index_batch(slice(0, 2)) != p.index_batch(slice(1, 3))
    assert p.index_batch(1) == p.index_batch(1) != p.index_batch(0)
    assert p.index_batch(torch.tensor([0, 2])) != p.index_batch(torch.tensor([0, 2]))  # a tensor index: new data
    assert p.unsqueeze_batch(0) == p.unsqueeze_batch(0)
    assert p.with_data(p.data()) == p  # the very same tensors
    assert p.with_data((p.lengths.clone(),)) != p and p.with_data((p.lengths.clone(),)).equals(p)
    joined = ap.cat([Field(torch.zeros(3, 5), (p,)), Field(torch.zeros(3, 5), (p,))]).structures[0]
    assert joined == ap.cat([Field(torch.ones(3, 5), (p,)), Field(torch.ones(3, 5), (p,))]).structures[0]
    moved = weakref.ref(p.to("meta"))
    gc.collect()
    assert moved() is None  # no cache in p holds its moved copy (or its tensors) alive
    assert all(not isinstance(v, dict | torch.Tensor) or k == "count" for k, v in vars(p).items())


def test_with_data_replaces_the_tensor_fields_and_drops_caches() -> None:
    dag = DAG.from_lists([[None, None, ("+", 0, 1)], [None, ("+", 0, 0)]], ["+", "*"])
    assert [f.name for f in dataclasses.fields(dag)] == ["size", "count", "children", "ops", "level", "operations"]
    assert dag.schedule is dag.schedule  # a cache: built once
    other = dag.with_data(tuple(t.clone() for t in dag.data()))
    assert "schedule" not in vars(other) and other.operations == 2 and other.size == 3
    assert other != dag and other.equals(dag)
    torch.testing.assert_close(other.schedule.levels[0].out, dag.schedule.levels[0].out)


def test_a_user_structure_declares_its_fields_once() -> None:
    """Two tensors of different event axes, a ragged one padded with its declared fill, and a static setting."""

    class Marked(ap.Ragged):
        marks: torch.Tensor = ap.per_example(event_dims=2, pad_axis=-2, fill=-7)
        label: str

    a = Marked(3, torch.tensor([3, 1]), torch.zeros(2, 3, 4), "x")  # the generated __init__: size, fields in order
    b = Marked(5, torch.tensor([5]), torch.ones(1, 5, 4), "x")
    assert a.batch_shape == (2,) and a.static() == (3, "x", (2,), (2, 3, 4))
    both = Marked.concat([a, b])
    assert both.size == 5 and both.batch_shape == (3,) and both.label == "x"
    torch.testing.assert_close(both.marks[:2, 3:], torch.full((2, 2, 4), -7.0))
    torch.testing.assert_close(both.marks[2], b.marks[0])
    with pytest.raises(StructureError, match="same other settings"):
        Marked.concat([a, Marked(3, torch.tensor([1]), torch.zeros(1, 3, 4), "y")])
    leaves, spec = pytree.tree_flatten(a)
    assert [t.shape for t in leaves] == [(2,), (2, 3, 4)]
    assert pytree.tree_unflatten(leaves, spec) == a

    class Tokens(Padded):  # a nominal axis keeps the validating constructor (no __init__ is generated over it)
        pass

    with pytest.raises(StructureError, match=r"every length must lie in \[1, 5\]"):
        Tokens(5, [2, 6])


def test_tree_pairing_compiles_fullgraph() -> None:
    a, b = tree_field(TREES, dtype=F64), tree_field([(1.0, 2.0), (3.0, 4.0), 5.0], dtype=F64)

    def inner(x: Field[Tree], y: Field[Tree]) -> torch.Tensor:
        return counit(zip_with(lambda u, v: u.with_tensor(u.tensor * v.tensor), x, y)).tensor

    compiled = torch.compile(inner, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(a, b), inner(a, b))


def test_treeformer_forward_compiles_fullgraph() -> None:
    f = tree_field(TREES, dtype=F64)
    x = Field(f.tensor.unsqueeze(-1).expand(3, f.structures[0].size, 4).contiguous(), (f.structures[0], Vector(4)))
    model = treeformer(Vector(4), Vector(8), Vector(16), 2, 1, dtype=F64)
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x).tensor, model(x).tensor)


def test_dot_of_two_trees_is_the_paired_counit() -> None:
    a, b = tree_field(TREES, dtype=F64), tree_field([(1.0, 2.0), (3.0, 4.0), 5.0], dtype=F64)
    want = counit(zip_with(lambda u, v: u.with_tensor(u.tensor * v.tensor), a, b)).tensor
    torch.testing.assert_close(dot(a, b).tensor, want)


# ---- capabilities --------------------------------------------------------------------


def test_heads_split_any_sized_structure_and_a_chebyshev_funcformer_trains() -> None:
    assert Chebyshev(16).split(4) == Chebyshev(4)
    with pytest.raises(StructureError, match="heads"):
        Chebyshev(6).split(4)
    with pytest.raises(StructureError, match="cannot be split"):
        Padded(4, [4]).split(2)
    torch.manual_seed(0)
    net = funcformer(6, Chebyshev(8), Vector(16), FuncformerConfig(heads=2, depth=1), dtype=F64)
    u = Field(torch.randn(16, 6, 6, dtype=F64), (Chebyshev(6), Chebyshev(6)))
    target = u.tensor.flip(-1)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = ((net(u).tensor - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_modules_build_over_their_ring() -> None:
    lin = Linear(Vector(3), Vector(2), ring=MAX_PLUS, dtype=F64)
    x = Field(torch.tensor([1.0, 5.0, -2.0], dtype=F64), (Vector(3),), MAX_PLUS)
    got = lin(x)
    assert got.ring == MAX_PLUS
    want = (lin.weight + x.tensor).amax(-1)
    assert lin.bias is not None
    torch.testing.assert_close(got.tensor, torch.maximum(want, lin.bias))
    with pytest.raises(StructureError, match="real ring"):
        ap.LayerNorm(Vector(3), ring=MAX_PLUS)
    with pytest.raises(StructureError, match="real ring"):
        Linear(Chebyshev(3), Vector(2), ring=MAX_PLUS)


# ---- bad input the core catches itself ----------------------------------------------


def test_field_axes_must_be_a_tuple() -> None:
    with pytest.raises(StructureError, match=r"axes must be a tuple.*\(Vector\(3\),\)"):
        Field(torch.zeros(3), Vector(3))  # type: ignore[arg-type]


def test_mul_mm_with_batches_that_do_not_broadcast() -> None:
    a = Field(torch.zeros(2, 3, 4), (Vector(3), Vector(4)))
    b = Field(torch.zeros(5, 4, 6), (Vector(4), Vector(6)))
    with pytest.raises(StructureError, match=r"mul_mm: batch shapes \(2,\) and \(5,\) do not broadcast"):
        ap.mul_mm(a, b)


# ---- layering --------------------------------------------------------------------------


def test_importing_the_library_pulls_in_no_optional_dependency() -> None:
    code = (
        "import sys, torch; before = set(sys.modules); import applicative, instances, models; "
        "new = set(sys.modules) - before; "
        "print(sorted({m.split('.')[0] for m in new} & {'hypothesis', 'numba', 'matplotlib', 'tqdm', 'scipy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_applicative_imports_nothing_above_it() -> None:
    import pathlib

    root = pathlib.Path(ap.__file__).parent
    offenders = [
        f"{p.relative_to(root)}: {line.strip()}"
        for p in root.rglob("*.py")
        for line in p.read_text().splitlines()
        if line.strip().startswith(("import ", "from "))
        and any(f" {m}" in line for m in ("instances", "models", "examples"))
    ]
    assert not offenders


def test_a_transformer_is_typed_over_any_sequence() -> None:
    model: Transformer[Vector, Vector] = treeformer(Vector(4), Vector(8), Vector(16), 2, 1)
    assert isinstance(model, Transformer)


def test_torch_export_takes_fields_with_per_example_data() -> None:
    class Integral(torch.nn.Module):
        def forward(self, f: Field[Padded]) -> torch.Tensor:
            return counit(f).tensor

    traced_on = Field(torch.randn(2, 5), (Padded(5, [2, 5]),))
    program = torch.export.export(Integral(), (traced_on,))
    other = Field(torch.randn(2, 5), (Padded(5, [1, 3]),))  # other lengths: data, not part of the program
    want = torch.stack([other.tensor[0, :1].sum(), other.tensor[1, :3].sum()])
    torch.testing.assert_close(program.module()(other), want)


def test_operators_import_nothing_from_training_or_examples() -> None:
    import ast
    import pathlib

    import operators

    root = pathlib.Path(operators.__file__).parent
    offenders = []
    for p in root.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
            offenders += [f"{p.relative_to(root)}: {n}" for n in names if n.split(".")[0] in ("training", "examples")]
    assert not offenders
