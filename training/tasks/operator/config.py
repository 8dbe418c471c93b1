"""Configuration of the operator task: one frozen dataclass, every field bounded on both sides, and presets.

The model's fields are :class:`models.OperatorModel`'s constructor arguments (:func:`~.model.build` passes them
on); the rest say how it is trained. The defaults are the best measured across the operator zoo's rows (Poisson,
Darcy, Burgers, KdV, Navier–Stokes); what suits one kind of grid is set from the data (the decoder on periodic
grids, the smoothing penalty on bounded ones), and what encodes one problem's physics (a log input, a symmetry) is
off by default and on in the ``darcy`` preset. Why each value was chosen is in the lab notes (``docs/notes/``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from training.config import (
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_MODES,
    MAX_WIDTH,
    Optimiser,
    between,
    document_bounds,
    optimiser_field,
)

Activation = Literal["relu", "gelu"]
Augment = Literal["none", "flips", "square", "shifts"]
DType = Literal["float32", "float64"]
Reader = Literal["attention", "fourier"]
Loss = Literal["squared", "relative"]
Optimiser_ = Literal["muon", "adam"]

#: the nonlinearities a config names, by name
ACTIVATIONS: dict[Activation, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "gelu": nn.functional.gelu}


@dataclass(frozen=True)
class Config(Optimiser):
    """Everything that determines a training run (with the data's shape, its checkpoint); validated on construction.

    The optimiser's fields are :class:`training.config.Optimiser`'s (a one-cycle schedule; here Muon on the hidden
    matrices and Adam on the rest, :attr:`optimiser`), with a peak ``lr`` of ``1e-2``, ``beta2 = 0.95`` and
    ``clip = 0`` here: no gradient clipping. At the shared default (norm 1) the clip
    bound on 97% of the steps before the last quarter (the gradient's median norm 2.2–3.5 on Burgers at ν = 0.01).
    Without it, at equal steps: Burgers 20% better at ν = 0.1, 11–12% at ν = 0.01 (two seeds), 1–7% at ν = 0.001,
    the trajectory map 3%, KdV within its seed noise (+2%, −10%), Navier–Stokes 11% with the Fourier reader and the
    relative loss (3–4% worse with the attention reader and the squared loss, two seeds); Poisson and Darcy in both
    families unchanged (within 1%). The lab note ``docs/notes/2026-11-29-clipping.md``; a run that diverges is told
    to set ``--config clip=``, and the ``tiny`` preset (short runs of small batches, where the clip halves the error)
    keeps norm 1. The model's fields and the loss's:

    Attributes:
        modes: coefficients per axis of the model's series (a periodic axis's Fourier series takes the odd number
            ``modes + 1 - modes % 2``); a ``"zero"`` boundary adds two (the factor ``1 - t²``).
        width, hidden: the Funcformers' model channels and MLP width.
        heads, depth: attention heads (dividing ``width``) and encoder layers. Six layers of 28 channels (MLPs of
            84) without layer norms (``norms``), rather than four of 36 (108) with them, at 7–10% fewer weights:
            measured at equal steps on every row of the zoo with the row's own settings (the lab note
            ``docs/notes/2026-11-30-six-layers.md``), better on all but one: Burgers 54% at ν = 0.1, 26% at 0.01,
            10% at 0.001, its trajectory map 22%, KdV 19%, Poisson 41%, log-normal Darcy 10%, Navier–Stokes
            17%; piecewise Darcy level (1.5% worse on one seed, 1.9% better on another). Four of 36 had replaced
            three of 40 (``docs/notes/2026-11-29-four-layers.md``).
        attend_every: layers ``0, k, 2k, …`` attend (``k = attend_every``); the others are their MLP (and
            convolution) alone (:attr:`models.FuncformerConfig.attend_every`). ``1``, every layer, is the default;
            see the operator guide for ``attend_every=4`` with sixteen layers on 1D periodic maps. A bounded axis has
            no convolution: there a layer that does not attend mixes no positions (not measured on bounded rows).
        activation: the MLPs' nonlinearity, ``"gelu"`` or ``"relu"`` (the design source's).
        window: the Funcformers' locality along their sequence (``0``: none):
            head ``h`` of ``H`` adds ``-β_h (t - s)²`` to its scores, ``β_h = window / 4^(H-1-h)``.
        convolution: each Funcformer layer along a periodic axis adds a learned circular convolution of its input,
            per channel (:attr:`models.FuncformerConfig.convolution`: each frequency scaled and turned, as an
            FNO's spectral layer does, with one kernel per channel instead of a matrix per frequency; ``depth ·
            modes · width`` weights). Bounded axes have none, so it changes nothing there. Measured at equal steps
            it is worth 1.2–6 times on every periodic row of the zoo, with either reader and either loss (the lab
            note ``docs/notes/2026-11-29-convolution.md``); ``false`` builds the model of earlier releases.
        axial: on a grid of two axes, each axis's Funcformer runs at every point of the other and the two are
            composed (:class:`models.operator.AlongAxes`), instead of the factored form whose state at a point of one
            axis holds all of the other's functions. On Navier--Stokes 1.3–1.5 times better at equal steps (1.59e-2
            and 1.79e-2 on two seeds against 2.39e-2, with 10% fewer weights) and about nine times the time per step
            on the CPU (the lab note ``docs/notes/2026-11-29-axial.md``); with ``channels=16`` (the only state passed
            between its two Funcformers at a point) 1.355e-2 and 1.588e-2, 1.84 of the FNO at ``8e-3``; at six
            layers of 28 without norms 1.251e-2 and 1.370e-2, 1.77 of the FNO over two seeds of each
            (``docs/notes/2026-11-30-plane.md``); with its layers interleaved (``interleaved``, the default)
            7.358e-3 and 7.210e-3, 0.98 of the FNO; interleaved with ``channels`` as wide as the state
            (``channels=28``) 6.541e-3, 6.590e-3 and 6.728e-3, 0.87 of the FNO over three seeds of each
            (``docs/notes/2026-11-30-functions.md``): with ``axial``, ``channels=0`` hands on ``width``. Its
            attention costs ``n_x n_y (n_x + n_y)`` per layer on an ``n_x × n_y`` series, so ``modes`` sets its time:
            on Navier--Stokes 8 modes instead of 25 were 0.91 of the FNO at equal steps (three seeds of each), at
            0.84 of an FNO step instead of 4.95 (``docs/notes/2026-11-30-modes.md``). On Poisson
            (33², 2000 steps) 1.35e-2 against the factored form's 1.00e-2, at 5.5 times the time
            (``docs/notes/2026-11-30-four-settings.md``). So off by default: it suits a nonlinear map on a plane, not
            a near-linear one.
            Two axes only (a 1D grid is refused).
        interleaved: with ``axial``, the layers alternate between the axes (layer ``i`` along ``x`` at every point
            of ``y``, then layer ``i`` along ``y``), the ``width``-wide state of the plane carried whole between them,
            instead of each axis's Funcformer run whole and composed (only ``channels`` functions per point passed
            between them, once). The same layers at the same cost, and fewer weights (``F_y``'s embedding and
            unembedding are not built). On Navier--Stokes at six layers of 28 without norms, 16 functions: 7.358e-3
            and 7.210e-3 on two seeds against the composed form's 1.251e-2 and 1.370e-2; 0.98 of the FNO at
            ``8e-3`` over two seeds of each (the lab note ``docs/notes/2026-11-30-plane.md``). On by default; it
            does nothing without ``axial``. A checkpoint written before the field is read as composed (``false``).
        plane: on a grid of two periodic axes, each function is convolved with a learned kernel of the plane
            before and after the Funcformers (the composed axial form: also between them;
            :class:`models.operator.AlongAxes`), a multiplier per frequency pair that need not factor into one per
            axis as the Funcformers' convolutions do. Elsewhere it changes nothing. On Navier--Stokes, over two
            seeds, 7% better factored and 2% in the composed axial form, the seeds disagreeing in sign in both, with
            4% and 28% more weights: within seed noise, so off by default (the lab note
            ``docs/notes/2026-11-30-plane.md``).
        positional: each Funcformer adds a learned function of its coordinate
            (:attr:`models.FuncformerConfig.positional`). Off, with the Fourier reader on periodic axes, no weight
            depends on where it acts, as the physics of Burgers or KdV does not: at equal steps 6% better on
            Burgers at ν = 0.01 and 5% on KdV (two seeds each), 14% on ν = 0.1, level on the trajectory map, but 12%
            worse at ν = 0.001 (the lab note ``docs/notes/2026-11-29-axial.md``); on by default, since a map that
            depends on where it acts (a forcing fixed in space) needs it.
        norms: the layer norms in each Funcformer layer (:attr:`models.FuncformerConfig.norms`). Off, each residual
            block is ``h + f(h)``, as an FNO's layers are: a norm at each point fixes the features' scale there,
            which a map whose output follows its input's amplitude (Burgers' speed is its amplitude) must then carry
            through the residual stream alone. Measured at equal steps (the lab note
            ``docs/notes/2026-11-30-no-norms.md``): 37% better on Poisson, 14% on log-normal Darcy, 7–14% at
            ν = 0.01 and on KdV (two seeds each), within 3% at ν = 0.1 and on the trajectory map, but 20% and 4% worse
            at ν = 0.001 with the position, 6% and 3% on piecewise Darcy (two seeds each) and 4% on Navier--Stokes.
            Without the norms depth pays, so off by default with six layers of 28 (``depth``), which wins back those
            rows. ``norms=true`` with ``depth=4, width=36, hidden=108`` is the earlier default (a checkpoint written
            before this field had them).
        frequencies: Fourier features per axis of a grid sample's coordinate.
        reader: how the samples are read onto the model's series: ``"attention"`` (cross-attention from learned
            queries, any layout) or ``"fourier"`` (every axis periodic: the samples' exact discrete Fourier
            coefficients, no weights spent on reading; the ``reader_*`` fields and ``frequencies`` then unused).
        reader_width, reader_heads: the grid reader's channels and heads (dividing them).
        reader_window: the grid reader's locality, as ``window`` between a query and a sample.
        channels: the functions the reader hands each Funcformer per point of its sequence, which the head mixes into
            the output channels; ``0`` (the default): as many as the output channels, at least 4, and in the axial
            form at least ``width`` (:func:`~.model.channels_for`; a checkpoint records the count). Fewer functions
            than outputs make every prediction a combination of that many functions of space (a rank bound): on
            Burgers' trajectory (16 states as channels) 4 functions cost 2.1 times against 16 at equal steps. In the
            axial form they are all the state that reaches the decoder from the plane's ``width``-wide state: on
            Navier--Stokes 28 (the width) was 9–11% better than 16 on two seeds. Elsewhere ``width`` is not the
            rule: on one axis 28 was 7% better on Burgers' trajectory map (17 before) and 3% on KdV, but 12% worse at
            ν = 0.1, 9% at 0.01 and 4% at 0.001 (4 before), over two seeds, and on Poisson's factored form 7% worse
            with 46% more weights (one seed). An axial checkpoint written before that recorded ``0`` is read as
            built, with as many functions as outputs, at least 4.
        eps: layer-norm epsilon.
        log_input: read ``log`` of the inputs (positive data spanning scales, such as a conductivity).
        homogeneous: build in ``u(c a) = c^d u(a)`` for ``c > 0`` with degree ``d = homogeneous`` (``0``: off;
            needs ``log_input``): the reader sees ``log a`` less its mean ``m`` over the domain and the
            output is multiplied by ``e^{d m}`` (Darcy: ``d = -1``).
        augment: train on batches moved by symmetries the operator commutes with (the user's claim):
            ``"flips"`` (each axis reflected), ``"square"`` (the square's eight symmetries, two like axes),
            ``"shifts"`` (translations along periodic axes), ``"none"``.
        smooth: weight ``λ`` of the smoothing penalty on the predicted series, per unit mean square of the data,
            applied only where some axis is bounded (:func:`~.task.smoothing`): uniform samples leave a Chebyshev
            series free between them (Runge), so a bounded axis needs it (chosen on Darcy), while equally spaced
            samples of a period determine a Fourier series exactly and the penalty would only damp steep fronts
            (3.3 times worse on a low-viscosity Burgers set); on a grid of periodic axes it is off whatever its
            value.
        loss: the training loss per sample: ``"squared"``, the squared relative L² error, or ``"relative"``, the
            relative L² error itself (the FNO's authors' loss). Measured at equal steps: relative 1.3 times better on
            Burgers at ν = 0.1, 3% on Darcy, 8% worse at ν = 0.01 and 23% worse on Poisson (one seed each), so not
            the default.
        optimiser: ``"muon"``: Muon on the Funcformers' hidden matrices (their attention's projections and MLPs)
            and Adam on every other weight, at one rate (:class:`training.muon.Muon`); ``"adam"``: Adam on every
            weight. Both on the one-cycle schedule, which moves Adam's ``β₁`` and holds Muon's momentum at 0.95.
            Measured at equal steps with each row's best setting (the lab note ``docs/notes/2026-12-01-muon.md``),
            Muon (its momentum moved with Adam's) was better than Adam on every row: 35–41% at ν = 0.001 (two
            seeds), 46% at ν = 0.01, 29% on the trajectory map, 30% on KdV, 26–49% at ν = 0.1, 36–51% on
            Navier--Stokes, 22% on Poisson, 31% on log-normal Darcy, 11% on piecewise Darcy, a step costing what
            Adam's does; its momentum held was 6–22% better again on the five 1D rows, Poisson and Navier--Stokes,
            level on Darcy. Its fit, not its reach, had held the model back: with Adam it fitted its
            training set less closely than the FNO and generalised better. A run written before this field resumes
            with Adam.
        grid_path: the width ``w`` of a pointwise path at the input grid's samples (``0``: off): the network's
            functions there and the input samples pass through an MLP of width ``w`` (a nonlinearity at the grid's
            resolution, as an FNO's pointwise path) whose output, fitted back onto the series by the layout's
            quadrature, is added before the head (:class:`models.operator.GridPath`). On, each input axis needs at
            least as many samples as the series has terms. Measured at equal steps with ``w = 64`` (1% more
            parameters): no better on Burgers at ν = 0.01, 10% worse at ν = 0.1 with the Fourier reader and the
            relative loss and 1.7–2 times worse with the defaults, so off by default.
        decoder: the width ``w`` of a pointwise decoder (``0``: off, the series head): the output at each point is
            an MLP of the ``channels`` functions' values there, not a combination of them
            (:class:`models.operator.PointDecoder`; the FNO's projection), so it is not bounded by the series' length
            where the solution is steeper than ``modes`` terms allow. ``-1`` (the default): ``64`` on a grid of
            periodic axes, off where an axis is bounded or the model is ``homogeneous``
            (:func:`~.model.decoder_for`). Measured at equal steps (the lab note
            ``docs/notes/2026-11-29-decoder.md``): 3 times better on Burgers at ν = 0.001 (its fronts), 1.5 times at
            ν = 0.01, 1.3 times on the trajectory map, equal on KdV and at ν = 0.1; 1.4 times worse on Poisson,
            whose smooth solutions the series holds exactly, so off on bounded axes. Not with ``homogeneous``; with it
            the smoothing penalty (bounded axes) acts on the functions it decodes.
        dtype: the model's float type.
    """

    modes: int = between(20, 2, MAX_MODES)
    width: int = between(28, 1, MAX_WIDTH)
    hidden: int = between(84, 1, MAX_HIDDEN)
    heads: int = between(4, 1, MAX_HEADS)
    depth: int = between(6, 1, MAX_LAYERS)
    attend_every: int = between(1, 1, MAX_LAYERS)
    activation: Activation = "gelu"
    window: float = between(40.0, 0.0, 1e4)
    convolution: bool = True
    axial: bool = False
    interleaved: bool = True
    plane: bool = False
    positional: bool = True
    norms: bool = False
    frequencies: int = between(4, 0, 64)
    reader: Reader = "attention"
    reader_width: int = between(32, 1, MAX_WIDTH)
    reader_heads: int = between(2, 1, MAX_HEADS)
    reader_window: float = between(160.0, 0.0, 1e4)
    channels: int = between(0, 0, 64)
    eps: float = between(1e-5, 1e-12, 1.0)
    log_input: bool = False
    homogeneous: float = between(0.0, -8.0, 8.0)
    augment: Augment = "none"
    lr: float = optimiser_field("lr", 1e-2)
    beta2: float = optimiser_field("beta2", 0.95)
    clip: float = optimiser_field("clip", 0.0)
    smooth: float = between(0.25, 0.0, 100.0)
    loss: Loss = "squared"
    optimiser: Optimiser_ = "muon"
    grid_path: int = between(0, 0, MAX_WIDTH)
    decoder: int = between(-1, -1, MAX_WIDTH)
    dtype: DType = "float32"

    def consistent(self) -> str | None:
        if self.reader_width % self.reader_heads:
            return (
                f"config fields reader_width={self.reader_width}, reader_heads={self.reader_heads}: the reader's heads "
                "must divide its channels"
            )
        if (self.window > 0 or self.reader_window > 0) and self.modes < 3:
            return (
                f"config fields modes={self.modes}, window={self.window}, reader_window={self.reader_window}: a window "
                "on (t - s)² needs series that hold t²; set modes >= 3, or both windows to 0"
            )
        if self.homogeneous != 0 and not self.log_input:
            return (
                f"config fields homogeneous={self.homogeneous}, log_input=false: the symmetry u(c a) = c^d u(a) is "
                "built on log inputs; set log_input=true, or homogeneous=0"
            )
        if self.homogeneous != 0 and self.decoder > 0:  # -1 (auto) resolves to 0 there
            return (
                f"config fields homogeneous={self.homogeneous}, decoder={self.decoder}: the scaling u(c a) = c^d u(a) "
                "does not pass through the decoder's MLP; set decoder=0, or homogeneous=0"
            )
        return None


document_bounds(Config)

PRESETS: dict[str, Config] = {
    "default": Config(),
    # Darcy flow's coefficient-to-solution map: read log a, u(c a) = u(a) / c built in, the square's symmetries
    # (on data with zero ends: --boundary zero); python -m examples.darcy trains it on generated data
    "darcy": Config(log_input=True, homogeneous=-1.0, augment="square"),
    # seconds: for tests and smoke runs. Clipped at norm 1 (the shared default, not this config's): in 150 steps of
    # batch 8 at the default peak rate the clip halves the error (an antiderivative on Chebyshev points: 0.17 and
    # 0.20 on two seeds, against 0.42 and 0.40 unclipped)
    "tiny": Config(
        clip=1.0,
        modes=8,
        width=24,
        hidden=48,
        heads=2,
        depth=1,
        reader_width=16,
        channels=2,
        frequencies=2,
        window=0.0,
        reader_window=0.0,
        steps=150,
        batch=8,
        eval_every=50,
        checkpoint_every=50,
    ),
}
