"""Packages above the core use only its public names; ``Field.to`` parses its arguments through torch."""

from __future__ import annotations

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
