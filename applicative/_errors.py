"""The library's exceptions: :class:`StructureError` for values that do not line up, and :class:`UserError`, the
one root of what a user can fix (a command line reports it in one line), with its kinds :class:`DataError` and
:class:`InputError`. Every package above raises these (or subclasses of them), never a copy of its own.
"""

from __future__ import annotations


class StructureError(ValueError):
    """Values do not line up: mismatched structures, shapes, dtypes, devices or invalid data.

    Messages say what was expected, what came, and how to fix it.
    """


class UserError(Exception):
    """Something the user can fix (a config value, a file, a directory): reported in one line, no traceback."""


class DataError(UserError, ValueError):
    """Data that cannot be used as declared (a file's format, keys, shapes, dtype, counts or values; a grid that
    contradicts its layout); the message names the file or array, what is wrong and the fix.

    A :class:`ValueError` too, so code that guards a call with ``except ValueError`` keeps working.
    """


class InputError(UserError, ValueError):
    """An argument a model or function cannot take (its type, shape, dtype, range); the message names the argument.

    A :class:`ValueError` too, so code that guards a call with ``except ValueError`` keeps working.
    """


def summary(value: object, limit: int = 80) -> str:
    """A short ``repr`` of user input for an error message: at most about ``limit`` characters.

    Tuples and lists are walked with an explicit stack, so arbitrarily deep
    nesting never exhausts the recursion limit and a huge value costs only the
    characters shown; anything else is ``repr``-ed (guarded) and truncated.
    """
    out: list[str] = []
    length = 0
    stack: list[tuple[bool, object]] = [(False, value)]  # (is literal text, item)
    while stack and length <= limit:
        literal, item = stack.pop()
        if literal:
            text = str(item)
        elif isinstance(item, tuple | list):
            opening, closing = ("(", ")") if isinstance(item, tuple) else ("[", "]")
            if isinstance(item, tuple) and len(item) == 1:
                closing = ",)"
            stack.append((True, closing))
            # push only as many elements as could possibly be shown (each takes >= 1 character)
            shown = list(item[: limit - length + 1])
            if len(shown) < len(item):
                stack.append((True, ", ..."))
            for i in range(len(shown) - 1, -1, -1):
                stack.append((False, shown[i]))
                if i:
                    stack.append((True, ", "))
            text = opening
        else:
            try:
                text = repr(item)
            except Exception:  # a broken or too deeply recursive __repr__
                text = f"<{type(item).__name__} object>"
            text = text[: limit + 1]  # one more than fits: the result is then marked as cut
        out.append(text)
        length += len(text)
    s = "".join(out)
    return s if len(s) <= limit and not stack else s[:limit] + "..."
