"""The memory budget: estimates from a config alone equal the built model, refusals name the field, data files are
checked from their headers, and every config field is bounded on both sides.

The parameter counts are compared with the models themselves (built small, from random configs): an estimate
that drifted from its model would refuse the wrong configs or admit ones that do not fit.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import training
from training import Budget, BudgetError, CheckpointError, DataError, describe
from training.budget import array_headers, check, check_arrays, check_counts, check_finite, meta_parameters
from training.config import CONVENTIONS, Checked
from training.tasks import darcy, lm, operator, poisson, tree_listops
from training.tasks.tree_listops.model import ListOpsModel

SLOW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@st.composite
def _sizes(draw: st.DrawFn) -> dict[str, int]:
    heads = draw(st.sampled_from([1, 2, 4]))
    return {
        "heads": heads,
        "width": heads * draw(st.integers(1, 6)),
        "hidden": draw(st.integers(1, 24)),
        "depth": draw(st.integers(1, 3)),
    }


def _estimated(spec: training.TaskSpec[Any], fields: dict[str, Any], state: dict[str, Any] | None = None) -> int:
    return spec.estimate(fields, state).parameters


@SLOW
@given(
    sizes=_sizes(),
    modes=st.integers(2, 6),
    extra=st.sampled_from(
        [
            {},
            {"sequence": "xy"},
            {"rank": 2, "out_modes": 7},
            {"key_size": 3, "value_size": 5},
            {"model": "chebyshev", "domain_modes": 7},
            {"dtype": "float64", "odd": True},
        ]
    ),
)
def test_the_poisson_estimate_is_the_models_count(sizes: dict[str, int], modes: int, extra: dict[str, Any]) -> None:
    config = poisson.Config(modes=modes, **sizes, **extra)
    assert _estimated(poisson.SPEC, describe(config)) == _count(poisson.PoissonModel(config))


@SLOW
@given(
    sizes=_sizes(),
    extra=st.sampled_from(
        [
            {},
            {"channels": 1, "window": 0.0},
            {"channels": 3, "frequencies": 2},
            {"reader_width": 6, "reader_heads": 3, "homogeneous": 0.0, "log_input": False},
        ]
    ),
)
def test_the_darcy_estimate_is_the_models_count(sizes: dict[str, int], extra: dict[str, Any]) -> None:
    config = darcy.Config(points=9, modes=5, **sizes, **extra)
    assert _estimated(darcy.SPEC, describe(config)) == _count(operator.build(config, darcy.model.SHAPE))


@SLOW
@given(
    sizes=_sizes(),
    modes=st.integers(3, 6),
    axes=st.sampled_from(
        [
            ("nodes",),
            ("periodic",),
            ("nodes", "periodic"),
            ("periodic", "centres"),
        ]
    ),
    channels=st.integers(1, 3),
    c_out=st.integers(1, 2),
    grid_path=st.sampled_from([0, 3]),
)
def test_the_operator_estimate_is_the_models_count(
    sizes: dict[str, int], modes: int, axes: tuple[str, ...], channels: int, c_out: int, grid_path: int
) -> None:
    from operators.layout import Axis
    from training.tasks.operator.model import record

    config = operator.Config(
        modes=modes, channels=channels, reader_width=4, reader_heads=2, frequencies=2, grid_path=grid_path, **sizes
    )
    shape = operator.Shape(tuple(Axis(a) for a in axes), 2, c_out)
    assert _estimated(operator.SPEC, record(config, shape)) == _count(operator.build(config, shape))


@SLOW
@given(sizes=_sizes(), kind=st.sampled_from(["tree-mean", "vector", "fold"]), cell=st.sampled_from(["mlp", "gated"]))
def test_the_listops_estimate_is_the_models_count(sizes: dict[str, int], kind: str, cell: str) -> None:
    config = tree_listops.Config(**sizes, cell=cell)
    fields = {**describe(config), "model": kind}
    assert _estimated(tree_listops.SPEC, fields) == _count(ListOpsModel(config, kind))  # type: ignore[arg-type]


@SLOW
@given(sizes=_sizes(), kind=st.sampled_from(["gpt", "relu", "triangular", "ipa", "rnn"]), vocab=st.integers(2, 40))
def test_the_lm_estimate_is_the_models_count(sizes: dict[str, int], kind: str, vocab: int) -> None:
    config = lm.Config(model=kind, context=8, **sizes)  # type: ignore[arg-type]
    state = {"vocab": "".join(chr(65 + i) for i in range(vocab))}
    assert _estimated(lm.SPEC, describe(config), state) == _count(lm.CharLM(config, state["vocab"]))


def test_every_built_in_task_is_estimated_from_its_model_on_the_meta_device() -> None:
    """For every task :func:`training.load` knows: the parameters of the model the checkpoint would build (counted on
    the meta device) are the built model's, and the task's activation estimate is there (the meta device cannot
    tell it)."""
    from operators.layout import Axis
    from training.tasks.operator.model import record

    shape = operator.Shape((Axis("nodes", boundary="zero"), Axis("periodic")), 1, 2)
    runs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "poisson": (describe(poisson.PRESETS["tiny"]), {}),
        "darcy": (describe(darcy.PRESETS["tiny"]), {}),
        "lm": (describe(lm.PRESETS["tiny"]), {"vocab": "abcde"}),
        "tree_listops": ({**describe(tree_listops.PRESETS["tiny"]), "model": "tree-mean"}, {}),
        "operator": (record(operator.PRESETS["tiny"], shape), {}),
    }
    assert set(runs) == set(training.registry.BUILT_IN)
    for name, (fields, state) in runs.items():
        spec = training.registry.spec_of(name)
        estimate = spec.estimate(fields, state)
        built = spec.build({"config": fields, "task": state})
        assert estimate.parameters == _count(built), name
        assert estimate.activation_bytes > 0, name


def test_deep_models_are_counted_from_shallow_builds_exactly() -> None:
    """Every built-in task's model, its layers past the shallow builds' (``depth`` 5, and ListOps' tree depth): the
    estimate from three shallow builds is the count of the model built as asked."""
    from operators.layout import Axis
    from training.tasks.operator.model import record

    shape = operator.Shape((Axis("periodic"),), 1, 1)
    deep = {"depth": training.registry.SHALLOW + 2}
    runs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "poisson": ({**describe(poisson.PRESETS["tiny"]), **deep}, {}),
        "darcy": ({**describe(darcy.PRESETS["tiny"]), **deep}, {}),
        "lm": ({**describe(lm.PRESETS["tiny"]), **deep}, {"vocab": "abcde"}),
        "tree_listops": ({**describe(tree_listops.PRESETS["tiny"]), "model": "tree-mean", **deep}, {}),
        "operator": ({**record(operator.PRESETS["tiny"], shape), **deep}, {}),
    }
    for name, (fields, state) in runs.items():
        spec = training.registry.spec_of(name)
        assert spec.estimate(fields, state).parameters == _count(spec.build({"config": fields, "task": state})), name


@pytest.mark.parametrize(
    ("law", "shallow"),
    [
        (lambda f: 7 + 5 * f["depth"] + 3 * f["memory_depth"], True),  # identical layers in two stacks: extrapolated
        (lambda f: 7 + 5 * f["depth"] ** 2 + 3 * f["memory_depth"], False),  # not a stack: counted as asked
        (lambda f: 7 + f["depth"] * f["memory_depth"], False),  # stacks that interact: counted as asked
    ],
)
def test_layered_counts_extrapolate_only_stacks_of_identical_layers(law: Any, shallow: bool) -> None:
    from training.registry import _layered_count

    seen: list[dict[str, Any]] = []

    def count(f: Any) -> int:
        seen.append(dict(f))
        return int(law(f))

    fields = {"depth": 40, "memory_depth": 9, "width": 3}
    assert _layered_count(count, fields) == law(fields)
    assert (fields in seen) is not shallow
    assert all(f["depth"] <= training.registry.SHALLOW for f in seen[:-1])


def test_the_estimates_grow_with_the_batch_and_the_data() -> None:
    """Activations scale with the batch, the data with the examples; the parameters with neither."""
    cost = poisson.SPEC.estimate
    base = describe(poisson.PRESETS["default"])
    one, two = cost(base), cost({**base, "batch": 2 * base["batch"]})
    assert two.parameters == one.parameters and two.activation_bytes > 1.9 * one.activation_bytes
    more = cost({**base, "n_train": 10 * base["n_train"]})
    assert more.data_bytes > one.data_bytes and more.parameters == one.parameters


def test_a_refusal_names_the_field_that_drives_the_estimate() -> None:
    cost = poisson.SPEC.estimate
    base = describe(poisson.Config())
    for field, fields in (("width", {**base, "width": 4096}), ("depth", {**base, "width": 1024, "depth": 256})):
        with pytest.raises(BudgetError) as refused:
            check(cost, fields, Budget.memory(1), where="f.pt", reference=base, what="a model")
        message = str(refused.value)
        assert "\n" not in message and message.startswith(
            f"f.pt: config field {field}={fields[field]} gives a model of "
        )
        assert f"past the budget of 6.71e+07 parameters and 1 GiB; lower {field}, or raise the budget" in message
        # the estimate itself, in the message, is the model's count
        assert f"{cost(fields).parameters:.3g} parameters" in message
    # within the budget: the estimate, no error
    assert check(cost, base, Budget()).parameters == cost(base).parameters


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"max_parameters": 0}, "max_parameters must be a positive int"),
        ({"max_bytes": 1.5}, "max_bytes must be a positive int"),
        ({"max_bytes": True}, "max_bytes must be a positive int"),
    ],
)
def test_a_budget_checks_itself(args: dict[str, Any], says: str) -> None:
    with pytest.raises(BudgetError, match=says):
        Budget(**args)
    for bad in (0, -1, float("nan"), "8", True):
        with pytest.raises(BudgetError, match=r"Budget\.memory: gib must be"):
            Budget.memory(bad)  # type: ignore[arg-type]
    assert Budget.memory(8) == Budget() and Budget.memory(1).max_bytes == 2**30


def test_load_takes_a_budget_by_name(tmp_path: Path) -> None:
    """The same checkpoint: refused under a small budget, loaded under the default; a wrong budget is named."""
    config = poisson.PRESETS["tiny"]
    model = poisson.PoissonModel(config)
    blob = {"format": 1, "meta": poisson.SPEC.meta(), "config": describe(config), "task": {"model": model.state_dict()}}
    torch.save(blob, tmp_path / "checkpoint.pt")
    with pytest.raises(CheckpointError, match=r"past the budget of 100 parameters.*budget=Budget.memory\(GIB\)"):
        training.load(tmp_path, budget=Budget(max_parameters=100))
    with pytest.raises(CheckpointError, match=r"holds .* GiB, past the memory budget of"):
        training.load(tmp_path, budget=Budget(max_bytes=100))  # the file itself, before it is read
    assert isinstance(training.load(tmp_path), poisson.PoissonModel)
    with pytest.raises(training.UserError, match=r"budget must be a training\.Budget"):
        training.load(tmp_path, budget=8)  # type: ignore[arg-type]
    with pytest.raises(CheckpointError, match=r"task must be a task's name \(a str"):
        training.load(tmp_path, task=["poisson"])  # type: ignore[arg-type]


def test_what_the_estimate_reads_besides_the_config_is_checked_too(tmp_path: Path) -> None:
    """A language model's estimate reads its vocabulary: a checkpoint without one is one line, not a raw error."""
    config = describe(lm.PRESETS["tiny"])
    for state, says in (({"model": {}}, "its vocabulary is None"), ({"model": {}, "vocab": "aa"}, "distinct")):
        torch.save({"format": 1, "meta": lm.SPEC.meta(), "config": config, "task": state}, tmp_path / "checkpoint.pt")
        with pytest.raises(CheckpointError, match=f"not a language model .{says}|{says}"):
            training.load(tmp_path)


def test_a_users_task_is_counted_on_the_meta_device(tmp_path: Path) -> None:
    """The model built on the meta device (no storage), its count checked before the real build."""
    spec = training.TaskSpec(
        "wide", 1, nn.Linear, lambda blob: nn.Linear(blob["config"]["n"], 1000), "wide", "a wide line"
    )
    training.register(spec)
    assert meta_parameters(lambda: nn.Linear(10**6, 10**6)) == 10**12 + 10**6  # no terabytes were allocated
    blob = {"format": 1, "meta": spec.meta(), "config": {"n": 10**6}, "task": {"model": {}}}
    torch.save(blob, tmp_path / "checkpoint.pt")
    with pytest.raises(CheckpointError, match=r"gives a wide line of 1e\+09 parameters .* past the budget"):
        training.load(tmp_path)


# ---- every config field bounded on both sides, and the docstring saying so ---------------------------------


def _configs() -> list[type[Checked]]:
    for module in (
        "training.tasks.poisson.config",
        "training.tasks.darcy.config",
        "training.tasks.lm.config",
        "training.tasks.tree_listops.config",
        "training.tasks.operator.config",
        "training.tasks.uncertainty.config",
        "training.tasks.cross_modal.config",
        "training.tasks.observer.config",
        "training.tasks.circuits.config",
        "training.tasks.graph_hops.config",
    ):
        importlib.import_module(module)
    found: list[type[Checked]] = []
    stack: list[type[Checked]] = [Checked]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if dataclasses.is_dataclass(sub) and sub.__module__.split(".")[0] in ("training", "examples"):
                found.append(sub)
    return found


@pytest.mark.parametrize("kind", _configs(), ids=lambda k: k.__module__)
def test_the_optimisers_fields_have_one_set_of_bounds(kind: type[Checked]) -> None:
    """``lr``, ``steps``, ``clip``, ... mean one thing with one range in every config (the shared table), and a config
    that trains by Adam on a one-cycle schedule is a :class:`training.config.Optimiser`."""
    from training.config import OPTIMISER_BOUNDS, Optimiser

    for f in dataclasses.fields(kind):
        if f.name in OPTIMISER_BOUNDS:
            assert dict(f.metadata) == OPTIMISER_BOUNDS[f.name], (kind, f.name, f.metadata)
    if {"beta2", "warmup"} <= {f.name for f in dataclasses.fields(kind)}:
        assert issubclass(kind, Optimiser), kind


@pytest.mark.parametrize("kind", _configs(), ids=lambda k: k.__module__)
def test_every_numeric_field_is_bounded_on_both_sides(kind: type[Checked]) -> None:
    import typing

    hints = typing.get_type_hints(kind)
    for f in dataclasses.fields(kind):
        if hints[f.name] not in (int, float):
            continue
        bounds = {**f.metadata, **CONVENTIONS.get(f.name, {})}
        assert {"min", "above"} & set(bounds), f"{kind.__module__}.{f.name}: no lower bound"
        assert {"max", "below"} & set(bounds), f"{kind.__module__}.{f.name}: no upper bound"
        assert math.isfinite(bounds.get("max", bounds.get("below", math.inf))), f.name
        assert f"``{f.name}`` " in (kind.__doc__ or ""), f"{kind.__module__}.{f.name}: its bound is not documented"


def test_a_field_past_its_bound_says_the_range() -> None:
    with pytest.raises(
        training.ConfigError, match=re.escape("config field depth=300: must be <= 256 (allowed: 1..256)")
    ):
        poisson.Config(depth=300)
    with pytest.raises(training.ConfigError, match=re.escape("config field width=0: must be >= 1")):
        training.override(lm.PRESETS["tiny"], ["width=0"])


# ---- data files: checked from their headers before a value is read -------------------------------------------


def test_array_headers_are_read_without_the_values(tmp_path: Path) -> None:
    x, y = np.zeros((5, 3, 4), np.float32), np.ones((5, 2), np.float64)
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "xy.npz", inputs=x, outputs=y)
    (h,) = array_headers(tmp_path / "x.npy")
    assert (h.name, h.shape, h.dtype, h.bytes) == ("", (5, 3, 4), np.dtype(np.float32), x.nbytes)
    headers = array_headers(tmp_path / "xy.npz")
    assert {g.name: (g.shape, g.bytes) for g in headers} == {"inputs": ((5, 3, 4), x.nbytes), "outputs": ((5, 2), 80)}
    assert check_counts(headers, "xy.npz") == 5
    assert [g.bytes for g in check_arrays(tmp_path / "xy.npz")] == [x.nbytes, y.nbytes]


def _truncated(path: Path) -> None:
    np.save(path, np.zeros((1000,), np.float64))
    path.write_bytes(path.read_bytes()[:500])


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: np.save(p, np.array([{"a": 1}], dtype=object)), "holds dtype object, not numbers"),
        (lambda p: np.save(p, np.zeros((0, 3))), "holds no values (shape (0, 3))"),
        (_truncated, "declares shape (1000,) of float64 (7.81 KiB) but holds"),
        (lambda p: p.write_bytes(b"not an array at all"), "cannot read its header"),
        (lambda p: np.save(p, np.zeros(3, dtype=[("a", "f4")])), "not numbers"),
    ],
    ids=["objects", "empty", "truncated", "not-npy", "records"],
)
def test_a_bad_array_file_is_one_line(make: Any, says: str, tmp_path: Path) -> None:
    path = tmp_path / "a.npy"
    make(path)
    with pytest.raises(DataError) as refused:
        array_headers(path)
    assert str(refused.value).startswith(f"{path}") and says in str(refused.value) and "\n" not in str(refused.value)


def test_data_files_past_the_budget_or_in_other_formats_are_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "big.npz", inputs=np.zeros((64, 64)), outputs=np.zeros((64, 8)))
    with pytest.raises(
        BudgetError, match=r"array 'inputs' of shape \(64, 64\) \(float64\) takes 32 KiB, 36 KiB in all"
    ):
        check_arrays(tmp_path / "big.npz", Budget(max_bytes=2**14))
    (tmp_path / "a.csv").write_text("1,2\n")
    with pytest.raises(DataError, match=r"not an array file: expected \.npy or \.npz"):
        array_headers(tmp_path / "a.csv")
    with pytest.raises(DataError, match="no such file"):
        array_headers(tmp_path / "missing.npy")
    with zipfile.ZipFile(tmp_path / "odd.npz", "w") as z:
        z.writestr("notes.txt", "hello")
    with pytest.raises(DataError, match=r"holds 'notes\.txt', not an array"):
        array_headers(tmp_path / "odd.npz")
    np.savez(tmp_path / "uneven.npz", inputs=np.zeros((4, 2)), outputs=np.zeros((5, 2)))
    with pytest.raises(DataError, match=r"one length along axis 0 \(samples\), got inputs: 4, outputs: 5"):
        check_counts(array_headers(tmp_path / "uneven.npz"), "uneven.npz")


def test_check_finite_counts_and_locates() -> None:
    values = np.zeros((3, 4))
    check_finite(values, "x")
    values[1, 2], values[2, 0] = np.nan, np.inf
    with pytest.raises(DataError, match=r"x: holds 2 NaN or infinite values of 12 \(the first at index \(1, 2\)\)"):
        check_finite(values, "x")


def test_counting_on_the_meta_device_imports_no_compiler() -> None:
    """An elementwise op on a meta tensor imports ``torch._dynamo`` (seconds, on the first ``training.load`` of a
    process): every built-in model builds its constants by value on the CPU, so estimating each imports nothing."""
    import subprocess
    import sys

    code = """
import sys
from training import describe
from training.tasks import darcy, lm, operator, poisson, tree_listops
from training.tasks.operator.model import record
from operators.layout import Axis
shape = operator.Shape((Axis("nodes", boundary="zero"), Axis("periodic")), 1, 2)
for preset in poisson.PRESETS.values():
    poisson.SPEC.estimate(describe(preset))
darcy.SPEC.estimate(describe(darcy.PRESETS["default"]))
operator.SPEC.estimate(record(operator.PRESETS["default"], shape))
for kind in ("gpt", "relu", "softplus", "triangular", "ipa", "rnn"):
    lm.SPEC.estimate(describe(lm.PRESETS["tiny"].replace(model=kind)), {"vocab": "abcd"})
for kind in ("tree-mean", "tree-sum", "vector", "fold"):
    tree_listops.SPEC.estimate({**describe(tree_listops.PRESETS["tiny"]), "model": kind})
assert "torch._dynamo" not in sys.modules, "a meta-device count imported torch._dynamo"
"""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
