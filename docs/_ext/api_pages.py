"""A MkDocs hook: the API reference, a page per public module, each public name documented once.

Each object is rendered once, under its home (:func:`sphinx_markup.homes`: the name users import,
``instances.Chebyshev``), on the page of the module that defines it (``instances.chebyshev``, whose
docstring explains it). Every other module that holds the name -- the package re-exporting it --
lists it as a link there, so a package's page is the index of what it exports. An object defined in
a private module (``applicative._ring``) is shown on the page of the public module it is imported
from; where those add up to more than :data:`BUDGET` headings on one page, each private module's
share gets a page of its own (``applicative · ring``), so that no page is slow to open.

The pages and the reference's navigation come from the packages themselves, so a new module joins by
itself: ``mkdocs.yml`` names ``api/index.md`` once, and this hook expands that entry into the tree.
Each API page's table of contents lists the objects, not their every method.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page as MkDocsPage
from sphinx_markup import _OURS, _helper, _private, homes, public_modules, shown  # on sys.path: this folder

INDEX = "api/index.md"
_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj|math):`([^`]+)`")
#: the most object headings (an object and its public members) that one page gathers from private modules
BUDGET = 100


@dataclass
class Page:
    """One page: a module's docstring (unless private), the objects it documents, links to the others."""

    name: str  # the module's path: `instances.chebyshev`, or `applicative._ring` for a private share
    module: griffe.Module
    objects: list[str] = field(default_factory=list)  # home paths, in order
    links: list[tuple[str, str]] = field(default_factory=list)  # (name, home) documented on another page

    @property
    def uri(self) -> str:
        return f"api/{self.name}.md"

    @property
    def title(self) -> str:
        package, _, last = self.name.rpartition(".")
        return f"{package} · {last.lstrip('_')}" if _private(last) else self.name


def _headings(obj: griffe.Object | griffe.Alias) -> int:
    """How many headings ``obj`` renders: itself and its public members, recursively."""
    target = obj.final_target if isinstance(obj, griffe.Alias) else obj
    members = [] if target.is_module else target.members.items()
    return 1 + sum(_headings(m) for n, m in members if not _private(n) and not m.is_alias)


def _order(module: griffe.Module, names: list[str]) -> list[str]:
    """``names`` in ``__all__`` order (the law checker's helpers last), the rest after, in source order."""
    exports = [str(n) for n in module.exports or ()]
    rank = {name: (_helper(name), exports.index(name) if name in exports else len(exports)) for name in names}
    return sorted(names, key=lambda name: rank[name])


def pages(packages: list[griffe.Module], home: dict[str, str]) -> list[Page]:
    """Every page, each package's before its modules'."""
    collection = packages[0].modules_collection
    found = {m.path: Page(m.path, m) for package in packages for m in public_modules(package)}
    shares: dict[str, dict[str, list[str]]] = {}  # public module -> private module -> home paths
    for path, where in home.items():
        obj = collection[path]
        defined = obj.module.path
        if defined in found:
            found[defined].objects.append(where)
        else:
            shares.setdefault(where.rpartition(".")[0], {}).setdefault(defined, []).append(where)
    for public, by_private in shares.items():
        page = found[public]
        if sum(_headings(collection[w]) for ws in by_private.values() for w in ws) <= BUDGET:
            page.objects += [w for ws in by_private.values() for w in ws]
        else:
            for private, wheres in by_private.items():
                found[private] = Page(private, page.module, wheres)
    for page in found.values():
        by_name = {w.rpartition(".")[2]: w for w in page.objects}
        page.objects = [by_name[n] for n in _order(page.module, list(by_name))]
    rendered = {w: page for page in found.values() for w in page.objects}
    for page in found.values():
        if page.name == page.module.path:
            targets = dict(shown(page.module))
            for name in _order(page.module, list(targets)):
                documented = home.get(targets[name].path)
                if documented is not None and rendered.get(documented) is not page:
                    page.links.append((name, documented))
    return sorted(found.values(), key=lambda p: (p.name.split("."), p.name != p.module.path))


def render(page: Page) -> str:
    """The Markdown of ``page``: the module's docstring (a level-1 heading), then each object (level 2)."""
    if page.name == page.module.path:
        head = f"::: {page.name}\n    options:\n      heading_level: 1\n      members: []\n      show_submodules: false"
    else:  # a private module's share: its docstring is written for the library's developers
        head = f"# {page.title}\n\nThe part of [`{page.module.path}`][{page.module.path}] defined in `{page.name}`."
    parts = [head]
    if page.links:
        links = ", ".join(f"[`{name}`][{where}]" for name, where in page.links)
        parts.append(f"Also in `{page.module.path}`, documented on the pages of their modules: {links}.")
    parts += [f"::: {where}\n    options:\n      heading_level: 2" for where in page.objects]
    return "\n\n".join(parts) + "\n"


def index(all_pages: list[Page]) -> str:
    """The reference's first page: every public module, with the first line of its docstring."""
    lines = [
        "# API reference",
        "",
        "A page per public module. Each object is documented once, under the name it is imported by "
        "(`from instances import Chebyshev`: [`instances.Chebyshev`][instances.Chebyshev]), on the page of "
        "the module that defines it; a package's page links to everything it exports.",
        "",
    ]
    for page in all_pages:
        if page.name != page.module.path:
            continue
        doc = page.module.docstring.value.strip().splitlines() if page.module.docstring else []
        doc = [_ROLE.sub(lambda m: f"`{m.group(1).lstrip('~.').rsplit('.', 1)[-1]}`", line) for line in doc[:1]]
        depth = "    " * (page.name.count("."))
        lines.append(f"{depth}* [`{page.name}`]({Path(page.uri).name}){' -- ' + doc[0] if doc else ''}")
    return "\n".join(lines) + "\n"


def nav(all_pages: list[Page]) -> list[Any]:
    """The reference's navigation, the package tree: a package is a section, its own page first."""
    sections: dict[str, list[Any]] = {}
    tree: list[Any] = [INDEX]
    for page in all_pages:
        entry = {page.title: page.uri}
        parent = page.module.path if page.name != page.module.path else page.name.rpartition(".")[0]
        siblings = sections.get(parent, tree)
        if page.module.is_init_module and page.name == page.module.path:
            sections[page.name] = [entry]
            siblings.append({page.name: sections[page.name]})
        else:
            siblings.append(entry)
    return tree


class _Reference:
    """The pages, computed once per build from the packages as griffe reads them."""

    def __init__(self, root: Path) -> None:
        loader = griffe.GriffeLoader(search_paths=[str(root)])
        packages = [loader.load(name) for name in _OURS]
        loader.resolve_aliases(implicit=False, external=False)
        modules = [p for p in packages if isinstance(p, griffe.Module)]
        self.pages = pages(modules, homes(modules))


_reference: _Reference | None = None


@event_priority(50)
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _reference
    _reference = _Reference(Path(config.config_file_path).parent)
    entries = config.nav or []
    for i, entry in enumerate(entries):
        if isinstance(entry, dict) and list(entry.values()) == [INDEX]:
            entries[i] = {next(iter(entry)): nav(_reference.pages)}
            break
    else:
        raise ValueError(f"mkdocs.yml's nav has no entry `NAME: {INDEX}` for the API reference to expand")
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    assert _reference is not None
    for page in _reference.pages:
        files.append(File.generated(config, page.uri, content=render(page)))
    files.append(File.generated(config, INDEX, content=index(_reference.pages)))
    return files


def on_page_content(html: str, page: MkDocsPage, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri.startswith("api/"):
        for top in page.toc.items:  # the module (level 1), its objects (level 2): their members left out
            for item in top.children:
                item.children = []
    return html
