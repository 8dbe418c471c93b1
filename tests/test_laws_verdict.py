"""One verdict from the law checker: ``check_laws(instance)`` and ``python -m applicative.laws`` agree.

A user's Fourier series, written here as a module of its own (as a user keeps it), stores coefficients and
truncates its products; its :class:`~applicative.laws.Arbitrary` draws values on the subspace where each law
is exact. Drawn with the defaults instead, the same structure fails laws (its products are truncated), so
the verdict depends on the arbitrary being found -- by the command line and by ``check_laws`` alike.

Also: nothing is written to the working directory unless a database is asked for, and the command line
answers in one line whatever the target does on import, lookup or construction.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from applicative import kernels
from applicative.laws import LAWS, Fixed, LawError, Pinned, arbitrary_of, check_laws, run_laws

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = 5

SERIES = '''
"""A user's real Fourier series on [0, 2π): coefficients stored, products truncated."""

import math

import torch

from applicative import Basis, Structure
from applicative.laws import Arbitrary


def waves(n, points, like):
    """(points, n): 1, cos t, sin t, cos 2t, sin 2t, ... at t_j = 2πj / points."""
    t = 2 * math.pi * torch.arange(points, dtype=like.dtype) / points
    k = torch.arange(1, (n - 1) // 2 + 1, dtype=like.dtype)
    pairs = torch.stack([torch.cos(k * t[:, None]), torch.sin(k * t[:, None])], -1).flatten(1)
    return torch.cat([torch.ones(points, 1, dtype=like.dtype), pairs], 1)


class Waves(Basis):
    def __init__(self, n, scale):
        self.n, self.scale = n, scale

    @property
    def grid(self):
        return 2 * self.n - 1

    def positions(self, x, dim, points):
        return (x.movedim(dim, -1) @ waves(self.n, points, x).T).movedim(-1, dim)

    def stored(self, v, dim):
        points = v.shape[dim]
        scale = torch.full((self.n,), self.scale / points, dtype=v.dtype)
        scale[0] = 1 / points
        return ((v.movedim(dim, -1) @ waves(self.n, points, v)) * scale).movedim(-1, dim)


class Series(Structure):
    SCALE = 2.0  # the right factor for a_k, b_k; BrokenSeries gets it wrong

    def __init__(self, n):
        self.size = n

    @property
    def basis(self):
        return Waves(self.size, self.SCALE)

    def log_measure(self, dtype, device, points=None):
        p = self.size if points is None else points
        return torch.full((p,), math.log(2 * math.pi / p), dtype=dtype, device=device)


class BrokenSeries(Series):
    SCALE = 1.0


class SeriesArbitrary(Arbitrary):
    kind = Series

    def structure(self, draw):
        return Series(2 * draw.integers(0, 3) + 1)

    def value(self, axes, draw, batch, elements, degree):
        t = draw.tensor((*batch, *(a.size for a in axes)), elements, torch.float64)
        for i, a in enumerate(axes):
            if isinstance(a, Series):
                m = (a.size - 1) // 2 // max(degree, 1) if degree is not None else 0
                t.narrow(i - len(axes), 2 * m + 1, a.size - 2 * m - 1).zero_()
        return t


class BrokenSeriesArbitrary(SeriesArbitrary):
    kind = BrokenSeries

    def structure(self, draw):
        return BrokenSeries(2 * draw.integers(1, 3) + 1)


example = Series(7)
broken = BrokenSeries(7)
'''


def _env(where: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{where}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1"}


def _cli(where: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "applicative.laws", *argv]
    return subprocess.run(cmd, cwd=where, env=_env(where), capture_output=True, text=True, timeout=600)


def _summary(text: str) -> dict[str, int]:
    """``{"fail": 0, "n/a": 5, ...}`` from a report's last line, ``12 exact, 40 approximate, 0 fail, 5 n/a``."""
    line = next(line for line in reversed(text.strip().splitlines()) if re.search(r"\d+ fail", line))
    return {word: int(n) for n, word in re.findall(r"(\d+) (exact|approximate|fail|n/a)", line)}


@pytest.fixture
def series(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The user's module, imported from a working directory of its own (as ``python -m`` would find it)."""
    (tmp_path / "userseries.py").write_text(SERIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("userseries", None)
    module = importlib.import_module("userseries")
    yield module
    sys.modules.pop("userseries", None)


def test_a_truncated_series_gets_one_verdict_from_check_laws_and_the_command_line(
    series: ModuleType, tmp_path: Path
) -> None:
    example = series.example
    # the structure truncates its products: drawn with the defaults, laws fail (what the arbitrary is for)
    assert run_laws(Fixed(example), max_examples=EXAMPLES).failures
    arbitrary = arbitrary_of(example)
    assert isinstance(arbitrary, Pinned) and type(arbitrary.inner).__name__ == "SeriesArbitrary"
    in_code = check_laws(example, max_examples=EXAMPLES)  # raises on a failure
    by_class = _cli(tmp_path, "userseries:Series", "--examples", str(EXAMPLES))
    by_object = _cli(tmp_path, "userseries:example", "--examples", str(EXAMPLES))
    for done in (by_class, by_object):
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert _summary(done.stdout)["fail"] == 0
    assert _summary(by_object.stdout)["n/a"] == _summary(in_code.table())["n/a"]
    assert not (tmp_path / ".hypothesis").exists()


def test_an_unlawful_series_fails_both_ways(series: ModuleType, tmp_path: Path) -> None:
    broken = series.broken
    with pytest.raises(LawError) as raised:
        check_laws(broken, max_examples=EXAMPLES)
    by_object = _cli(tmp_path, "userseries:broken", "--examples", str(EXAMPLES))
    assert by_object.returncode == 1, by_object.stdout[-3000:] + by_object.stderr[-2000:]
    failed_in_code = {r.law.name for r in raised.value.report.failures}
    assert "identity" in failed_in_code  # stored ∘ positions is not the identity: fmap id moves every value
    assert _summary(by_object.stdout)["fail"] >= 1 and "identity" in by_object.stdout
    assert not (tmp_path / ".hypothesis").exists()


def test_examples_are_kept_only_where_asked(series: ModuleType, tmp_path: Path) -> None:
    broken = series.broken
    identity = [law for law in LAWS if law.name == "identity"]
    assert run_laws(broken, laws=identity, max_examples=EXAMPLES).failures
    # nothing beside the user's module (Python's own byte-code cache aside: it is there unless
    # PYTHONDONTWRITEBYTECODE is set, and is not the checker's doing)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["userseries.py"]
    assert run_laws(broken, laws=identity, max_examples=EXAMPLES, database=tmp_path / "db").failures
    assert any((tmp_path / "db").rglob("*")), "the failing example is kept in the database asked for"
    assert not (tmp_path / ".hypothesis").exists()


# ---- the command line answers in one line whatever the target does ----------------------------------------

TARGETS = {
    "raises_in_init.py": "from instances import Vector\n\nclass Boom(Vector):\n    size = 3\n\n"
    "    def __init__(self, n=3):\n        raise ValueError('no size today\\nsecond line')\n",
    "arbitrary_raises.py": "from applicative.laws import Arbitrary\n\nclass Picky(Arbitrary):\n"
    "    def __init__(self):\n        raise KeyError('picky')\n",
    "recursive_init.py": "from instances import Vector\n\nclass Deep(Vector):\n    size = 3\n\n"
    "    def __init__(self, n=3):\n        Deep(n)\n",
    "lazy.py": "def __getattr__(name):\n    raise RuntimeError('lazy attribute ' + name)\n",
    "selfref.py": "import selfref\n\nme = selfref\n",
    "exits.py": "import sys\n\nsys.exit(3)\n",
    "noisy.py": "import sys\n\nprint('noise on stdout')\nprint('noise on stderr', file=sys.stderr)\n"
    "raise OSError('disk')\n",
    "recursive_import.py": "def f():\n    return f()\n\nf()\n",
    "interrupts.py": "raise KeyboardInterrupt\n",
    "closes.py": "raise GeneratorExit('closed')\n",
    "odd_base.py": "class Odd(BaseException):\n    pass\n\nraise Odd('strange')\n",
    "quits.py": "import os\n\nos._exit(0)\n",
    "quits_later.py": "import os\n\nfrom instances import Vector\n\nclass Later(Vector):\n    size = 3\n\n"
    "    def __init__(self, n=3):\n        os._exit(0)\n",
    "huge.py": "from instances import Vector\n\nclass Huge(Vector):\n    size = 10**12\n",
}
CASES = [
    ("raises_in_init:Boom", "raised ValueError: no size today"),
    ("arbitrary_raises:Picky", "raised KeyError"),
    ("recursive_init:Deep", "RecursionError"),
    ("lazy:Anything", "raised RuntimeError: lazy attribute Anything"),
    ("selfref:me", "cannot check laws of <module 'selfref'"),
    ("selfref:selfref", "cannot check laws of <module 'selfref'"),
    ("exits:X", "sys.exit(3)"),
    ("noisy:X", "raised OSError: disk"),
    ("recursive_import:X", "RecursionError"),
    ("interrupts:X", "raised KeyboardInterrupt; fix it"),
    ("closes:X", "raised GeneratorExit: closed"),
    ("odd_base:X", "raised Odd: strange"),
    ("quits:X", "the check ended (exit status 0) before a verdict"),
    ("quits_later:Later", "the check ended (exit status 0) before a verdict"),
    ("huge:Huge", "past the 4,194,304 the law checker draws"),
]


def test_the_command_line_answers_one_line_whatever_the_target_does(tmp_path: Path) -> None:
    """Each target in a process of its own (``tests/_fork_runner.py``: torch imported once)."""
    jobs = []
    for i, (target, _) in enumerate(CASES):
        cwd = tmp_path / f"case{i}"
        cwd.mkdir()
        for name, text in TARGETS.items():
            (cwd / name).write_text(text)
        streams = {k: str(tmp_path / f"case{i}.{k}") for k in ("stdout", "stderr")}
        jobs.append({"module": "applicative.laws", "argv": [target, "--examples", "1"], "cwd": str(cwd), **streams})
    runner = [sys.executable, str(ROOT / "tests" / "_fork_runner.py")]
    done = subprocess.run(
        runner, input=json.dumps(jobs), env=_env(tmp_path), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    for (target, says), job, code in zip(CASES, jobs, codes, strict=True):
        err = Path(job["stderr"]).read_text()
        lines = err.strip().splitlines()
        assert "Traceback" not in err, (target, err[-2000:])
        assert code == 2, (target, code, err[-2000:])
        assert len(lines) == 1, (target, err)
        assert lines[0].startswith("python -m applicative.laws: error: "), (target, lines[0])
        assert says in lines[0], (target, lines[0])
        assert "noise" not in Path(job["stdout"]).read_text()
        left = {p.name for p in Path(job["cwd"]).iterdir()} - set(TARGETS) - {"__pycache__"}
        assert not left, (target, left)


def test_the_docstrings_state_the_cost_and_where_examples_go() -> None:
    for function in (check_laws, run_laws):
        doc = textwrap.dedent(function.__doc__ or "")
        assert re.search(r"\d+-\d+ s", doc), function.__name__
        assert "database" in doc, function.__name__


def test_mass_is_the_length_of_the_domain_for_any_batch(series: ModuleType) -> None:
    """``mass`` (what a user tests a measure by) on a value with no batch axis, and on a batch of them."""
    for like in (torch.zeros(7, dtype=torch.float64), torch.zeros(3, 7, dtype=torch.float64)):
        got = kernels.mass(series.example, like)
        assert got.shape == like.shape[:-1]
        torch.testing.assert_close(got, torch.full(like.shape[:-1], 2 * math.pi, dtype=torch.float64))


def test_the_command_line_called_from_a_process_that_ran_parallel_kernels_answers() -> None:
    """``main()`` from a process whose OpenMP threads have run (a test session, a notebook): the forked child's
    check runs parallel-sized kernels and must not wait for threads a fork does not copy (it hung, once)."""
    code = (
        "import sys, torch\n"
        "torch.set_num_threads(2)\n"
        "torch.randn(512, 4096).softmax(-1)\n"
        "from applicative.laws.__main__ import main\n"
        "sys.exit(main(['instances._product_arbitrary:ProductArbitrary', '--examples', '3']))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 fail" in done.stdout
