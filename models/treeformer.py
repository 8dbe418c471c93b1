"""The Treeformer: the generic Transformer with a batch of trees as its sequence structure.

Nothing here is new model code. :func:`~models.transformer.encoder` is
written against the ``Applicative``/``Counit`` protocols; given a field
``Tree x F`` (a batch of trees whose leaves hold feature vectors) every
operation is already defined:

* the linear maps act on the feature axis, with the tree axis as a batch axis
  (``fmap`` over an outer structure is free);
* self-attention ``softmax(q kᵀ) v`` contracts over the tree's leaves through
  the tree's counit: with ``NodeAlgebra.SUM`` each real leaf weighs one, with
  ``NodeAlgebra.MEAN`` a leaf at depth ``d`` weighs ``2^-d``; either way it
  lowers to one ``scaled_dot_product_attention`` call with the additive bias
  ``log w`` (``-inf`` at padding) -- :meth:`instances.Tree.log_measure`, derived for every structure.

What a tree model sees of the tree is therefore the leaf values and the
measure. To let it tell siblings from cousins, :func:`tree_features` appends
each leaf's root-to-leaf path (:meth:`instances.Tree.address`) to its token
features: the tree analogue of a positional encoding.

A tree may also be the *feature* structure (``S x Tree``): a fixed tree shared
by the batch, contracted through its measure (see the tests).
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

import torch
from torch import Tensor, nn

from applicative import Field, Linear, Structure, expect_field
from instances import Tree, Vector

from .transformer import EncoderStack, Transformer, encoder

Fe = TypeVar("Fe", bound=Structure)
D = TypeVar("D", bound=Structure)
S = TypeVar("S", bound=Structure)

__all__ = ["Readout", "tree_features", "treeformer"]


#: A ``depth``-layer encoder for fields ``Tree x features``: the generic :func:`~models.encoder`
#: itself -- a tree needs no model code of its own.
treeformer = encoder


def tree_features(
    tree: Tree, tokens: Tensor, vocab: int, levels: int, *, dtype: torch.dtype = torch.float32
) -> Field[Tree, Vector]:
    """Leaf features ``Tree x Vector(vocab + levels)``: one-hot tokens, then the leaf's path from the root.

    Args:
        tree: a batch of trees ``(*batch, N)``.
        tokens: ``(*batch, N)`` token ids at the leaves (anything at padding).
        vocab: number of token ids.
        levels: how many levels of the path to encode (``+1`` right, ``-1`` left, ``0`` below the leaf).
        dtype: the features' dtype (the model's).
    """
    onehot = nn.functional.one_hot(tokens.clamp(0, vocab - 1), vocab).to(dtype)
    path = tree.address(levels).to(dtype)
    return Field(torch.cat([onehot, path], -1), (tree, Vector(vocab + levels)))


class Readout(nn.Module, Generic[Fe, D]):
    """Classify a whole field ``S x F``: encode with a Transformer, read the first position, map to classes.

    The first position is the leftmost leaf of a tree (or the first token of a
    sequence): put the root's label there (the operator of an expression).
    The head takes the dtype and device of the body's parameters. A
    :class:`Transformer` body is kept without its unembedding (which a readout
    never uses, so it would get no gradient: data-parallel training needs
    every parameter used).
    """

    def __init__(self, body: Transformer[Fe, D] | EncoderStack[Fe, D], classes: int) -> None:
        super().__init__()
        self.body: EncoderStack[Fe, D] = EncoderStack.of(body) if isinstance(body, Transformer) else body
        like = next(body.parameters())
        self.head: Linear[D, Vector] = Linear(body.model, Vector(classes), dtype=like.dtype, device=like.device)

    def forward(self, x: Field[S, Fe]) -> Field[Vector]:
        """Logits ``(*batch, classes)`` on one axis ``Vector(classes)`` (``.tensor`` for a loss)."""
        expect_field("Readout", x)
        h = self.body.encode(x).tensor[..., 0, :]  # (*batch, d)
        return self.head(Field(h, (self.body.model,)))

    def __call__(self, x: Field[S, Fe]) -> Field[Vector]:
        return cast("Field[Vector]", super().__call__(x))
