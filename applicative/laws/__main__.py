"""``python -m applicative.laws MODULE:NAME [--ring MODULE:NAME] [--examples N]``: print the law table.

``NAME`` is a structure object, a ``Vector`` subclass with a size, an
:class:`~applicative.laws.Arbitrary` (class or object), a structure class for
which ``MODULE`` defines an arbitrary (``kind = NAME``), or a ring (then only
the ring laws and its declared capabilities run, on ``Vector(3)``). A structure class whose
constructor needs arguments is checked through an instance: write ``example = Periodic(8)`` in
the module and name ``MODULE:example``. Exit status 1 if any law fails; 2, with one line on stderr, if
the command line names nothing it can check (no such module, a module that does not import, no such
name, a ring that is not a ring).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn

from .._ring import REAL, Ring
from .._structure import Structure
from .._vector import Vector
from ._arbitrary import Arbitrary
from ._runner import LAWS, run_laws

PROG = "python -m applicative.laws"


class UsageError(Exception):
    """A command line that names nothing checkable: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _resolve(spec: str, what: str = "target") -> tuple[Any, Any]:
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise UsageError(f"{what} {spec!r}: expected MODULE:NAME, e.g. instances:Chebyshev or applicative:REAL")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise UsageError(
            f"{what} {spec!r}: no module named {e.name or module_name!r}; is it on PYTHONPATH (run from its directory)?"
        ) from None
    except SyntaxError as e:
        raise UsageError(
            f"{what} {spec!r}: module {module_name} does not parse: {e.msg} at {e.filename}:{e.lineno}"
        ) from None
    except Exception as e:  # whatever importing the user's module raised: reported, not a traceback
        first = str(e).splitlines()[0] if str(e) else ""
        raise UsageError(
            f"{what} {spec!r}: importing {module_name} raised {type(e).__name__}: {first}; fix the module"
        ) from None
    try:
        return module, getattr(module, name)
    except AttributeError:
        raise UsageError(f"{what} {spec!r}: module {module_name} has no attribute {name!r}") from None


def _target(module: Any, obj: Any) -> Any:
    """What to check for ``obj``: for a structure class, the arbitrary ``module`` defines for it (``kind``)."""
    if isinstance(obj, type) and issubclass(obj, Structure):
        for value in vars(module).values():
            if isinstance(value, Arbitrary) and value.kind is obj:
                return value
            if isinstance(value, type) and issubclass(value, Arbitrary) and value.kind is obj:
                return value
        found = Arbitrary.registered(obj)  # defined in a module of its own (imported by the package)
        if found is not None:
            return found
    return obj


def main(argv: list[str] | None = None) -> int:
    """Run the laws; 0 if all hold, 1 if one fails, 2 (one line on stderr) for a command line that names nothing."""
    try:
        return _main(argv)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    parser = _Parser(
        prog=PROG,
        description=__doc__.split("\n")[0].replace("``", ""),
        epilog=__doc__.split("\n\n", 1)[1]
        .replace("``", "")
        .replace(":class:`~applicative.laws.Arbitrary`", "Arbitrary"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", help="MODULE:NAME of a structure, arbitrary or ring")
    parser.add_argument("--ring", default=None, help="MODULE:NAME of the ring (default applicative:REAL)")
    parser.add_argument("--examples", type=int, default=50, help="examples per law (default 50)")
    args = parser.parse_args(argv)
    if args.examples < 1:
        raise UsageError(f"--examples {args.examples}: must be >= 1")
    module, obj = _resolve(args.target)
    ring: Ring = REAL
    laws = LAWS
    if isinstance(obj, Ring):
        ring, obj, laws = obj, Vector(3), tuple(law for law in LAWS if law.area in ("Ring", "Capability"))
    if args.ring is not None:
        _, ring = _resolve(args.ring, "--ring")
        if not isinstance(ring, Ring):
            raise UsageError(
                f"--ring {args.ring}: is {_kind(ring)}, not a ring; name one such as applicative:REAL or instances:LOG"
            )
    target = _target(module, obj)
    if isinstance(target, type) and issubclass(target, Structure) and not issubclass(target, Vector):
        raise UsageError(
            f"{args.target}: is the class {target.__name__}, whose values need constructor arguments and which no "
            f"Arbitrary draws; name an instance instead: write example = {target.__name__}(...) in {module.__name__} "
            f"and run {PROG} {module.__name__}:example"
        )
    try:
        report = run_laws(target, ring, laws=laws, max_examples=args.examples, database=False)
    except TypeError as e:
        raise UsageError(str(e).splitlines()[0] if str(e) else f"{args.target}: cannot be checked") from None
    print(report.table())
    if report.failures:
        print()
        print(report.failure_text())
        return 1
    return 0


def _kind(obj: Any) -> str:
    return f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"


if __name__ == "__main__":
    sys.exit(main())
