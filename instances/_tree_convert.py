"""Conversions between binary trees written by hand and their leaf-depth sequences.

A tree is written as nested 2-tuples -- ``((a, b), c)`` -- where anything that
is not a tuple is a leaf, or as an s-expression ``"((a b) c)"`` where every
parenthesised list has exactly two items. Stored, a tree is its leaves left to
right together with their depths (``[2, 2, 1]`` for ``((a, b), c)``); the
leaf-depth sequence determines the tree, and :func:`build` rebuilds it with a
stack (a leaf is pushed; while the top two entries have equal depth they are
combined into their parent).

All walks are iterative (explicit stacks), so arbitrarily deep input is
rejected with an error instead of exhausting Python's recursion limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TypeAlias, TypeVar, Union

from applicative import StructureError
from applicative.tensors import summary

L = TypeVar("L")

#: a binary tree written as nested 2-tuples; anything else is a leaf
Nested: TypeAlias = Union[L, tuple["Nested[L]", "Nested[L]"]]  # noqa: UP007


def flatten(tree: Nested[L], max_depth: int) -> tuple[list[L], list[int]]:
    """The leaves of ``tree`` left to right and their depths."""
    leaves: list[L] = []
    depths: list[int] = []
    stack: list[tuple[object, int]] = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, tuple):
            if len(node) != 2:
                raise StructureError(
                    f"Tree: a node must be a 2-tuple (left, right), got a {len(node)}-tuple {summary(node)}"
                )
            if d >= max_depth:
                raise StructureError(
                    f"Tree: deeper than the maximum depth {max_depth} (a leaf below {summary(node, 60)})"
                )
            stack.append((node[1], d + 1))
            stack.append((node[0], d + 1))
        else:
            leaves.append(node)  # type: ignore[arg-type]
            depths.append(d)
    return leaves, depths


def flatten_all(trees: Sequence[Nested[L]], max_depth: int) -> tuple[list[list[L]], list[list[int]]]:
    """:func:`flatten` for each tree of a non-empty batch."""
    _expect_list("Tree.from_nested", "trees", trees, tuple_is_one=True)
    if len(trees) == 0:
        raise StructureError("Tree.from_nested: pass a non-empty list of trees, got an empty one")
    out = [flatten(t, max_depth) for t in trees]
    return [o[0] for o in out], [o[1] for o in out]


def _article(name: str) -> str:
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _expect_list(op: str, what: str, value: object, *, tuple_is_one: bool) -> None:
    """Raise unless ``value`` is a list (a sequence) of items rather than a single item.

    A string is one item; so is a tuple when ``tuple_is_one`` (a nested tuple is one tree).
    """
    single = (str, bytes, tuple) if tuple_is_one else (str, bytes)
    if isinstance(value, Sequence) and not isinstance(value, single):
        return
    kind = _article(type(value).__name__)
    if isinstance(value, tuple):
        kind += " (a tuple is read as one tree)"
    shown = json.dumps(value) if isinstance(value, str) and len(value) <= 60 else summary(value, 60)
    raise StructureError(f"{op}: expected a list of {what}, got {kind}; wrap it: {op}([{shown}])")


def parse_all(texts: Sequence[str]) -> list[Nested[str]]:
    """:func:`parse_sexp` for each s-expression of a list (a bare string is refused, not read by character)."""
    _expect_list("Tree.from_sexp", "s-expressions", texts, tuple_is_one=False)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise StructureError(
                f"Tree.from_sexp: s-expression {i} is {_article(type(t).__name__)} {summary(t, 60)}, not a str; "
                'pass strings such as "((a b) c)", or nested tuples to Tree.from_nested'
            )
    return [parse_sexp(t) for t in texts]


def build(depths: Sequence[int], leaves: Sequence[L]) -> Nested[L]:
    """The tree with these leaf depths holding ``leaves`` (inverse of :func:`flatten`)."""
    if len(depths) != len(leaves) or not depths:
        raise StructureError(f"Tree: {len(leaves)} leaf values for a tree with {len(depths)} leaves")
    stack: list[tuple[int, Nested[L]]] = []
    for d, v in zip(depths, leaves, strict=True):
        node: Nested[L] = v
        while stack and stack[-1][0] == d:
            node = (stack.pop()[1], node)
            d -= 1
        stack.append((d, node))
    if len(stack) != 1 or stack[0][0] != 0:
        raise StructureError(f"Tree: {list(depths)} are not the leaf depths of a binary tree")
    return stack[0][1]


_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_sexp(text: str) -> Nested[str]:
    """``"((a b) c)"`` -> ``(("a", "b"), "c")``; a bare atom is a single leaf."""
    stack: list[list[Nested[str]]] = [[]]
    for tok in _TOKEN.findall(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise StructureError(f"s-expression {summary(text)}: unbalanced ')'")
            items = stack.pop()
            if len(items) != 2:
                raise StructureError(
                    f"s-expression {summary(text)}: every list must have exactly two items, got {len(items)}"
                )
            stack[-1].append((items[0], items[1]))
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise StructureError(f"s-expression {summary(text)}: missing ')'")
    if len(stack[0]) != 1:
        raise StructureError(f"s-expression {summary(text)}: expected one tree, got {len(stack[0])} items")
    return stack[0][0]


def to_sexp(tree: Nested[object]) -> str:
    """``(("a", "b"), "c")`` -> ``"((a b) c)"`` (leaves printed with ``str``)."""
    out: list[str] = []
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str) and node in ("(", ")", " "):
            out.append(node)
        elif isinstance(node, tuple):
            stack.extend([")", node[1], " ", node[0], "("])
        else:
            out.append(_atom(node))
    return "".join(out)


def _atom(leaf: object) -> str:
    s = str(leaf)
    if not s or _TOKEN.fullmatch(s) is None or s in ("(", ")"):
        raise StructureError(f"to_sexp: leaf {summary(leaf)} does not print as an atom (no spaces or parentheses)")
    return s


def pretty(tree: Nested[object]) -> str:
    """A drawing of the tree, one node per line::

    ┬
    ├─┬
    │ ├─ a
    │ └─ b
    └─ c
    """
    lines: list[str] = []
    stack: list[tuple[object, str, str]] = [(tree, "", "")]
    while stack:
        node, lead, prefix = stack.pop()
        if isinstance(node, tuple):
            lines.append(lead + "┬")
            stack.append((node[1], prefix + "└─", prefix + "  "))
            stack.append((node[0], prefix + "├─", prefix + "│ "))
        else:
            lines.append(lead + (" " if lead else "") + str(node))
    return "\n".join(lines)
