r"""The Funcformer: the generic Transformer on Chebyshev series, mapping functions of two variables.

A value ``Field[X, Y]`` holds the Chebyshev coefficients of :math:`u(x, y) = \sum_{k,l} u_{kl} T_k(x) T_l(y)`:
the outer axis ``X`` plays the Transformer's *sequence* (a continuum of positions ``x``) and the inner
axis ``Y`` its *features* (a continuum of features ``y``) -- the design source's Part 5. The model is
:class:`models.Transformer` unchanged::

    funcformer = mul_mmt unembed . layers . (+ position) . mul_mmt embed

* ``embed``/``unembed`` are integral operators :math:`\int E(d, y)\,u(x, y)\,dy` (contractions over
  ``Y`` with its metric :math:`W_{kl} = \int T_k T_l`), into a model structure ``D`` that is either a
  Chebyshev series (a continuum of model features) or a :class:`~instances.Vector` of channels;
* attention contracts over ``X`` with its metric and normalises scores along ``X`` with any
  :class:`~applicative.Normalise` -- the faithful continuous softmax
  :math:`e^{s(t)}/\int e^{s}` (:class:`~applicative.ScaledSoftmax` on a Chebyshev axis) or the design
  source's row-wise softmax of the coefficients;
* the MLP's activation, the layer norms and the attention of each query are ``fmap``-ed over ``X``
  through its point values (the design source's ReLU).

``position`` is a learned function of ``x`` per model feature, :math:`p(x, d)`, added after the
embedding: attention has no other way to know *where* a coefficient row sits, and an operator such as
:math:`\Delta^{-1}` needs it (FNO appends the grid coordinates for the same reason; Li et al. 2020).

There is no attention or MLP code here: only the choice of structures. The same class is the
Funcformer over a 2D *domain*: with ``sequence = Pairs(X, Y)`` (:class:`~applicative.Pairs`, one axis whose
positions are the points ``(x, y)`` of the square) and ``features`` a :class:`~instances.Vector` of channels,
attention integrates over the whole square -- the shape of the field's Transformer operators (Galerkin
Transformer, Transolver) -- and the input is ``Field[Pairs(X, Y), Channels]``::

    Funcformer(Pairs(X(24), Y(24)), Vector(1), Vector(64), Vector(128), FuncformerConfig(normalise=...))

With :class:`~applicative.LinearAttention` the attention is the Galerkin form ``q(x) ∫ k(t) v(t)ᵀ dt``, linear
in the number of positions; its rank along the sequence is at most the key size per head (times the heads),
so a linear operator on ``n`` positions needs keys of ``n`` per head (``FuncformerConfig.key``).

For a *linear* operator (Poisson's :math:`\Delta^{-1}`), :class:`SeparableLinear` is the linear path a
model adds beside the Transformer: :math:`u \mapsto \sum_{r<R} A_r u B_r^T` on the coefficient matrix, a
sum of ``R`` products of integral operators along ``x`` and along ``y`` (exactly linear, hence
scale-equivariant), :func:`unit_scaled` makes any operator positively homogeneous of degree one and
:func:`odd_part` makes it odd (``op(-u) = -op(u)``); together they give ``op(c u) = c op(u)`` for every real ``c``,
the symmetries of any linear operator, without mixing a single position.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar, TypeVarTuple, cast

import torch
from torch import Tensor, nn

from applicative import Capability, Field, Normalise, Structure, StructureError, add, expect_field, kernels, mul_mmt
from instances import Chebyshev, Fourier, Vector
from instances.fourier import multiply

from ._drawing import Gadget, Parameter, Step, join, linear_step
from ._inputs import model_input
from .transformer import EncoderLayer, Transformer, check_count

X = TypeVar("X", bound=Structure)
Y = TypeVar("Y", bound=Structure)
D = TypeVar("D", bound=Structure)
F = TypeVar("F", bound=Structure)
I = TypeVarTuple("I")


@dataclass(frozen=True)
class FuncformerConfig:
    """Hyper-parameters of a :class:`Funcformer` (the structures are passed separately).

    Attributes:
        heads: attention heads (the model structure must split into them, or ``heads == 1``).
        depth: encoder layers.
        normalise: attention normalisation; ``None`` is the scaled softmax against ``X``'s measure.
        norm_first: pre-norm residual blocks (the stable choice for deep stacks).
        norms: the layer norms of each residual block. Off, each block is ``h + f(h)`` with nothing fixing the
            features' scale at a point: what a map whose output follows its input's amplitude (Burgers' speed is
            its amplitude) wants, as an FNO's layers have no norm (``norm_first`` then changes nothing).
        final_norm: layer norm before the unembedding. Off by default: it fixes the scale of the
            features at each point ``x``, which a linear operator's output must be free to follow.
        eps: layer-norm epsilon (a large value, e.g. 100, makes the norms nearly linear).
        positional: add a learned function of ``x`` after the embedding.
        activation: the MLP's pointwise activation.
        key, value: the per-head query/key and value structures (default: the model structure split into
            ``heads``). Attention's rank along the sequence is at most the key size per head, so a linear
            operator on ``n`` positions wants keys of ``n`` per head.
        window: locality along the sequence: head ``h`` of ``heads`` adds ``-β_h (t - s)²`` to its score of a key
            at ``s`` for a query at ``t``, ``β_h = window / 4^(heads-1-h)`` (:func:`window_slopes`,
            :func:`gaussian_window`); ``0``: none. Needs a sequence with coordinates that holds ``t²`` (a
            Chebyshev series of at least 3 terms) and the faithful softmax. A steep window makes float32
            probabilities below ``1.2e-38`` (subnormal), which x86 CPUs compute many times slower: flush them to
            zero on the CPU (``training.fit`` does; ``training.flush_denormals`` for a loop of one's own).
        convolution: each layer adds a learned circular convolution of its input along the sequence,
            ``h ↦ layer(h) + κ_l ⋆ h`` with ``κ_l(t, d)`` a function of the sequence per model channel, stored as its
            Fourier multiplier (:func:`instances.fourier.multiply`: each frequency scaled and turned, per channel;
            zero at the start, so the model starts as without it). Attention mixes positions by a kernel it
            computes from the features; a convolution is the shift-equivariant linear map a PDE's solution operator
            is built on (the heat kernel, a wave's propagator), learned directly, frequency by frequency, as an
            FNO's spectral layer learns it. The multiplier, not ``κ``'s coefficients, is the weight, so that each
            weight moves the output at the scale the others do (Adam's steps are per weight). Needs a periodic
            sequence (a :class:`~instances.Fourier` series).
        attend_every: layers ``0, k, 2k, …`` attend (``k = attend_every``); the others are their MLP block alone
            (with the convolution, when on), mixing no positions but through the convolution
            (:class:`~models.transformer.EncoderLayer` with ``attend=False``). ``1``: every layer attends. The
            attention is most of a layer's time on short sequences, so a larger ``k`` buys depth at the same weights
            and little more time: sixteen layers of which four attend against six that all do.
    """

    heads: int = 4
    depth: int = 2
    normalise: Normalise | None = None
    norm_first: bool = True
    norms: bool = True
    final_norm: bool = False
    eps: float = 1e-5
    positional: bool = True
    activation: Callable[[Tensor], Tensor] = field(default=torch.relu)
    key: Structure | None = None
    value: Structure | None = None
    window: float = 0.0
    convolution: bool = False
    attend_every: int = 1


def window_slopes(window: float, heads: int) -> list[float]:
    """``β_h = window / 4^(H-1-h)`` for head ``h`` of ``H``: the last head the narrowest, each other 4x wider
    (fixed, as ALiBi fixes its slopes); none for ``window = 0``."""
    return [window / 4.0**j for j in reversed(range(heads))] if window > 0 else []


def window_queries(betas: Tensor, queries: Structure) -> Tensor:
    """``(H, |queries|, 2)``: the query side of :func:`gaussian_window` stored on ``queries`` (its coordinates ``t``):
    ``(2β_h t, β_h)``, or ``(2β_h/π²)(cos πt, sin πt)`` on a :attr:`~applicative.Structure.periodic` one."""
    t = queries.coordinates(betas.dtype, betas.device)
    if queries.periodic:
        features = torch.stack([torch.cos(math.pi * t), torch.sin(math.pi * t)], -1) * (2 / math.pi**2)
    else:
        features = torch.stack([2 * t, torch.ones_like(t)], -1)
    return kernels.stored(queries, betas[:, None, None] * features, -2)


def key_features(s: Tensor, periodic: bool) -> Tensor:
    """The keys' side of :func:`gaussian_window` at coordinates ``s`` ``(m,)``: ``(s, -s²)``, or ``(cos πs, sin πs)``
    on a periodic structure; ``(m, 2)``."""
    if periodic:
        return torch.stack([torch.cos(math.pi * s), torch.sin(math.pi * s)], -1)
    return torch.stack([s, -s * s], -1)


def window_keys(keys: Structure, dtype: torch.dtype, device: torch.device | str | None = None) -> Tensor:
    """``(1, |keys|, 2)``: :func:`key_features` stored on ``keys`` (its coordinates ``s``), the keys' side of
    :func:`gaussian_window`."""
    return kernels.stored(keys, key_features(keys.coordinates(dtype, device), keys.periodic), -2)[None]


def gaussian_window(betas: Tensor, queries: Structure, keys: Structure) -> tuple[Tensor, Tensor]:
    r"""Head ``h``'s Gaussian window :math:`-\beta_h (t - s)^2` between a query at ``t`` on ``queries`` and a key at
    ``s`` on ``keys``, as position features ``(p, r)`` for :meth:`~applicative.MultiHeadAttention.forward`.

    :math:`-\beta (t - s)^2 = (2\beta t, \beta) \cdot (s, -s^2) - \beta t^2`, and the last term is the same for every
    key, so a softmax over the keys never sees it. Both sides are stored like the structures' values (their
    capability :meth:`~applicative.Structure.coordinates` gives ``t`` and ``s``): ``p`` ``(H, |queries|, 2)``
    (:func:`window_queries`), ``r`` ``(1, |keys|, 2)`` (:func:`window_keys`); on a Chebyshev series they are the
    exact series ``(2β_h T_1, β_h T_0)`` and ``(T_1, -(T_0 + T_2) / 2)``. Divide ``betas`` by the attention's
    score scale first: the features join the scores before it.

    On a :attr:`~applicative.Structure.periodic` pair (a circle of period 2) the distance is taken round the circle:
    the window is the von Mises form :math:`-\beta \frac{2}{\pi^2}(1 - \cos \pi (t - s))`, equal to
    :math:`-\beta (t - s)^2` to fourth order near the query, and
    :math:`\cos \pi(t - s) = (\cos \pi t, \sin \pi t) \cdot (\cos \pi s, \sin \pi s)` (a Fourier series of one
    frequency holds both sides exactly).
    """
    if queries.periodic != keys.periodic:
        raise StructureError(
            f"gaussian_window: {queries!r} and {keys!r} disagree on periodicity (capability `periodic`): a distance "
            "between a point on a circle and one on an interval means nothing; use structures of one kind"
        )
    return window_queries(betas, queries), window_keys(keys, betas.dtype, betas.device)


class Funcformer(nn.Module, Generic[X, Y, D]):
    """``Field[X, Y] -> Field[X, Y]``: the generic Transformer with sequence ``X`` and features ``Y``.

    Args:
        sequence: the structure of the first argument ``x`` (a Chebyshev series).
        features: the structure of the second argument ``y`` (a Chebyshev series).
        model: the model structure ``D`` -- a Chebyshev series or a ``Vector`` of channels.
        hidden: the MLP's hidden structure.
        config: the remaining hyper-parameters.
    """

    window_p: Tensor | None
    window_r: Tensor | None

    def __init__(
        self,
        sequence: X,
        features: Y,
        model: D,
        hidden: Structure,
        config: FuncformerConfig = FuncformerConfig(),
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        check_count("Funcformer", "config.attend_every", config.attend_every, 1, "1: every layer attends")
        self.sequence, self.features, self.model, self.config = sequence, features, model, config
        kw = {"dtype": dtype, "device": device}
        layers = [
            EncoderLayer(
                model,
                hidden,
                config.heads,
                normalise=config.normalise,
                norm_first=config.norm_first,
                norms=config.norms,
                activation=config.activation,
                eps=config.eps,
                key=config.key,
                value=config.value,
                attend=i % config.attend_every == 0,
                **kw,  # type: ignore[arg-type]
            )
            for i in range(config.depth)
        ]
        self.transformer: Transformer[Y, D] = Transformer(features, model, layers, config.final_norm, **kw)  # type: ignore[arg-type]
        self.position = (
            nn.Parameter(torch.randn(sequence.size, model.size, dtype=dtype, device=device).mul_(0.1))
            if config.positional
            else None
        )
        if config.convolution and not isinstance(sequence, Fourier):  # coefficients that multiply() reads
            raise StructureError(
                f"FuncformerConfig.convolution: a circular convolution along {sequence!r}, which is not a Fourier "
                "series; use a Fourier sequence or convolution=False"
            )
        self.convolutions = (
            nn.Parameter(torch.zeros(config.depth, sequence.size, model.size, dtype=dtype, device=device))
            if config.convolution
            else None
        )
        # layer 0 attends whatever attend_every is
        p, r = _window_features(sequence, config, layers[0].attention().normalise, dtype, device)
        self.register_buffer("window_p", p, persistent=False)  # from the config, not learned
        self.register_buffer("window_r", r, persistent=False)

    @property
    def position_field(self) -> Field[X, D] | None:
        """The learned positional function ``p(x, d)``, or ``None``."""
        return None if self.position is None else Field(self.position, (self.sequence, self.model))

    def forward(self, u: Field[X, Y]) -> Field[X, Y]:
        """``u`` ``(..., |X|, |Y|)`` coefficients -> the same structures: :meth:`lift`, each :meth:`layer`,
        :meth:`lower`."""
        h = self.lift(u)
        for i in range(len(self.transformer.layers)):
            h = self.layer(i, h)
        return self.lower(h)

    def lift(self, u: Field[X, Y]) -> Field[X, D]:
        """The layers' input: ``u`` embedded, plus the learned position."""
        expect_field("Funcformer", u)
        t = self.transformer
        u = model_input("Funcformer", "u", u, t.embed.weight.dtype)
        h: Field[X, D] = mul_mmt(t.embed.weight_field, u)
        p = self.position_field
        if p is not None:
            h = add(h, Field(p.tensor.expand_as(h.tensor), p.axes))
        return h

    def layer(self, i: int, h: Field[X, D]) -> Field[X, D]:
        """Layer ``i`` on the state ``h`` (its window, and its convolution along the sequence)."""
        layer = self.transformer.layers[i]
        out: Field[X, D] = layer(h) if self.window_p is None else layer(h, (self.window_p, self.window_r))
        if self.convolutions is not None:  # the layer's input convolved along the sequence (dim -2), per channel
            out = Field(out.tensor + multiply(self.convolutions[i], h.tensor, dim=-2), out.axes)
        return out

    def lower(self, h: Field[X, D]) -> Field[X, Y]:
        """The layers' output back to the features: the final norm, if any, and the unembedding."""
        t = self.transformer
        if t.norm is not None:
            h = t.norm(h)
        return mul_mmt(t.unembed.weight_field, h)

    def __call__(self, u: Field[X, Y]) -> Field[X, Y]:
        return cast("Field[X, Y]", super().__call__(u))

    def tube_steps(self, name: str, sequence: Structure | None, memory: Structure | None) -> Iterator[Step]:
        """The tube diagram's steps on its own sequence: embedding, learned position, layers, unembedding."""
        t, s, d = self.transformer, self.sequence, self.model
        inner = join(name, "transformer")
        yield linear_step(join(inner, "embed"), t.embed, (s,), "embed")
        if self.position is not None:
            p = Parameter(join(name, "position"), (s, d))
            pants = (Gadget(s, "zip_with add"), Gadget(d, "zip_with add"))
            yield Step(name, "add", ((s, d),), (s, d), (p,), pants, label="+ position")
        kernel = Parameter(join(name, "convolutions"), (s, d))  # one (s, d) slice per layer
        pants = (Gadget(s, "multiply"), Gadget(d, "zip_with mul"))

        def convolution(i: int) -> Iterator[Step]:
            yield Step(name, "add", ((s, d), (s, d)), (s, d), (kernel,), pants, label=f"+ κ_{i} ⋆ h")

        yield from t.body_steps(inner, s, None if self.convolutions is None else convolution)


def _window_features(
    sequence: Structure,
    config: FuncformerConfig,
    normalise: Normalise,
    dtype: torch.dtype | None,
    device: torch.device | str | None,
) -> tuple[Tensor | None, Tensor | None]:
    """:func:`gaussian_window` for ``config.window``, scaled for ``normalise``; ``(None, None)`` without one."""
    if config.window <= 0:
        return None, None
    if Capability.EXP not in normalise.needs or normalise.lowering is None:  # e^score over the keys' points
        raise StructureError(
            f"FuncformerConfig.window={config.window}: the window is a weight e^(-β(t-s)²) on a softmax over the "
            f"sequence's points, got {normalise!r}; use normalise=ScaledSoftmax(...) (or None) or window=0"
        )
    target = device if device is not None else torch.empty(0).device  # the default device (meta, when counting)
    with torch.device("cpu"):  # fixed features, checked by value: computed where values exist
        betas = torch.tensor(window_slopes(config.window, config.heads), dtype=torch.float64)
        try:
            p, r = gaussian_window(betas / normalise.scale, sequence, sequence)
        except StructureError as e:
            raise StructureError(f"FuncformerConfig.window={config.window}: {e}; or use window=0") from None
        grid = kernels.grid(sequence)
        s = sequence.coordinates(torch.float64, points=grid)  # exact at the points products are taken on
        want = key_features(s, sequence.periodic)
        if not torch.allclose(kernels.positions(sequence, r, -2, grid)[0], want, atol=1e-12):
            held = "cos πt and sin πt" if sequence.periodic else "t²"
            raise StructureError(
                f"FuncformerConfig.window={config.window}: {sequence!r} cannot hold {held} exactly, so the window "
                "would not be a Gaussian; use a sequence that can (a Chebyshev series of at least 3 terms, a Fourier "
                "series of at least 3) or window=0"
            )
    return p.to(dtype=dtype, device=target), r.to(dtype=dtype, device=target)


class SeparableLinear(nn.Module):
    r"""``u ↦ Σ_{r<R} A_r u B_rᵀ``: coefficients ``(..., m, m')`` -> ``(..., p, p')``, exactly linear.

    Each term is an integral operator along each axis (a coefficient-space matrix is the operator with
    kernel ``A W⁻¹``); ``R`` terms represent any operator whose rearranged matrix has rank ``≤ R``
    (for ``Δ⁻¹`` on the square its singular values fall by about 5x per term). Parameters ``a``
    ``(R, p, m)`` and ``b`` ``(R, p', m')``.
    """

    def __init__(
        self,
        inp: tuple[int, int],
        out: tuple[int, int],
        rank: int,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if rank < 1 or min(*inp, *out) < 1:
            raise ValueError(f"SeparableLinear needs rank >= 1 and positive sizes, got rank={rank}, {inp} -> {out}")
        self.inp, self.out, self.rank = inp, out, rank
        kw = {"dtype": dtype, "device": device}
        self.a = nn.Parameter(torch.randn(rank, out[0], inp[0], **kw).div_(inp[0]))  # type: ignore[arg-type]
        self.b = nn.Parameter(torch.randn(rank, out[1], inp[1], **kw).div_(inp[1]))  # type: ignore[arg-type]

    def forward(self, u: Tensor) -> Tensor:
        if u.shape[-2:] != self.inp:
            raise ValueError(
                f"SeparableLinear: expected coefficients (..., {self.inp[0]}, {self.inp[1]}), got {tuple(u.shape)}"
            )
        return torch.einsum("rik,...kl,rjl->...ij", self.a, u, self.b)


def unit_scaled(op: Callable[[Tensor], Tensor], u: Tensor, norm: Tensor) -> Tensor:
    """``‖u‖ · op(u / ‖u‖)``: positively homogeneous of degree one for any ``op`` (``0`` for ``u = 0``).

    ``norm`` ``(...)`` holds ``‖u‖`` per example (any norm); ``u`` is ``(..., m, m')``.
    """
    n = norm[..., None, None]
    return op(u / torch.where(n > 0, n, torch.ones_like(n))) * n


def odd_part(op: Callable[[Tensor], Tensor], u: Tensor) -> Tensor:
    """``(op(u) - op(-u)) / 2``: the odd part of ``op``, ``odd_part(op, -u) = -odd_part(op, u)`` for any ``op``.

    It removes every even-order term of ``op`` (a constant, the quadratic terms a Transformer's attention forms
    from ``q``, ``k`` and ``v`` that all depend on ``u``); the odd terms, the linear ones among them, stay. One
    call of ``op`` on the batch ``[u, -u]`` (twice the batch), ``u`` ``(batch, ...)``.
    """
    both = op(torch.cat([u, -u]))
    plus, minus = both.chunk(2)
    return (plus - minus) / 2


def funcformer(
    modes: int,
    model: D,
    hidden: Structure | None = None,
    config: FuncformerConfig = FuncformerConfig(),
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Funcformer[Chebyshev, Chebyshev, D]:
    """A Funcformer on ``Chebyshev(modes) x Chebyshev(modes)`` functions with model structure ``model``.

    ``hidden`` defaults to ``Vector(2 * model.size)``. Declare nominal axes
    (``class X(Chebyshev): size = 16``) and call :class:`Funcformer` to have mypy tell ``x`` from ``y``.
    """
    s = Chebyshev(modes)
    return Funcformer(
        s, s, model, hidden if hidden is not None else Vector(2 * model.size), config, dtype=dtype, device=device
    )
