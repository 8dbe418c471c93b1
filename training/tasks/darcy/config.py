"""Configuration of the Darcy job: the operator task's config with the Darcy preset's options, and the data's.

Darcy flow is the operator task (:mod:`training.tasks.operator`) on generated data: the operator model reads
``log a`` (``log_input``), builds in ``u(c a) = u(a) / c`` (``homogeneous = -1``) and trains on the square's eight
symmetries (``augment="square"``), with the data's own fields beside (the coefficient family, the grid, the
sample counts). Why each value was chosen is in the lab notes (``docs/notes/2026-11-darcy.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from instances.axes import ZERO
from operators.darcy.data import Family
from training.config import between, document_bounds
from training.tasks.operator.config import Augment
from training.tasks.operator.config import Config as OperatorConfig


@dataclass(frozen=True)
class Config(OperatorConfig):
    """Everything that determines a training run (and so its checkpoint); validated on construction.

    The operator task's fields (:class:`training.tasks.operator.Config`), its Darcy options on by default
    (``log_input``, ``homogeneous = -1``, ``augment="square"``), and the data's:

    Attributes:
        family: the coefficient family, ``"lognormal"`` (``a = e^g``) or ``"piecewise"`` (``a ∈ {3, 12}``).
        points: grid nodes per axis of ``[0, 1]²`` (data and evaluation); ``refine``: the solver's finer grid.
        n_train, n_test: samples (the FNO paper trained on 1000).
    """

    log_input: bool = True
    homogeneous: float = between(-1.0, -8.0, 8.0)
    augment: Augment = "square"
    family: Family = "piecewise"
    points: int = between(33, 3, 1025)
    refine: int = between(2, 1, 8)
    n_train: int = between(1000, 1, 10**6)
    n_test: int = between(100, 1, 10**6)

    def consistent(self) -> str | None:
        terms = ZERO.coefficients(self.modes)
        if terms > self.points:
            return (
                f"config fields modes={self.modes}, points={self.points}: the solution series has {terms} terms per "
                "axis, more than the grid can determine; lower modes or raise points"
            )
        return super().consistent()


document_bounds(Config)

PRESETS: dict[str, Config] = {
    "default": Config(),
    "lognormal": Config(family="lognormal"),
    # seconds: for tests and smoke runs
    "tiny": Config(
        points=17,
        refine=1,
        modes=8,
        width=16,
        hidden=16,
        heads=2,
        depth=1,
        reader_width=8,
        channels=2,
        frequencies=2,
        window=0.0,
        reader_window=0.0,
        n_train=32,
        n_test=8,
        steps=30,
        batch=8,
        lr=3e-3,
        eval_every=10,
        checkpoint_every=10,
    ),
}
