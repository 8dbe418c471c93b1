"""`training.load(run_dir)`: one route from any task's run directory to a ready model.

Each task's program trains a tiny run for two steps; the model `training.load` rebuilds from the
checkpoint alone must equal the one training left in memory (its weights and its outputs). A
checkpoint of another task, of another task version, or of another checkpoint format is refused in
one line naming both sides, by loading and resuming alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import training
from models.operator import OperatorModel
from training import CheckpointError
from training.tasks import darcy, lm, operator, poisson, tree_listops

pytestmark = pytest.mark.usefixtures("one_thread")


def _poisson(out: Path) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from training.tasks.poisson import data, train

    cfg = poisson.PRESETS["tiny"]
    splits = data.splits(cfg.n_train, cfg.n_test, cfg.seed, cfg.modes)
    model = train.train(cfg, splits, out, progress=False, stop_after=2).model
    return model, lambda m: m(splits.test.f[:4])


def _darcy(out: Path) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from operators.darcy import data
    from training.tasks.darcy import train

    cfg = darcy.PRESETS["tiny"]
    splits = data.splits(cfg.family, cfg.n_train, cfg.n_test, cfg.points, refine=cfg.refine)
    run = train.train(cfg, splits, out, progress=False, stop_after=2)
    x, at = splits.test.a[:4, ..., None], torch.rand(5, 2, dtype=torch.float64)  # scattered points of the square
    return run.trained.model, lambda m: operator.predict(m, x, at=at)


def _operator(out: Path) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from operators.dataset import samples
    from tests.operator_cases import periodic_inverse

    case = periodic_inverse()
    tr = samples(*case.sample(16, 24, 0), case.axes)
    model = operator.train(operator.PRESETS["tiny"], tr, {}, out, progress=False, stop_after=2).trained.model
    x = torch.from_numpy(case.sample(4, 32, 1)[0])  # another resolution, anywhere
    return model, lambda m: operator.predict(m, x, at=(torch.linspace(0, 1, 7, dtype=torch.float64),))


def _lm(out: Path) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from training.tasks.lm import train

    cfg = lm.PRESETS["tiny"]
    corpus = lm.data.corpus(cfg.limit or None)
    model = train.train(cfg, corpus, out, progress=False, stop_after=2).model
    return model, lambda m: m(corpus.valid[None, : cfg.context].to(torch.long))


def _listops(out: Path) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    from training.tasks.tree_listops import train

    cfg = tree_listops.PRESETS["tiny"]
    splits = tree_listops.data.splits(cfg.train, cfg.test, cfg.seed)
    model = train.train(cfg, "tree-mean", splits, out / "tree-mean", progress=False, stop_after=2).model
    return model, lambda m: m(splits.test.exprs[:8])


RUNS: dict[str, Callable[[Path], tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]]] = {
    "poisson": _poisson,
    "darcy": _darcy,
    "lm": _lm,
    "tree_listops": _listops,
    "operator": _operator,
}
CLASSES: dict[str, type[nn.Module]] = {
    "poisson": poisson.PoissonModel,
    "darcy": OperatorModel,
    "operator": OperatorModel,
    "lm": lm.CharLM,
    "tree_listops": tree_listops.ListOpsModel,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, nn.Module, Any]]:
    done = {}
    for name, run in RUNS.items():
        out = tmp_path_factory.mktemp(name)
        with torch.random.fork_rng():
            torch.set_num_threads(1)
            model, predict = run(out)
        done[name] = (out, model.eval(), predict)
    return done


@pytest.mark.parametrize("name", list(RUNS))
def test_load_rebuilds_each_task_from_its_run_directory(name: str, runs: dict[str, Any]) -> None:
    out, trained, predict = runs[name]
    model = training.load(out)
    assert type(model) is CLASSES[name] and not model.training
    for (k, p), (j, q) in zip(trained.state_dict().items(), model.state_dict().items(), strict=True):
        assert k == j and torch.equal(p.cpu(), q), k
    with torch.no_grad():
        torch.testing.assert_close(predict(model), predict(trained), rtol=0, atol=0)
    # the task's own load is the same route, and says the task it expects
    assert type(training.load(out, task=name)) is CLASSES[name]


def test_the_checkpoint_says_what_it_holds(runs: dict[str, Any]) -> None:
    for name, (out, trained, _) in runs.items():
        path = training.registry.checkpoint_in(out)
        meta = torch.load(path, weights_only=True)["meta"]
        kind = f"{type(trained).__module__}.{type(trained).__qualname__}"
        assert meta == {"task": name, "model": kind, "version": training.registry.spec_of(name).version}


def test_another_tasks_checkpoint_is_refused_naming_both(runs: dict[str, Any]) -> None:
    out = runs["darcy"][0]
    with pytest.raises(CheckpointError) as caught:
        poisson.load(out)
    message = str(caught.value)
    assert "\n" not in message
    assert "'darcy' (OperatorModel, version 2)" in message and "'poisson' (PoissonModel, version 1)" in message
    with pytest.raises(CheckpointError, match=r"'lm'.*not task 'tree_listops'"):
        training.load(runs["lm"][0], task="tree_listops")


def _rewritten(src: Path, dst: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    blob = torch.load(training.registry.checkpoint_in(src), weights_only=True)
    change(blob)
    dst.mkdir()
    torch.save(blob, dst / "checkpoint.pt")
    return dst


def test_another_version_is_refused_naming_both(runs: dict[str, Any], tmp_path: Path) -> None:
    def newer(blob: dict[str, Any]) -> None:
        blob["meta"]["version"] = 7

    out = _rewritten(runs["poisson"][0], tmp_path / "v7", newer)
    with pytest.raises(CheckpointError) as caught:
        training.load(out)
    message = str(caught.value)
    assert "\n" not in message and "version 7" in message and "version 1" in message

    def other_format(blob: dict[str, Any]) -> None:
        blob["format"] = 99

    out = _rewritten(runs["poisson"][0], tmp_path / "f99", other_format)
    with pytest.raises(CheckpointError, match=r"format 99.*reads format 1"):
        training.load(out)


def _meta(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], None]:
    def apply(blob: dict[str, Any]) -> None:
        change(blob)

    return apply


#: checkpoints that say nothing, or not all, or something else about what they hold
METAS: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "no meta": (lambda b: b.pop("meta"), "does not record what it holds (no meta"),
    "empty meta": (lambda b: b.update(meta={}), "has no task (the task's name), model (its model class), version"),
    "task only": (lambda b: b.update(meta={"task": "poisson"}), "has no model (its model class), version"),
    "meta a list": (lambda b: b.update(meta=[1]), "its meta is [1], expected a dict"),
    "version a str": (lambda b: b["meta"].update(version="1"), "its meta's version is '1'"),
    "another version": (lambda b: b["meta"].update(version=7), "(PoissonModel, version 7), but this library reads"),
    "another class": (
        lambda b: b["meta"].update(model="models.operator._model.OperatorModel"),
        "(OperatorModel, version 1), but this library reads task 'poisson' (PoissonModel, version 1)",
    ),
    "another task": (lambda b: b["meta"].update(task="darcy"), "not task 'poisson' (PoissonModel, version 1)"),
    "unknown task": (lambda b: b["meta"].update(task="nope"), "holds task 'nope'"),
}


@pytest.mark.parametrize("case", list(METAS))
def test_one_rule_for_every_reader(case: str, runs: dict[str, Any], tmp_path: Path) -> None:
    """Resuming and loading read a checkpoint's meta by one rule: what one refuses the other refuses, in the same
    words (a missing key is a CheckpointError naming the file, never a KeyError)."""
    change, says = METAS[case]
    out = _rewritten(runs["poisson"][0], tmp_path / "run", _meta(change))
    path = out / "checkpoint.pt"
    blob = torch.load(path, weights_only=True)
    with pytest.raises(CheckpointError) as loaded:
        poisson.load(out)
    with pytest.raises(CheckpointError) as resumed:
        training.check_resume(out, blob["config"], poisson.SPEC.meta())
    message = str(loaded.value)
    assert message == str(resumed.value)
    assert message.startswith(f"{path}: ") and "\n" not in message and says in message, message
    if case not in ("another task",):  # a darcy checkpoint loads when no task is asked for
        with pytest.raises(CheckpointError, match=re.escape(str(path))):
            training.load(out)


def test_the_unchanged_checkpoint_passes_both_readers(runs: dict[str, Any], tmp_path: Path) -> None:
    """The control of :func:`test_one_rule_for_every_reader`: the same rewrite, with nothing changed."""
    out = _rewritten(runs["poisson"][0], tmp_path / "run", lambda blob: None)
    blob = torch.load(out / "checkpoint.pt", weights_only=True)
    assert training.check_resume(out, blob["config"], poisson.SPEC.meta()) is not None
    assert isinstance(poisson.load(out), poisson.PoissonModel)


def test_unknown_tasks_and_missing_runs_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no task called 'nope'; known tasks: poisson, darcy"):
        training.load(tmp_path, task="nope")
    with pytest.raises(CheckpointError, match="no checkpoint there"):
        training.load(tmp_path)
    # the unknown task is named before the directory is searched
    with pytest.raises(CheckpointError, match="no task called 'nope'"):
        training.load(tmp_path / "missing", task="nope")
    # a directory of many runs names a few of them, not all
    for i in range(9):
        (tmp_path / f"run{i}").mkdir()
        (tmp_path / f"run{i}" / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"several trained models \(run0, run1, run2, run3, run4 and 4 more\)"):
        training.load(tmp_path)


def test_an_operator_checkpoint_of_the_flattened_layout_is_refused_with_the_retrain_command(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    """Version 1 stored the data's shape as ``data_x_layout`` fields; the records replaced them (version 2)."""

    def flattened(blob: dict[str, Any]) -> None:
        blob["meta"]["version"] = 1
        data = blob["config"].pop("data")
        axis = data["axes"][0]
        blob["config"] |= {"data_c_in": 1, "data_c_out": 1, **{f"data_x_{k}": v for k, v in axis.items()}}

    out = _rewritten(runs["operator"][0], tmp_path / "v1", flattened)
    with pytest.raises(CheckpointError) as caught:
        training.load(out)
    message = str(caught.value)
    assert "\n" not in message and "version 1), but this library reads task 'operator'" in message
    assert f"retrain with python -m examples.operator --out {out}" in message


def test_a_users_task_registers(tmp_path: Path) -> None:
    spec = training.TaskSpec("mine", 1, nn.Linear, lambda blob: nn.Linear(blob["config"]["n"], 1), "mine", "a line")
    training.register(spec)
    weights = nn.Linear(3, 1).state_dict()
    blob = {"format": 1, "meta": spec.meta(), "config": {"n": 3}, "task": {"model": weights}}
    torch.save(blob, tmp_path / "checkpoint.pt")
    model = training.load(tmp_path)
    assert isinstance(model, nn.Linear) and torch.equal(model.weight, weights["weight"])
    with pytest.raises(ValueError, match="built-in"):
        training.register(training.TaskSpec("poisson", 1, nn.Linear, spec.build, "x", "y"))
