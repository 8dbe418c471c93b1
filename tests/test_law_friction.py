"""The law checker's rough edges: its help, a wrong measure's shape, the command line, isomorphisms."""

from __future__ import annotations

import inspect
import math
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as nnf
from torch import Tensor

from applicative import Field, Structure, StructureError, counit
from applicative.laws import Arbitrary, Draw, Isomorphism, check_laws, run_laws

F64 = torch.float64


def test_help_of_check_laws_does_not_print_the_laws() -> None:
    text = pydoc.render_doc(check_laws, renderer=pydoc.plaintext)
    assert inspect.signature(check_laws).parameters["laws"].default is None
    assert "Law(area=" not in text and len(text) < 4000


class Ring8(Structure):
    """Eight points on a circle, each of weight 1/8 (the user's periodic structure)."""

    def __init__(self) -> None:
        self.size = 8

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return torch.full((self.size,), -math.log(self.size), dtype=dtype, device=device)


class WrongMeasure(Structure):
    """Declares 4 positions but gives 3 weights."""

    def __init__(self) -> None:
        self.size = 4

    def log_measure(self, dtype: torch.dtype, device: torch.device, points: int | None = None) -> Tensor:
        return torch.zeros(3, dtype=dtype, device=device)


class Ring8Arbitrary(Arbitrary[Ring8]):
    def structure(self, draw: Draw) -> Ring8:
        return Ring8()

    def isomorphism(self, s: Ring8, draw: Draw) -> Isomorphism:
        k = draw.integers(0, s.size - 1)
        return Isomorphism(s, s, lambda x, dim: torch.roll(x, k, dim), f"shift by {k}")


def test_a_wrong_measure_shape_is_named_where_it_is_used() -> None:
    x = Field(torch.randn(2, 4, dtype=F64), (WrongMeasure(),))
    with pytest.raises(StructureError, match=r"WrongMeasure.*log_measure.*\(3,\).*expected \(\*batch, 4\)"):
        counit(x)


def test_cyclic_shifts_make_the_attention_laws_apply_to_a_periodic_structure() -> None:
    report = run_laws(Ring8Arbitrary(), max_examples=10)
    attention = {r.law.name: r.status for r in report.results if r.law.area == "Attention"}
    assert not report.failures, report.failure_text()
    assert attention["keys/values invariant"] != "n/a" and attention["queries equivariant"] != "n/a"
    # the shift really is a symmetry of attention: torch's own attention commutes with it
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(8, 3, dtype=F64, generator=g) for _ in range(3))
    out = nnf.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(nnf.scaled_dot_product_attention(torch.roll(q, 3, 0), k, v), torch.roll(out, 3, 0))
    # without the declaration the laws are n/a, and say why
    bare = run_laws(Ring8(), max_examples=3)
    assert {r.status for r in bare.results if r.law.name == "keys/values invariant"} == {"n/a"}


def test_the_command_line_says_how_to_check_a_class_that_needs_arguments(tmp_path: Path) -> None:
    (tmp_path / "mystructure.py").write_text(
        textwrap.dedent(
            """
            from applicative import Structure

            class Blocks(Structure):
                def __init__(self, n):
                    self.size = n

            example = Blocks(3)
            """
        )
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "applicative.laws", *args]
        root = str(Path(__file__).resolve().parents[1])
        env = {"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
        return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)

    refused = cli("mystructure:Blocks")
    assert refused.returncode == 2 and "mystructure:example" in refused.stderr and "Blocks(...)" in refused.stderr
    assert "instance" in cli("--help").stdout
    ok = cli("mystructure:example", "--examples", "2")
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]


def test_help_of_structure_is_the_contract_and_its_example_is_lawful() -> None:
    text = pydoc.render_doc(Structure, renderer=pydoc.plaintext)
    for word in ("The contract", "log_measure", "DataStructure", "join", "ordered"):
        assert word in text, word
    doc = Structure.__doc__ or ""
    block = doc[doc.index("class Circle") :].split("\n\n    Declaring")[0]
    namespace: dict[str, object] = {"Structure": Structure, "torch": torch, "math": math}
    exec(textwrap.dedent("    " + block), namespace)
    circle = namespace["Circle"](5)  # type: ignore[operator]
    x = torch.randn(3, 5, dtype=F64)
    torch.testing.assert_close(counit(Field(x, (circle,))).tensor, x.mean(-1))
    assert not run_laws(circle, max_examples=5).failures
