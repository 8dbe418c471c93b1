"""A griffe extension: the docstrings' Sphinx markup rendered by the MkDocs site (no source file edited).

The docstrings use reStructuredText habits; mkdocstrings renders Markdown. Before a docstring is parsed,
this extension rewrites, in place:

* the roles ``:class:``, ``:meth:``, ``:func:``, ``:attr:``, ``:mod:``, ``:data:``, ``:exc:``, ``:obj:``
  (``~`` for the last component, ``title <target>``, relative ``.name``) into autorefs cross-references
  ``[`C`][a.b.C]``, the target resolved with griffe in the docstring's own scope (what names it imports,
  its class, its module) and linked where the reference documents it (:func:`homes`); a target in
  another library (``torch.Tensor``, ``ValueError``) becomes a code span; a target that names nothing in
  the reference (a renamed method, a private helper, a name nothing imports) is a warning, which fails the
  strict build, wherever the site shows the docstring;
* ``:math:`...``` and ``.. math::`` blocks into MathML (``latex2mathml``, the ``docs`` extra), which a
  browser renders offline, with no script; without ``latex2mathml`` they stay readable code;
* a class's undocumented instance attributes (``self.embed = ...`` in ``__init__``) left out;
* in ``__all__`` order (the reference's), the law checker's ``*Arbitrary`` helpers after the structures;
* ``text::`` before a literal block into ``text:`` (the indented block is a code block already), a
  section title underlined with ``---`` or ``===`` into a bold line, and a bullet list that follows its
  paragraph without a blank line into a list.

Double-backtick literals need nothing: Markdown reads them as code spans.
"""

from __future__ import annotations

import builtins
import html
import re
import sys
from typing import Any

import griffe

#: our packages: a target outside them is never linked (no inventory of torch is loaded; the site is offline)
_OURS = ("applicative", "instances", "models", "operators", "training")
#: the libraries a docstring may name without importing them (shown as code)
_LIBRARIES = ("torch", "numpy", "np", "scipy", "hypothesis", "torch_geometric", "h5py", "neuralop", "safetensors")
_ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|mod|data|exc|obj):`([^`]+)`")
_MATH = re.compile(r":math:`([^`]+)`")
_LIST = re.compile(r"^(\s*)([*+-]|\d+[.)])\s+\S")
_UNDERLINE = re.compile(r"^\s*([-=~^])\1{2,}\s*$")


def _mathml(latex: str, display: str) -> str | None:
    try:
        from latex2mathml.converter import convert
    except ImportError:  # the docs extra not installed: readable code instead
        return None
    try:
        out = str(convert(latex.strip(), display=display))
    except Exception:  # latex2mathml rejects a command: keep the source readable
        return None
    # Markdown must not read the MathML's text as emphasis, links or code: every character that is not a
    # letter or a digit becomes a numeric entity (after decoding the entities latex2mathml wrote)
    return re.sub(r">([^<]*)<", lambda m: ">" + _inert(html.unescape(m.group(1))) + "<", out)


def _inert(text: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else f"&#{ord(c)};" for c in text)


def _inline_math(latex: str) -> str:
    out = _mathml(latex, "inline")
    if out is None:
        return f"`{latex}`"
    # in a span: Python-Markdown takes a line that starts with <math> (a block-level tag) for raw HTML
    return f'<span class="math">{out}</span>'


def _display_math(latex: str, indent: str) -> list[str]:
    out = _mathml(latex, "block")
    if out is None:
        return ["", *(f"{indent}    {line}" for line in latex.strip().splitlines()), ""]
    return ["", f'{indent}<div class="math">{out}</div>', ""]


class SphinxMarkup(griffe.Extension):
    """Rewrite every docstring of a loaded package into the Markdown the site renders."""

    def __init__(self) -> None:
        super().__init__()
        self.unresolved: set[str] = set()  # "where: target" of each role of ours shown as code, not linked
        self.stale: list[str] = []  # the warnings: those of them in a docstring the site shows
        self.linked = 0  # roles rendered as links
        self._pending: list[griffe.Module] = []
        self._loading = False
        self._homes: dict[str, str] | None = None
        self._dropped: set[str] = set()  # the instance attributes left out: a role naming one links to its class

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        # a docstring may name any of our packages: load them all first (each ::: loads only its own),
        # then rewrite every package's docstrings
        self._pending.append(pkg)
        if self._loading:
            return
        self._loading = True
        try:
            for name in _OURS:
                if name not in loader.modules_collection:
                    loader.load(name)
        finally:
            self._loading = False
        packages, self._pending = self._pending, []
        objects = [obj for package in packages for obj in _walk(package)]
        # `self.x = ...` in a method, undocumented: an implementation detail (a module's submodules, weights) or
        # a dataclass field its class's Attributes section documents; not a heading of its own. Left out after
        # the docstrings are rewritten, so that a role naming one still resolves (to its class)
        dropped = [
            (obj, name)
            for obj in objects
            if isinstance(obj, griffe.Class)
            for name, member in obj.members.items()
            if _undocumented_instance_attribute(member)
        ]
        self._dropped |= {f"{obj.path}.{name}" for obj, name in dropped}
        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = self.convert(obj.docstring.value, obj, loader)
            if isinstance(obj, griffe.Module) and obj.exports:
                # ``members_order: __all__``: what a user builds on first, the law checker's helpers last
                obj.exports = sorted(obj.exports, key=lambda name: _helper(str(name)))
        for obj, name in dropped:
            del obj.members[name]

    def convert(self, text: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
        """``text`` (one docstring of ``obj``) with its Sphinx markup in Markdown."""
        out: list[str] = []
        prose: list[str] = []  # consecutive lines of text: a role may wrap onto the next line

        def flush() -> None:
            chunk = "\n".join(prose)
            chunk = _MATH.sub(lambda m: _inline_math(" ".join(m.group(1).split())), chunk)
            chunk = _ROLE.sub(lambda m: self._role(m.group(1), " ".join(m.group(2).split()), obj, loader), chunk)
            out.extend(chunk.split("\n") if prose else [])
            prose.clear()

        for line, code in _blocks(text.splitlines()):
            if code:
                flush()
                out.append(line)
            else:
                prose.append(line)
        flush()
        return "\n".join(out)

    def _role(self, kind: str, text: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
        titled = re.fullmatch(r"(.*?)\s*<(.+)>", text)
        title, target = (titled.group(1), titled.group(2)) if titled else (None, text)
        short = target.startswith("~")
        target = target.lstrip("~!").removesuffix("()")
        shown = title or (target.rsplit(".", 1)[-1] if short else target.lstrip("."))
        full = _resolve(target, obj)
        if full in self._dropped:  # a dataclass field: its class's Attributes section documents it
            full = full.rpartition(".")[0]
        path = self._rendered(full, loader) if full is not None and full.split(".")[0] in _OURS else None
        if path is not None:
            self.linked += 1
            return f"[`{shown}`][{path}]"
        if (full is None and not _foreign(target)) or (full is not None and full.split(".")[0] in _OURS):
            self.unresolved.add(f"{obj.path}: {target}")
            if self._rendered(obj.path, loader) is not None:  # a docstring the site shows: a stale name fails
                where = f"{obj.relative_filepath}:{obj.lineno}" if obj.lineno else str(obj.relative_filepath)
                self.stale.append(
                    f"{where}: {obj.path}'s docstring cites :{kind}:`{text}`, which names nothing in the reference "
                    "(a renamed or private object?): name a public object, or write it as ``code``"
                )
                griffe.logger.warning(self.stale[-1])
        return f"`{shown}`"

    def _rendered(self, path: str, loader: griffe.GriffeLoader) -> str | None:
        """Where the reference documents ``path``: the home of its object, or of the class it is a member of."""
        found = _lookup(path, loader)
        if found is None:
            return None
        try:
            target = found.final_target if isinstance(found, griffe.Alias) else found
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
        if target.is_module:
            return None if any(_private(part) for part in target.path.split(".")) else target.path
        if self._homes is None:
            self._homes = homes([loader.modules_collection[n] for n in _OURS if n in loader.modules_collection])
        head, rest = target.path, ""
        while head and head not in self._homes:
            head, _, last = head.rpartition(".")
            rest = f".{last}{rest}"
        if not head or any(_private(part) for part in rest.split(".")[1:]):
            return None
        return self._homes[head] + rest


def _undocumented_instance_attribute(member: griffe.Object | griffe.Alias) -> bool:
    return (
        not member.is_alias
        and member.is_attribute
        and "instance-attribute" in member.labels
        and "class-attribute" not in member.labels
        and member.docstring is None
    )


def _helper(name: str) -> bool:
    """A test helper: how the law checker draws a structure (``ChebyshevArbitrary``), not the structure."""
    return name.endswith("Arbitrary") and name != "Arbitrary"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def public_modules(module: griffe.Module) -> list[griffe.Module]:
    """``module`` and its public submodules, recursively (what the reference renders)."""
    found = [module]
    for name, member in module.members.items():
        if not member.is_alias and member.is_module and not _private(name):
            assert isinstance(member, griffe.Module)
            found += public_modules(member)
    return found


def shown(module: griffe.Module) -> list[tuple[str, griffe.Object]]:
    """The public names of ``module`` with their objects: what it defines, and the aliases it exports."""
    found = []
    for name, member in module.members.items():
        if name.startswith("_") or _type_variable(member):  # `__all__`, `F = TypeVar("F")`: not API
            continue
        if isinstance(member, griffe.Alias):
            if not member.is_public:  # imported for its own use, not exported
                continue
            try:
                target = member.final_target
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            if not target.is_module:  # `from . import x as x`: the module has its own section
                found.append((name, target))
        elif not member.is_module:
            assert isinstance(member, griffe.Object)
            found.append((name, member))
    return found


def _type_variable(member: griffe.Object | griffe.Alias) -> bool:
    return (
        not member.is_alias
        and member.is_attribute
        and str(getattr(member, "value", "")).startswith(("TypeVar(", "TypeVarTuple(", "ParamSpec("))
    )


def homes(packages: list[griffe.Module]) -> dict[str, str]:
    """Where the reference documents each public object, once: its definition's path -> the public path.

    Of the public names of an object (where it is defined, if that module is public, and every public module
    that exports it), the home is where users import it: in the package that defines it, the shortest path
    (``instances.Chebyshev``, not ``instances.chebyshev.Chebyshev``), the definition first on a tie.
    """
    names: dict[str, list[str]] = {}
    for package in packages:
        for module in public_modules(package):
            for name, target in shown(module):
                names.setdefault(target.path, []).append(f"{module.path}.{name}")

    def rank(path: str, where: str) -> tuple[bool, int, bool, str]:
        return where.split(".")[0] != path.split(".")[0], where.count("."), where != path, where

    return {path: min(wheres, key=lambda where: rank(path, where)) for path, wheres in names.items()}


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            assert isinstance(member, griffe.Object)
            found += _walk(member)
    return found


def _lookup(path: str, loader: griffe.GriffeLoader) -> griffe.Object | griffe.Alias | None:
    try:
        return loader.modules_collection[path]  # type: ignore[no-any-return]
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _foreign(target: str) -> bool:
    """A name outside this project that the docstring's scope does not import: a builtin or another library."""
    head = target.lstrip(".").split(".")[0]
    return not target.startswith(".") and (
        head in dir(builtins) or head in sys.stdlib_module_names or head in _LIBRARIES
    )


def _resolve(target: str, obj: griffe.Object) -> str | None:
    """The full path of ``target`` as written in ``obj``'s docstring (``None``: nothing in scope has that name)."""
    if not target:
        return None
    module = obj if obj.is_module else obj.module
    if target.startswith("."):  # relative to the docstring's package
        level = len(target) - len(target.lstrip("."))
        base = module.path.split(".")
        if not module.is_init_module:
            base = base[:-1]
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join([*base, target.lstrip(".")])
    head, _, rest = target.partition(".")
    if head in _OURS:
        return target
    scope: griffe.Object | None = obj
    while scope is not None:  # the docstring's scope: its object, then each parent (class, module)
        try:
            full = scope.resolve(head)
        except griffe.NameResolutionError:
            scope = scope.parent
            continue
        return f"{full}.{rest}" if rest else full
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _blocks(lines: list[str]) -> list[tuple[str, bool]]:
    """Block-level rewrites (math directives, literal-block colons, underlined titles, lists after text).

    Each line comes with whether it is code (a fenced block, or the literal block after ``::``), which
    the inline rewrites leave alone.
    """
    out: list[str] = []
    code: set[int] = set()
    fence = False
    literal: int | None = None  # the indentation of the paragraph that ended with "::"
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        if fence or stripped.startswith("```"):
            code.add(len(out))
            out.append(line)
            i += 1
            continue
        if literal is not None:
            if not stripped or _indent(line) > literal:
                code.add(len(out))
                out.append(line)
                i += 1
                continue
            literal = None
        if stripped.startswith(".. math::"):
            indent = line[: len(line) - len(line.lstrip())]
            body = [stripped.removeprefix(".. math::")]
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(indent + " ")):
                if not lines[i].strip() and (i + 1 >= len(lines) or not lines[i + 1].startswith(indent + " ")):
                    break
                body.append(lines[i].strip())
                i += 1
            out += _display_math(" ".join(b for b in body if b), indent)
            continue
        if _UNDERLINE.match(line) and out and out[-1].strip() and len(stripped) >= len(out[-1].strip()) - 2:
            out[-1] = f"**{out[-1].strip()}**"
            out.append("")
            i += 1
            continue
        if stripped == "::":
            literal = _indent(line)
            i += 1
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            line = line[: line.rstrip().rfind("::")] + ":"
            literal = _indent(line)
        bullet = _LIST.match(line)
        if bullet and out and out[-1].strip() and not _LIST.match(out[-1]):
            prev_indent = len(out[-1]) - len(out[-1].lstrip())
            if prev_indent <= len(bullet.group(1)) and not out[-1].startswith(" " * (len(bullet.group(1)) + 2)):
                out.append("")
        out.append(line)
        i += 1
    return [(line, n in code) for n, line in enumerate(out)]
