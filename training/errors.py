"""The one exception a command line turns into a one-line message, and its kinds.

They are the library's own (:mod:`applicative`'s, so that every package -- the data readers in :mod:`operators`
as much as the training loop -- raises the same classes): re-exported here, where a program catches them.
"""

from __future__ import annotations

from applicative import DataError, InputError, UserError

__all__ = ["DataError", "InputError", "UserError"]
