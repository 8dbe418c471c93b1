"""The one exception a command line turns into a one-line message."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix (a config value, a file, a directory): reported in one line, no traceback."""
