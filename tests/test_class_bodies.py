"""Classes hold their methods: no method is written outside its class and assigned in.

A method assigned into a class (``Cls.name = func`` after the class, or ``name = _func`` /
``name = classmethod(module.func)`` inside its body) shows in the API reference as an attribute without a
signature or docstring, and "go to definition" lands on the assignment. The walk reads every module of the
packages with ``ast``: an assignment to an attribute of a class of the module, anywhere in it, is refused; an
assignment in a class body whose value names something (``name = other`` or ``classmethod(other)``) is
resolved by importing the module, and refused when it is a function defined outside that class's body.
"""

from __future__ import annotations

import ast
import importlib
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("applicative", "instances", "models", "operators", "training")
WRAPPERS = ("classmethod", "staticmethod", "property")


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            out.append((name, ast.parse(path.read_text(), str(path))))
    return out


def _classes(node: ast.AST, prefix: str = "") -> list[tuple[str, ast.ClassDef]]:
    """Every class of a module with its qualified name (classes nested in classes included)."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            qualname = f"{prefix}{child.name}"
            found.append((qualname, child))
            found += _classes(child, qualname + ".")
        elif not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            found += _classes(child, prefix)
    return found


def _names_something(value: ast.expr) -> bool:
    """``other``, ``module.other`` or ``classmethod(other)``: a value that may be a function from elsewhere."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in WRAPPERS:
        return len(value.args) == 1 and _names_something(value.args[0])
    return isinstance(value, ast.Name | ast.Attribute)


def _outside(cls: type, name: str) -> str | None:
    """Where the function bound to ``name`` in ``cls``'s body was written, if not in that body."""
    member = vars(cls).get(name)
    if isinstance(member, classmethod | staticmethod):
        member = member.__func__
    elif isinstance(member, property):
        member = member.fget
    if not isinstance(member, types.FunctionType) or member.__qualname__.startswith(f"{cls.__qualname__}."):
        return None
    return f"{member.__module__}.{member.__qualname__}"


def _offenders(module_name: str, tree: ast.Module, load: Callable[[str], types.ModuleType]) -> list[str]:
    """The methods of one module written outside their class and assigned in."""
    classes = _classes(tree)
    own = {qualname.split(".")[0] for qualname, _ in classes}
    found = []
    for node in ast.walk(tree):  # Cls.name = ..., setattr(Cls, ...)
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in own:
                found.append(f"{module_name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in own:
                found.append(f"{module_name}:{node.lineno}: {ast.unparse(node)}")
    suspects = [
        (qualname, statement)
        for qualname, cls in classes
        for statement in cls.body
        if isinstance(statement, ast.Assign | ast.AnnAssign)
        and statement.value is not None
        and _names_something(statement.value)
    ]
    if not suspects:
        return found
    module = load(module_name)
    for qualname, statement in suspects:
        cls: object = module
        for part in qualname.split("."):
            cls = getattr(cls, part)
        assert isinstance(cls, type)
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            where = _outside(cls, target.id) if isinstance(target, ast.Name) else None
            if where is not None:
                found.append(f"{module_name}:{statement.lineno}: {ast.unparse(statement)} (written as {where})")
    return found


def test_no_method_is_assigned_into_a_class_from_outside_its_body() -> None:
    offenders = [line for name, tree in _modules() for line in _offenders(name, tree, importlib.import_module)]
    assert offenders == [], "methods written outside their class and assigned in:\n" + "\n".join(offenders)


def test_the_walk_finds_each_shape_of_an_assigned_method() -> None:
    """The control: a module with every shape of the pattern, and methods and constants that are fine."""
    source = (
        "import math\n\n"
        "def _f(self):\n    return 1\n\n"
        "class A:\n"
        "    f = _f\n"
        "    g = classmethod(_f)\n"
        "    h = math.floor\n"
        "    limit = math.pi\n"
        "    def own(self):\n        return 2\n"
        "    alias = own\n\n"
        "A.k = _f\n"
        "setattr(A, 'm', _f)\n"
    )
    module = types.ModuleType("control")
    exec(compile(source, "<control>", "exec"), module.__dict__)
    found = _offenders("control", ast.parse(source), lambda name: module)
    assert [line.split(":")[1] for line in found] == ["15", "16", "7", "8"]
