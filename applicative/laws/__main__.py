"""``python -m applicative.laws MODULE:NAME [--ring MODULE:NAME] [--examples N]``: print the law table.

``NAME`` is a structure object, a ``Vector`` subclass with a size, an
:class:`~applicative.laws.Arbitrary` (class or object), a structure class for
which ``MODULE`` defines an arbitrary (``kind = NAME``), or a ring (then only
the ring laws and its declared capabilities run, on ``Vector(3)``). A structure class whose
constructor needs arguments is checked through an instance: write ``example = Periodic(8)`` in
the module and name ``MODULE:example``. What is checked follows one rule, the one ``check_laws`` follows
(:func:`~applicative.laws.arbitrary_of`): a structure object whose class has a registered arbitrary is drawn
by it. The target runs in a child process, so nothing its code does can end the checker without a word.

Exit status 0 when every law holds and 1 if any fails, each after the table and a last ``verdict:`` line; 2, with
one line on stderr, if the command line names nothing it can check (no such module, a module that does not
import, no such name, a ring that is not a ring, ``--examples`` outside 1..100000, an instance whose values are
past the checker's size bound) or the target's own code fails on import, lookup, construction or checking (any
exception, ``KeyboardInterrupt`` and ``GeneratorExit`` included, ``sys.exit``, a recursion without end, or a
process that ends itself -- ``os._exit``, a signal -- before the verdict; what it prints is held back). It takes
3-30 s per structure on one core at the default 50 examples, and writes nothing to the working directory.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import torch

from .._ring import REAL, Ring
from .._structure import Structure
from .._vector import Vector
from ._arbitrary import Arbitrary, SizeError
from ._runner import LAWS, run_laws
from ._strategies import arbitrary_of

PROG = "python -m applicative.laws"
#: the most examples per law the command line draws (the default is 50; a million would take days)
MAX_EXAMPLES = 100_000


class UsageError(Exception):
    """A command line that names nothing checkable: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


@contextlib.contextmanager
def _quiet(what: str) -> Iterator[None]:
    """Run the user's code (an import, a constructor) with its output held back and anything it raises,
    ``sys.exit`` and a runaway recursion included, turned into one :class:`UsageError` line."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held), contextlib.redirect_stderr(held):
            yield
    except UsageError:
        raise
    except SystemExit as e:
        raise UsageError(f"{what} called sys.exit({e.code!r}); fix it") from None
    except RecursionError:
        raise UsageError(f"{what} recursed without end (RecursionError); fix it") from None
    except SizeError as e:
        raise UsageError(f"{what}: {_first_line(e)}") from None
    except BaseException as e:  # whatever the user's code raised (KeyboardInterrupt too): reported, not a traceback
        said = _first_line(e)
        raise UsageError(f"{what} raised {type(e).__name__}{': ' + said if said else ''}; fix it") from None


def _resolve(spec: str, what: str = "target") -> tuple[Any, Any]:
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise UsageError(f"{what} {spec!r}: expected MODULE:NAME, e.g. instances:Chebyshev or applicative:REAL")
    try:
        with _quiet(f"{what} {spec!r}: importing {module_name}"):
            module = importlib.import_module(module_name)
    except UsageError as e:
        cause = e.__context__
        if isinstance(cause, ModuleNotFoundError) and (cause.name or "").split(".")[0] == module_name.split(".")[0]:
            raise UsageError(
                f"{what} {spec!r}: no module named {cause.name or module_name!r}; is it on PYTHONPATH "
                "(run from its directory)?"
            ) from None
        if isinstance(cause, SyntaxError):
            raise UsageError(
                f"{what} {spec!r}: module {module_name} does not parse: {cause.msg} at {cause.filename}:{cause.lineno}"
            ) from None
        raise
    try:
        with _quiet(f"{what} {spec!r}: looking up {name!r} in {module_name}"):
            return module, getattr(module, name)
    except UsageError as e:
        if isinstance(e.__context__, AttributeError):
            raise UsageError(f"{what} {spec!r}: module {module_name} has no attribute {name!r}") from None
        raise


def _target(module: Any, obj: Any) -> Any:
    """What to check for ``obj``: for a structure class, an arbitrary ``module`` defines for it (``kind``);
    for anything else, ``obj`` itself (:func:`~applicative.laws.arbitrary_of` then applies the one rule)."""
    if isinstance(obj, type) and issubclass(obj, Structure):
        for value in list(vars(module).values()):
            if isinstance(value, Arbitrary) and value.kind is obj:
                return value
            if isinstance(value, type) and issubclass(value, Arbitrary) and value.kind is obj:
                return value
    return obj


def main(argv: list[str] | None = None) -> int:
    """Run the laws; 0 if all hold, 1 if one fails, 2 (one line on stderr) for a command line that names nothing or
    a target whose code fails. The command line is parsed here; the target is imported and checked in a child."""
    try:
        args = _parse(argv)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return _in_child(args)


def _in_child(args: argparse.Namespace) -> int:
    """:func:`_check` in a forked child; its exit status, or one line if it ended before saying its verdict."""
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check, then send the verdict and the table up the pipe (the only way it says either)
        os.close(read)
        # A forked child has none of its parent's OpenMP threads: a parallel region there would wait for them for
        # ever (GNU libgomp is not fork-safe). One thread keeps torch's kernels out of OpenMP, as DataLoader's
        # workers do.
        torch.set_num_threads(1)
        code, error, table = 2, "", io.StringIO()
        try:
            with contextlib.redirect_stdout(table):
                code = _check(args)
        except UsageError as e:
            error = str(e)
        except BaseException as e:  # the child ends here, whatever happened
            error = f"{args.target}: the check raised {type(e).__name__}: {_first_line(e)}"
        try:
            with os.fdopen(write, "wb") as pipe:
                pipe.write(json.dumps({"code": code, "error": error, "out": table.getvalue()}).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read()
        _, status = os.waitpid(pid, 0)
    except KeyboardInterrupt:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    try:
        verdict = json.loads(said)
        code, error, out = int(verdict["code"]), str(verdict["error"]), str(verdict["out"])
    except (ValueError, KeyError, TypeError):
        how = _ended(status)
        print(
            f"{PROG}: error: {args.target}: the check ended ({how}) before a verdict: the target's code ended its "
            "process (os._exit, a signal, ...); fix it",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(out)
    if error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
    return code


def _ended(status: int) -> str:
    """How a child process ended, in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _parse(argv: list[str] | None) -> argparse.Namespace:
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
    if not 1 <= args.examples <= MAX_EXAMPLES:
        raise UsageError(f"--examples {args.examples}: must be in 1..{MAX_EXAMPLES}")
    return args


def _check(args: argparse.Namespace) -> int:
    """Import the target, check its laws and print the table and the verdict: 0 if all hold, 1 if one fails."""
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
    if isinstance(target, type) and issubclass(target, Structure) and Arbitrary.registered(target) is None:
        if not issubclass(target, Vector):
            raise UsageError(
                f"{args.target}: is the class {target.__name__}, whose values need constructor arguments and which "
                f"no Arbitrary draws; name an instance instead: write example = {target.__name__}(...) in "
                f"{module.__name__} and run {PROG} {module.__name__}:example"
            )
    with _quiet(f"{args.target}: constructing it"):
        try:
            arbitrary = arbitrary_of(target)
        except TypeError as e:
            raise UsageError(f"{args.target}: {_first_line(e) or 'cannot be checked'}") from None
        description = repr(arbitrary)
    with _quiet(f"{args.target}: checking {description}"):
        report = run_laws(arbitrary, ring, laws=laws, max_examples=args.examples)
    print(report.table())
    if report.failures:
        print()
        print(report.failure_text())
        print(f"verdict: {len(report.failures)} law(s) fail")
        return 1
    checked = sum(r.status != "n/a" for r in report.results)
    print(f"verdict: all {checked} laws that apply hold")
    return 0


def _kind(obj: Any) -> str:
    return f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"


if __name__ == "__main__":
    sys.exit(main())
