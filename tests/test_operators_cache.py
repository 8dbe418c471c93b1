"""The data cache of operators (operators.cache): atomic writes, checked reads, one-line errors naming the file."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from operators.cache import CacheError, cache_path, cached

PARAMS: dict[str, int | float | str | bool | None] = {"count": 2, "nu": 0.1, "tag": "x"}
SHAPES = {"a": (2, 3)}


def _make() -> dict[str, torch.Tensor]:
    return {"a": torch.arange(6, dtype=torch.float64).reshape(2, 3)}


def test_makes_once_then_reads(tmp_path: Path) -> None:
    calls = []

    def make() -> dict[str, torch.Tensor]:
        calls.append(1)
        return _make()

    first = cached(tmp_path, "t", PARAMS, SHAPES, make)
    second = cached(tmp_path, "t", PARAMS, SHAPES, make)
    assert len(calls) == 1 and torch.equal(first["a"], second["a"])
    assert [p.name for p in tmp_path.iterdir()] == [cache_path(tmp_path, "t", PARAMS).name]
    assert cache_path(tmp_path, "t", PARAMS) != cache_path(tmp_path, "t", PARAMS | {"nu": 0.2})
    assert cached(None, "t", PARAMS, SHAPES, make) is not None and len(calls) == 2  # no directory: nothing kept


@pytest.mark.parametrize(
    ("blob", "match"),
    [
        (None, "damaged data cache"),
        ({"params": PARAMS | {"nu": 0.3}, "tensors": _make()}, "other parameters"),
        ({"params": PARAMS, "tensors": {"a": torch.zeros(3, 2, dtype=torch.float64)}}, r"a is \(3, 2\)"),
        ({"params": PARAMS, "tensors": {"a": torch.full((2, 3), float("nan"), dtype=torch.float64)}}, "NaN"),
        ({"weights": 1}, "not a data cache"),
    ],
)
def test_a_bad_file_is_named_with_the_fix(tmp_path: Path, blob: object, match: str) -> None:
    path = cache_path(tmp_path, "t", PARAMS)
    if blob is None:
        path.write_bytes(b"\x00" * 10)
    else:
        torch.save(blob, path)
    with pytest.raises(CacheError, match=rf"^{path}: .*{match}.*delete it"):
        cached(tmp_path, "t", PARAMS, SHAPES, _make)


class Planted:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("ran",))


def test_a_planted_object_is_refused_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cache_path(tmp_path, "t", PARAMS)
    path.write_bytes(pickle.dumps(Planted()))
    with pytest.raises(CacheError, match="delete it"):
        cached(tmp_path, "t", PARAMS, SHAPES, _make)
    assert "ran" not in capsys.readouterr().out


def test_an_unusable_directory_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CacheError, match=rf"cache directory {blocker / 'sub'}: cannot create it"):
        cached(blocker / "sub", "t", PARAMS, SHAPES, _make)
