"""What a Poisson model costs, from its config alone: exact parameters, a training batch's activations, the data.

:class:`~training.tasks.poisson.model.PoissonModel` is a :class:`models.Funcformer` (embedding and unembedding
``features x width`` each, a learned position ``sequence x width``, ``depth`` encoder layers) beside the linear
path ``Σ_r A_r f B_rᵀ`` (``2 rank · out_modes · modes``). Its sequence is ``x`` (``m`` positions, features
functions of ``y``: ``m``) or the square ``xy`` (``m²`` positions, one feature), ``m = domain_modes or modes``.
The data a run holds: the splits' sources and solutions, and the solver's response matrix
``modes² x out_modes²`` (float64), built from ``modes²`` unit sources solved at degree ``DEGREE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.budget import Estimate, encoder_layer, layer_activations, linear

#: the degree the data's exact solver works at (:data:`operators.poisson.sources.DEGREE`)
DEGREE = 48


def cost(c: Mapping[str, Any]) -> Estimate:
    """The :class:`~training.budget.Estimate` of a Poisson config's fields (plain data, bounds checked)."""
    n, width, hidden, heads, depth = c["modes"], c["width"], c["hidden"], c["heads"], c["depth"]
    m, out = c["domain_modes"] or n, c["out_modes"] or n
    key = c["key_size"] or width // heads
    value = c["value_size"] or key
    sequence, features = (m * m, 1) if c["sequence"] == "xy" else (m, m)
    parameters = 2 * linear(features, width, bias=False) + sequence * width
    parameters += depth * encoder_layer(width, hidden, heads, key, value)
    parameters += 2 * c["rank"] * out * n
    batch = c["batch"] * (2 if c["odd"] else 1)
    activations = depth * layer_activations(batch, sequence, width, hidden, heads) + 4 * batch * sequence * features
    examples = c["n_train"] + 2 * c["n_test"]  # train, held-out and out-of-distribution splits
    data = 8 * examples * (n * n + out * out) + 8 * n * n * (n * n + out * out + 2 * DEGREE * DEGREE)
    return Estimate.of(parameters, c["dtype"], activations, data)
