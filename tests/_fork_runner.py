"""Run many command lines cheaply, each in a process of its own: ``python tests/_fork_runner.py < cases.json``.

A fresh interpreter per command line spends ~3 s importing torch; this runner imports the programs'
dependencies once, then forks one child per case. The child is a separate process like any other:
it changes to the case's working directory, sends its stdout and stderr to files (outside that
directory), runs ``python -m MODULE ARGS`` through :func:`runpy.run_module` (the module's own
``if __name__ == "__main__"`` block included) and exits with the program's status; an exception that
escapes is printed as Python would (a traceback) and exits 1. Prints, as JSON, each case's status.

Input: a JSON list of ``{"module", "argv", "cwd", "stdout", "stderr"}``. Output: a line ``{"seconds": [...]}``
(each case's wall time, fork to exit), then the last line, a JSON list of the exit statuses.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import runpy
import signal
import sys
import time
import traceback

#: the longest one case may take: each fails while checking its arguments, in well under a second
CASE_SECONDS = 60
PRELOAD = ("torch", "numpy", "scipy.sparse.csgraph", "tqdm", "applicative", "instances", "models", "training")


def child(case: dict[str, object]) -> None:
    """In the forked process: run the case and exit with its status (never returns)."""
    code = 1
    try:
        signal.alarm(CASE_SECONDS)  # a case that hangs dies of SIGALRM (status -14) instead of stalling the rest
        os.chdir(str(case["cwd"]))
        sys.path.insert(0, str(case["cwd"]))  # as `python -m` puts the working directory first
        for fd, name in ((1, "stdout"), (2, "stderr")):
            f = os.open(str(case[name]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        module = str(case["module"])
        sys.argv = [module, *map(str, case["argv"])]  # type: ignore[call-overload]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def main() -> None:
    cases = json.load(sys.stdin)
    for name in PRELOAD:
        importlib.import_module(name)
    for module in sorted({str(c["module"]) for c in cases}):  # each program's own imports, done once here
        spec = importlib.util.find_spec(module)
        if spec is None:
            continue
        main = f"{module}.__main__" if spec.submodule_search_locations is not None else module
        try:
            importlib.import_module(main)  # its top level: imports and definitions (not its __main__ block)
        except BaseException:  # a program that cannot be imported: each case says so
            pass
        sys.modules.pop(main, None)  # runpy runs it afresh, as python -m does (its dependencies stay imported)
    statuses, seconds = [], []
    for case in cases:
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            child(case)
        _, status = os.waitpid(pid, 0)
        seconds.append(time.perf_counter() - start)
        statuses.append(os.waitstatus_to_exitcode(status))
    print(json.dumps({"seconds": seconds}))
    print(json.dumps(statuses))


if __name__ == "__main__":
    main()
