"""The learned node algebra: the cell against plain torch, the batched fold against node-by-node recursion, training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor
from torch.nn import functional as nnf

from applicative import Field, StructureError, Vector
from examples.tree_listops.__main__ import main
from instances import Expressions
from models import NodeCell, TreeFold
from training.tasks import tree_listops
from training.tasks.tree_listops import data, nodes, train
from training.tasks.tree_listops.config import PRESETS

D, H = Vector(6), Vector(10)


pytestmark = pytest.mark.usefixtures("one_thread")


def reference_cell(cell: NodeCell[Vector], left: Tensor, right: Tensor, op: Tensor) -> Tensor:
    """The cell's formula written directly in torch, with its parameters."""
    z = nnf.linear(left, cell.left.weight, cell.left.bias) + nnf.linear(right, cell.right.weight)
    z = z + nnf.linear(left, cell.product_left.weight) * nnf.linear(right, cell.product_right.weight)
    z = z * (1 + cell.scale[op]) + cell.embedding[op]
    c = nnf.linear(torch.relu(z), cell.out.weight, cell.out.bias)
    if cell.cell == "gated":
        g = torch.sigmoid(
            nnf.linear(left, cell.gate_left.weight, cell.gate_left.bias)
            + nnf.linear(right, cell.gate_right.weight)
            + cell.gate_embedding[op]
        )
        c = g * c + (1 - g) * (left + right) / 2
    return nnf.layer_norm(c, (D.size,), cell.norm.weight, cell.norm.bias)


def _randomise(module: torch.nn.Module) -> None:
    with torch.no_grad():  # move the zero-initialised parameters off zero so that every term is tested
        for p in module.parameters():
            p.add_(0.3 * torch.randn_like(p))


@pytest.mark.parametrize("kind", ["mlp", "gated"])
def test_the_cell_is_its_formula(kind: Any) -> None:
    torch.manual_seed(0)
    cell = NodeCell(D, H, operations=3, cell=kind, dtype=torch.float64)
    _randomise(cell)
    left, right = torch.randn(7, D.size, dtype=torch.float64), torch.randn(7, D.size, dtype=torch.float64)
    op = torch.tensor([0, 1, 2, 2, 1, 0, 1])
    got = cell(Field(left, (D,)), Field(right, (D,)), op)
    assert got.axes == (D,)
    torch.testing.assert_close(got.tensor, reference_cell(cell, left, right, op))


def test_the_batched_fold_is_the_cell_applied_node_by_node() -> None:
    torch.manual_seed(1)
    exprs = data.generate(20, 3).exprs + data.generate_deep(5, 4, deepest=6).exprs + [7]
    fold = TreeFold(nodes.DIGITS, D, H, len(nodes.NODE_OPS), dtype=torch.float64)
    _randomise(fold)
    trees, digits = nodes.fold_batch(exprs)
    leaves = nnf.one_hot(digits, 10).to(torch.float64)
    got = fold(trees, Field(leaves, (trees.tree, nodes.DIGITS))).tensor
    assert got.shape == (len(exprs), D.size)

    def recursive(e: Any) -> Tensor:  # plain recursion over the nested (code, left, right) form
        if not isinstance(e, tuple):
            x = nnf.one_hot(torch.tensor(e), 10).to(torch.float64)
            return nnf.layer_norm(nnf.linear(x, fold.embed.weight, fold.embed.bias), (D.size,), *_ln(fold))
        code = torch.tensor([nodes.NODE_OPS.index(e[0])])
        return reference_cell(fold.cell, recursive(e[1])[None], recursive(e[2])[None], code)[0]

    for i, e in enumerate(exprs):
        torch.testing.assert_close(got[i], recursive(nodes.expression_tree(e)))


def _ln(fold: TreeFold[Vector, Vector]) -> tuple[Tensor, Tensor]:
    return fold.leaf_norm.weight, fold.leaf_norm.bias


def test_a_cell_for_fewer_operations_is_refused() -> None:
    trees, digits = nodes.fold_batch(data.generate(3, 0).exprs)
    fold = TreeFold(nodes.DIGITS, D, H, operations=2)
    leaves = Field(nnf.one_hot(digits, 10).float(), (trees.tree, nodes.DIGITS))
    with pytest.raises(StructureError, match="8 operation codes"):
        fold(trees, leaves)
    with pytest.raises(StructureError, match="cell 'mlp' or 'gated'"):
        NodeCell(D, H, 2, cell="lstm")  # type: ignore[arg-type]
    assert isinstance(trees, Expressions)


@pytest.mark.parametrize("cell", ["mlp", "gated"])
def test_the_fold_model_memorises_a_small_set(cell: Any) -> None:
    cfg = PRESETS["tiny"].replace(steps=150, lr=1e-2, width=32, hidden=32, train=32, cell=cell, eval_every=150)
    splits = data.splits(cfg.train, cfg.test, cfg.seed)
    trained = train.train(cfg, "fold", splits, None, progress=False)
    assert train.accuracy(trained.model, splits.train) >= 0.9  # chance is about 0.1


def test_the_job_reports_accuracy_by_depth_and_on_the_deeper_split(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["--preset", "tiny", "--no-progress", "--models", "fold", "--out", str(out)]) == 0
    result = json.loads((out / "report.json").read_text())["results"]["fold"]
    splits = data.splits(16, 32, 0, 16, 6)
    model = tree_listops.load(out)
    assert model.kind == "fold"
    assert result["test_accuracy"] == train.accuracy(model, data.splits(64, 32, 0).test)
    assert result["deep_accuracy"] == train.accuracy(model, splits.deep)  # type: ignore[arg-type]
    by_depth = result["deep_accuracy_by_depth"]
    assert set(by_depth) == {"4", "5", "6"}
    assert set(result["test_accuracy_by_depth"]) <= {"1", "2", "3"}
    # the per-depth figures average (weighted by count) to the whole split's
    depths = [data.nesting(e) for e in splits.deep.exprs]  # type: ignore[union-attr]
    mean = sum(by_depth[str(d)] * depths.count(d) for d in (4, 5, 6)) / len(depths)
    assert mean == pytest.approx(result["deep_accuracy"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--cell", "lstm"], "cell='lstm': must be one of 'mlp', 'gated'"),
        (["--deepest", "3"], "deepest=3: must be >= 4"),
        (["--deep", "-1"], "deep=-1: must be >= 0"),
    ],
)
def test_bad_fold_options_are_one_line(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--preset", "tiny", "--no-progress", "--models", "fold", "--out", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
