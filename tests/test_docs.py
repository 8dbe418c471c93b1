"""Every ```python block in the documentation (docs/**/*.md and the README) runs as written.

The blocks of one page run in order in one namespace (a page's later blocks use its earlier ones), in a
fresh working directory. A block is marked by an HTML comment on the line before its fence:

* ``<!-- docs-test: skip (why) -->`` -- not run (a template with a placeholder); the reason is required;
* ``<!-- docs-test: needs runs/poisson -->`` -- runs where ``runs/poisson`` holds a (tiny, two-step)
  trained Poisson run, as the page's reader would have after ``python -m examples.poisson``.

Shell commands and long training runs are in ```bash fences, which are not run. Law checks run with a
small hypothesis budget (the laws themselves are tested in tests/test_laws.py).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- docs-test: (skip \(.+\)|needs runs/poisson) -->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    code: str
    mark: str | None


def blocks(page: Path) -> list[Block]:
    """The ```python blocks of ``page`` with their marks (a malformed mark or an unclosed fence fails)."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            if lines[i].startswith("<!-- docs-test"):
                assert MARK.match(lines[i]), f"{page.name}:{i + 1}: unknown mark {lines[i]!r}"
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        assert end is not None, f"{page.name}:{i + 1}: the fence is never closed"
        if opening.group(1) == "python":
            mark = MARK.match(lines[i - 1]) if i > 0 else None
            found.append(Block(page, i + 1, "\n".join(lines[i + 1 : end]) + "\n", mark.group(1) if mark else None))
        i = end + 1
    return found


def test_the_pages_have_python_blocks_and_every_skip_says_why() -> None:
    every = [b for page in PAGES for b in blocks(page)]
    assert len(every) >= 10
    skipped = [b for b in every if b.mark is not None and b.mark.startswith("skip")]
    assert len(skipped) <= 2, [f"{b.page.name}:{b.line}" for b in skipped]


@pytest.fixture
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(ROOT))  # `examples` is importable from a checkout, as the pages say
    monkeypatch.setenv("MPLBACKEND", "Agg")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    settings.register_profile("docs", max_examples=4, deadline=None, database=None)
    previous = settings.get_current_profile_name()
    settings.load_profile("docs")
    yield
    settings.load_profile(previous)
    torch.set_num_threads(threads)


def _poisson_run(where: Path) -> None:
    """A tiny Poisson run in ``where`` (two steps: the snippets need a trained model, not a good one)."""
    from examples.poisson import train
    from training.tasks.poisson import PRESETS, data

    cfg = PRESETS["tiny"]
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes)
    train.train(cfg, splits, where, progress=False, stop_after=2)


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.usefixtures("_quiet")
def test_the_pages_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    sys.modules.setdefault(namespace["__name__"], type(sys)(str(namespace["__name__"])))  # for dataclasses
    for block in blocks(page):
        if block.mark is not None and block.mark.startswith("skip"):
            continue
        if block.mark == "needs runs/poisson" and not (tmp_path / "runs" / "poisson").exists():
            _poisson_run(tmp_path / "runs" / "poisson")
        where = f"{block.page.relative_to(ROOT)}:{block.line}"
        # line numbers in a traceback are the page's own
        code = compile("\n" * block.line + block.code, where, "exec")
        try:
            exec(code, namespace)
        except Exception as e:
            raise AssertionError(f"the block at {where} fails: {type(e).__name__}: {e}") from e
    assert os.getcwd() == str(tmp_path)
