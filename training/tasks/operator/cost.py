"""What an operator model costs, from its config and the data's shape alone: exact parameters, a batch's activations.

:class:`~training.tasks.operator.model.OperatorModel`: a :class:`~training.tasks.operator.model.Reader` (an embedding
of the samples' tokens, learned queries and a cross-attention of ``reader_width`` channels per axis, a lift to
``width``), one Funcformer per axis (``n`` positions, the other axis's ``n`` coefficients times ``channels`` as
features; in 1D the ``channels`` alone), the collapse ``width -> channels`` and the mix ``channels -> C_out``.
``n = modes`` on a bounded axis, the odd ``modes + 1 - modes % 2`` on a periodic one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.budget import Estimate, attention, encoder_layer, layer_activations, layer_norm, linear

#: the samples per axis assumed for an activation estimate when the data's grid is not known (a checkpoint)
POINTS = 64


def sizes(c: Mapping[str, Any]) -> list[int]:
    """Coefficients per axis of the model's series, from the config's ``modes`` and the recorded boundaries."""
    n = c["modes"]
    out = []
    for name in "xy":
        if f"data_{name}_layout" in c:
            out.append(n + 1 - n % 2 if c.get(f"data_{name}_boundary") == "periodic" else n)
    return out


def cost(c: Mapping[str, Any], points: int = POINTS) -> Estimate:
    """The :class:`~training.budget.Estimate` of an operator run's recorded fields (config and ``data_*``).

    Raises:
        ValueError: the fields do not record the data's shape (``data_c_in``, ``data_c_out``, ``data_x_layout``).
    """
    missing = [k for k in ("data_c_in", "data_c_out", "data_x_layout") if k not in c]
    if missing:
        raise ValueError(f"it does not record the data's shape ({', '.join(missing)})")
    ns = sizes(c)
    dims = len(ns)
    width, hidden, heads, depth, batch = c["width"], c["hidden"], c["heads"], c["depth"], c["batch"]
    r, rh, f, ch = c["reader_width"], c["reader_heads"], 2 * c["frequencies"], c["channels"]
    c_in, c_out = c["data_c_in"], c["data_c_out"]
    parameters = linear(c_in + f, r) + layer_norm(r) + attention(r, rh, r // rh, r // rh) + ns[0] * r + linear(r, width)
    activations = layer_activations(batch * points ** (dims - 1), ns[0], r, 0, rh, points)
    if dims == 2:
        parameters += linear(f, r) + layer_norm(r) + attention(r, rh, r // rh, r // rh) + ns[1] * r
        activations += layer_activations(batch * ns[0], ns[1], r, 0, rh, points) + 4 * batch * points * points * r
    key = width // heads
    for i, n in enumerate(ns):
        features = ch * (ns[1 - i] if dims == 2 else 1)
        parameters += 2 * linear(features, width, bias=False) + n * width
        parameters += depth * encoder_layer(width, hidden, heads, key, key)
        activations += depth * layer_activations(batch, n, width, hidden, heads)
    parameters += linear(width, ch) + (0 if ch == 1 == c_out else linear(ch, c_out))
    return Estimate.of(parameters, c["dtype"], activations)
