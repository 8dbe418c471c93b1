"""Packages above the core use only its public names; ``Field.to`` parses its arguments through torch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import torch

import applicative.tensors
from applicative import Field, Vector
from instances import Distribution

ROOT = Path(__file__).resolve().parents[1]


def test_no_private_name_of_the_core_is_imported_above_it() -> None:
    private = re.compile(r"from applicative(\.\w+)*\._\w+ import|from applicative(\.\w+)* import .*\b_\w+|Field\._of\b")
    hits = [
        f"{p.relative_to(ROOT)}: {line.strip()}"
        for package in ("instances", "models")
        for p in sorted((ROOT / package).rglob("*.py"))
        for line in p.read_text().splitlines()
        if private.search(line)
    ]
    assert hits == []
    assert set(applicative.tensors.__all__) >= {"broadcast_batch", "aligned", "pad_before", "summary"}


def test_field_to_moves_dtype_and_keeps_structures() -> None:
    d = Distribution(torch.tensor([[0.25, 0.75], [0.5, 0.5]]))
    x = Field(torch.randn(2, 2), (d,))
    for y in (x.to(torch.float64), x.to("cpu", torch.float64), x.to(torch.zeros((), dtype=torch.float64))):
        assert y.dtype == torch.float64 and y.structures[0] is d
        torch.testing.assert_close(y.tensor, x.tensor.double())
    assert x.to(device="cpu").structures[0] is d
    v = Field(torch.randn(3), (Vector(3),)).to(dtype=torch.float64)
    assert v.dtype == torch.float64


def test_kernels_and_structure_do_not_import_each_other() -> None:
    kernels = (ROOT / "applicative" / "_kernels.py").read_text()
    assert "_structure" not in kernels and "from ._contract import" in kernels
    structure = (ROOT / "applicative" / "_structure.py").read_text()
    assert "from . import _kernels" in structure


def _modules(*packages: str) -> list[Path]:
    return [p for package in packages for p in sorted((ROOT / package).rglob("*.py"))]


def test_models_import_only_the_core_and_the_structures() -> None:
    """The floors hold: ``models`` builds on ``applicative`` and ``instances`` (and torch), never on the data or the
    training packages above it; ``instances`` never on ``models``."""
    above = {"models": {"operators", "training", "examples", "benchmarks"}}
    above["instances"] = above["models"] | {"models"}
    above["applicative"] = above["instances"] | {"instances"}
    hits = []
    for package, forbidden in above.items():
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                hits += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in forbidden]
    assert hits == []


def test_layouts_and_boundaries_are_compared_as_values_outside_their_registry() -> None:
    """No module but the registry (:mod:`instances.axes`) compares a layout's or a boundary's name as a string: the
    rest ask the values (``axis.boundary.vanishes``, ``axis.layout.ends``)."""
    from instances.axes import BOUNDARIES, LAYOUTS

    words = set(LAYOUTS) | set(BOUNDARIES)

    def named(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in words
        return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(named(e) for e in node.elts)

    hits = []
    for path in _modules("applicative", "instances", "models", "operators", "training", "examples", "benchmarks"):
        if path == ROOT / "instances" / "axes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            compared = isinstance(node, ast.Compare) and any(named(e) for e in (node.left, *node.comparators))
            # a table keyed by the names (two or more of them: a lone "zero" may be another word's key)
            keyed = isinstance(node, ast.Dict) and sum(k is not None and named(k) for k in node.keys) > 1
            if compared or keyed:
                hits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert hits == []
