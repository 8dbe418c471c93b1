"""The ListOps classifiers as public objects: build one, load a trained one from its run directory.

Both kinds are the same generic encoder (:func:`models.treeformer` is :func:`models.encoder`) with the
same sizes, read out at the first position (the root operator in both views) by a linear classifier
over the 10 digits. They differ only in the sequence structure and in what the position features say --
both have ``len(VOCAB) + levels`` input features, so parameter counts are identical:

* ``tree-mean`` / ``tree-sum``: a field ``Tree x F``; leaves are the expression's tokens without
  brackets; features = one-hot token + the leaf's root-to-leaf path (:meth:`instances.Tree.address`);
  attention against the tree's measure (mean: leaf weight ``2^-depth``; sum: every leaf 1), with
  padding masked.
* ``vector``: a field ``Vector(L) x F`` over the flat tokens with brackets (``[MAX 2 9 ]``);
  features = one-hot token + sinusoidal position; padding tokens are ordinary tokens (a plain
  Transformer, as in Long Range Arena).

``fold`` is another kind of model, not an encoder: :class:`models.TreeFold` folds the expression trees
of :mod:`training.tasks.tree_listops.nodes` (digits at the leaves, ``(OP, closes)`` at the nodes) bottom up with
a learned node cell of state ``width`` and hidden size ``hidden``, and a linear classifier reads the
root's state. It is given the gold structure *and* the operators at the nodes, as Tree-LSTMs on ListOps
are; its parameter count differs from the encoders'.

``load(run_dir)`` returns a ready :class:`ListOpsModel` (eval mode) from a checkpoint (read with
``weights_only=True``)::

    from training.tasks.tree_listops import load
    from training.tasks.tree_listops.data import generate
    model = load("runs/tree_listops/tree-mean")   # or load("runs/tree_listops", "tree-mean")
    digits = model.predict(generate(10, seed=7).exprs)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from applicative import Field, Linear
from instances import Expressions, NodeAlgebra, Tree, Vector
from models import Readout, TreeFold, tree_features, treeformer
from training import CheckpointError, ConfigError, inputs, registry
from training.budget import layer_activations
from training.checkpoint import run_path

from .config import MODELS, Config, ModelKind
from .data import VOCAB, Expr, check_expressions, flat_batch, tree_batch
from .nodes import DIGITS, NODE_OPS, fold_batch

CHECKPOINT = "checkpoint.pt"
CLASSES = 10


def sinusoid(length: int, dims: int) -> Tensor:
    """``(length, dims)`` sinusoidal position features (Vaswani et al.); sines in even, cosines in odd columns."""
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(-1)
    freq = torch.exp(-math.log(1000.0) * torch.arange(0, dims, 2, dtype=torch.float32) / dims)
    out = torch.zeros(length, dims)
    out[:, 0::2], out[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq[: dims // 2])
    return out


class FoldReadout(nn.Module):
    """A :class:`models.TreeFold` over one-hot digits and a linear classifier of the roots' states."""

    def __init__(self, config: Config, device: torch.device | str | None = None) -> None:
        super().__init__()
        state = Vector(config.width)
        self.fold: TreeFold[Vector, Vector] = TreeFold(
            DIGITS, state, Vector(config.hidden), len(NODE_OPS), config.cell, device=device
        )
        self.head: Linear[Vector, Vector] = Linear(state, Vector(CLASSES), device=device)

    def forward(self, expressions: Expressions, leaves: Field[Tree, Vector]) -> Field[Vector]:
        """Logits ``(*batch, classes)``."""
        return self.head(self.fold(expressions, leaves))

    def __call__(self, expressions: Expressions, leaves: Field[Tree, Vector]) -> Field[Vector]:
        return cast("Field[Vector]", super().__call__(expressions, leaves))


class ListOpsModel(nn.Module):
    """A classifier of ListOps expressions: ``list[Expr]`` -> logits ``(batch, 10)`` over the digits.

    ``kind`` says how expressions become fields (see the module); ``net`` is the encoder with its readout.
    The model holds no state outside ``net``'s parameters, so a state dict alone restores it.
    """

    def __init__(self, config: Config, kind: ModelKind, device: torch.device | str | None = None) -> None:
        super().__init__()
        if kind not in MODELS:
            raise ValueError(f"ListOpsModel: kind {kind!r} is not one of {', '.join(MODELS)}")
        self.config, self.kind = config, kind
        self.net: Readout[Vector, Vector] | FoldReadout
        if kind == "fold":
            self.net = FoldReadout(config, device)
            return
        features = Vector(len(VOCAB) + config.levels)
        body = treeformer(
            features, Vector(config.width), Vector(config.hidden), config.heads, config.depth, device=device
        )
        self.net = Readout(body, classes=CLASSES)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def inputs(self, exprs: list[Expr]) -> Field[Vector, Vector]:
        """The field an encoder reads for a batch of expressions (on the model's device)."""
        device, levels = self.device, self.config.levels
        if self.kind == "fold":
            raise ValueError("ListOpsModel.inputs: the fold model reads expression trees; use fold_inputs")
        if self.kind == "vector":
            tokens = flat_batch(exprs).to(device)
            onehot = nn.functional.one_hot(tokens, len(VOCAB)).to(torch.float32)
            pos = sinusoid(tokens.shape[1], levels).to(device).expand(tokens.shape[0], -1, -1)
            return Field(torch.cat([onehot, pos], -1), (Vector(tokens.shape[1]), Vector(len(VOCAB) + levels)))
        algebra = NodeAlgebra.MEAN if self.kind == "tree-mean" else NodeAlgebra.SUM
        tree, tokens = tree_batch(exprs, algebra, device)
        return tree_features(tree, tokens, len(VOCAB), levels)  # type: ignore[return-value]

    def fold_inputs(self, exprs: list[Expr]) -> tuple[Expressions, Field[Tree, Vector]]:
        """The expression trees and one-hot leaf digits ``Tree x Vector(10)`` the fold model reads."""
        expressions, digits = fold_batch(exprs, self.device)
        leaves = nn.functional.one_hot(digits, DIGITS.size).to(torch.float32)
        return expressions, Field(leaves, (expressions.tree, DIGITS))

    def forward(self, exprs: list[Expr]) -> Tensor:
        """Logits ``(len(exprs), 10)``.

        Raises:
            InputError: ``exprs`` not a non-empty list of expressions (:func:`~.data.check_expressions`).
        """
        check_expressions(exprs, "ListOpsModel", "exprs")
        if isinstance(self.net, FoldReadout):
            return self.net(*self.fold_inputs(exprs)).tensor
        return self.net(self.inputs(exprs)).tensor

    def __call__(self, exprs: list[Expr]) -> Tensor:
        return super().__call__(exprs)  # type: ignore[no-any-return]

    @torch.no_grad()
    def predict(self, exprs: list[Expr], chunk: int = 500) -> Tensor:
        """The predicted digits ``(len(exprs),)`` (int64, on the CPU), in chunks; the mode (train/eval) is kept.

        Raises:
            InputError: ``exprs`` not a list of expressions (empty is allowed: no digits), ``chunk`` not ``>= 1``.
        """
        inputs.count("ListOpsModel.predict", "chunk", chunk)
        if not (isinstance(exprs, list) and not exprs):
            check_expressions(exprs, "ListOpsModel.predict", "exprs")
        was = self.training
        self.eval()
        try:
            out = [self(exprs[i : i + chunk]).argmax(-1).cpu() for i in range(0, len(exprs), chunk)]
        finally:
            self.train(was)
        return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


def checkpoint_path(run_dir: str | Path, kind: str | None = None) -> Path:
    """Where a model's checkpoint is: ``run_dir/checkpoint.pt`` (a model's own directory) or ``run_dir/kind/...``.

    With no ``kind``, a job's directory (``--out``) holding exactly one trained model names that one.
    """
    run_dir = Path(run_dir)
    if kind is not None:
        if kind not in MODELS:
            raise CheckpointError(f"load: model {kind!r} is not one of {', '.join(MODELS)}")
        path = run_dir / kind / CHECKPOINT
    elif (run_dir / CHECKPOINT).exists():
        path = run_dir / CHECKPOINT
    else:
        found = [m for m in MODELS if (run_dir / m / CHECKPOINT).exists()]
        if len(found) > 1:
            raise CheckpointError(
                f"{run_dir}: holds several trained models ({', '.join(found)}); "
                f"pass one, e.g. load({str(run_dir)!r}, {found[0]!r})"
            )
        path = run_dir / (found[0] if found else "") / CHECKPOINT
    if not path.exists():
        raise CheckpointError(
            f"{path}: no checkpoint there; train with python -m examples.tree_listops --out {run_dir}"
        )
    return path


def load(run_dir: str | Path, kind: ModelKind | None = None, device: torch.device | str = "cpu") -> ListOpsModel:
    """The trained model of a run directory (``python -m examples.tree_listops --out run_dir``), in eval mode.

    ``run_dir`` is a model's directory (``OUT/tree-mean``), or the job's ``OUT`` with ``kind`` naming the
    model (``kind`` may be left out when ``OUT`` holds one model only).
    """
    path = checkpoint_path(run_path(run_dir, "examples.tree_listops"), kind)
    model = registry.load(path.parent, device, task=SPEC.name)
    assert isinstance(model, ListOpsModel)
    return model


def _config(fields: Mapping[str, Any]) -> Config:
    """The config of a checkpoint's fields, validated; its ``model`` field (the kind), when present, checked too."""
    rest = dict(fields)
    kind = rest.pop("model", None)
    if kind is not None and kind not in MODELS:
        raise ConfigError(f"config field model={kind!r}: must be one of {', '.join(MODELS)}")
    return Config(**rest)


#: tokens in about the longest training expression (three nesting levels, brackets included)
TOKENS = 160


def activations(fields: Mapping[str, Any]) -> int:
    """Values one training expression keeps for the backward pass (an estimate, on :data:`TOKENS` tokens): the
    encoder's layers, or one layer's worth for the fold."""
    c = _config(fields)
    layers = 1 if fields.get("model") == "fold" else c.depth
    return layers * layer_activations(1, TOKENS, c.width, c.hidden, c.heads)


def _build(blob: dict[str, Any]) -> ListOpsModel:
    kind = blob["config"].get("model")
    if kind not in MODELS:
        raise ValueError(f"its config field model is {kind!r}, expected the kind of model: one of {', '.join(MODELS)}")
    return ListOpsModel(_config(blob["config"]), kind)


#: the ListOps models as :func:`training.load` knows them
SPEC = registry.TaskSpec(
    "tree_listops",
    1,
    ListOpsModel,
    _build,
    "examples.tree_listops",
    "a ListOps model",
    config=_config,
    activations=lambda fields, state: activations(fields),
)
