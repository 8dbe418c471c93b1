"""The one exception a command line turns into a one-line message, and its kinds."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix (a config value, a file, a directory): reported in one line, no traceback."""


class DataError(UserError):
    """A data file that cannot be used (its format, shapes, dtype, counts or values); the message names it."""


class InputError(UserError, ValueError):
    """An argument a model or function cannot take (its type, shape, dtype, range); the message names the argument.

    A :class:`ValueError` too, so code that guards a call with ``except ValueError`` keeps working.
    """
