"""What a Darcy model costs, from its config alone: exact parameters, a training batch's activations, the data.

:class:`~training.tasks.darcy.model.DarcyModel`: with ``reader="grid"`` a
:class:`~training.tasks.darcy.model.GridReader` (embeddings of the grid's tokens, two layer norms, two
cross-attentions of ``reader_width`` channels, learned queries on ``X`` and ``Y``, a lift to ``width``); then
either one or two 1D :class:`models.Funcformer` s (``sequence="x"`` / ``"x+y"``: ``n`` positions, features
``n · channels``), with the reader's collapse ``width -> channels`` and the mix ``channels -> 1``, or ``depth``
encoder layers over the domain's ``n²`` positions and a readout ``width -> 1`` (``"xy"``); ``n = modes``.
The data a run holds: ``a``, ``u`` and the draws of every sample, and the solver's grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.budget import Estimate, attention, encoder_layer, layer_activations, layer_norm, linear

#: the Gaussian random field's modes per axis (:data:`operators.darcy.data.MODES`)
GRF_MODES = 32


def cost(c: Mapping[str, Any]) -> Estimate:
    """The :class:`~training.budget.Estimate` of a Darcy config's fields (plain data, bounds checked)."""
    n, width, hidden, heads, depth = c["modes"], c["width"], c["hidden"], c["heads"], c["depth"]
    points, channels, batch = c["points"], c["channels"], c["batch"]
    grid = c["reader"] == "grid"
    parameters = activations = 0
    if grid:
        r, rh = c["reader_width"] or width, c["reader_heads"] or heads
        f = 2 * c["frequencies"]
        parameters += linear(1 + f, r) + linear(f, r) + 2 * layer_norm(r) + 2 * attention(r, rh, r // rh, r // rh)
        parameters += 2 * n * r + linear(r, width)
        # along x: a batch of rows (B P) reading P tokens; along y: (B n) columns reading P tokens
        activations += layer_activations(batch * points, n, r, 0, rh, points) + 4 * batch * points * points * r
        activations += layer_activations(batch * n, n, r, 0, rh, points)
    if c["sequence"] in ("x", "x+y"):
        features = n * (channels if grid else 1)
        key = width // heads
        one = (
            2 * linear(features, width, bias=False) + n * width + depth * encoder_layer(width, hidden, heads, key, key)
        )
        copies = 2 if c["sequence"] == "x+y" else 1
        parameters += copies * one
        activations += copies * depth * layer_activations(batch, n, width, hidden, heads)
        if grid:
            parameters += linear(width, channels)
        if channels > 1:
            parameters += linear(channels, 1)
    else:
        key = width // heads
        parameters += depth * encoder_layer(width, hidden, heads, key, key) + linear(width, 1)
        activations += depth * layer_activations(batch, n * n, width, hidden, heads)
    examples = c["n_train"] + c["n_test"]
    fine = c["refine"] * (points - 1) + 1
    data = 8 * examples * (3 * points * points + GRF_MODES * GRF_MODES) + 8 * 16 * fine * fine * min(examples, 64)
    return Estimate.of(parameters, c["dtype"], activations, data)
