"""``python -m applicative.laws MODULE:NAME [--ring MODULE:NAME] [--examples N]``: print the law table.

``NAME`` is a structure object, a ``Vector`` subclass with a size, an
:class:`~applicative.laws.Arbitrary` (class or object), a structure class for
which ``MODULE`` defines an arbitrary (``kind = NAME``), or a ring (then only
the ring laws run, on ``Vector(3)``). Exit status 1 if any law fails.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from .._ring import REAL, Ring
from .._structure import Structure
from .._vector import Vector
from ._arbitrary import Arbitrary
from ._runner import LAWS, run_laws


def _resolve(spec: str) -> tuple[Any, Any]:
    module_name, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"expected MODULE:NAME, got {spec!r}")
    module = importlib.import_module(module_name)
    try:
        return module, getattr(module, name)
    except AttributeError:
        raise SystemExit(f"module {module_name} has no attribute {name!r}") from None


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
    parser = argparse.ArgumentParser(prog="python -m applicative.laws", description=__doc__.split("\n")[0])
    parser.add_argument("target", help="MODULE:NAME of a structure, arbitrary or ring")
    parser.add_argument("--ring", default=None, help="MODULE:NAME of the ring (default applicative:REAL)")
    parser.add_argument("--examples", type=int, default=50, help="examples per law (default 50)")
    args = parser.parse_args(argv)
    module, obj = _resolve(args.target)
    ring: Ring = REAL
    laws = LAWS
    if isinstance(obj, Ring):
        ring, obj, laws = obj, Vector(3), tuple(law for law in LAWS if law.area == "Ring")
    if args.ring is not None:
        _, ring = _resolve(args.ring)
    try:
        report = run_laws(_target(module, obj), ring, laws=laws, max_examples=args.examples, database=False)
    except TypeError as e:
        raise SystemExit(str(e)) from None
    print(report.table())
    if report.failures:
        print()
        print(report.failure_text())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
