"""User errors: a mistake the user can fix becomes one line and a documented exit status.

Raise :class:`UserError` (or one of its kinds) anywhere, with a message that names the thing
that is wrong and how to fix it; ``arena``'s entry point (:func:`arena.cli.main`) prints it
once, as ``arena: error: <message>``, and exits with its ``status``. A traceback is printed only
with ``arena --debug``. trio wraps errors raised inside a nursery in an ``ExceptionGroup``:
:func:`find_user_error` looks through the groups for the user error inside.

Exit statuses (also in docs/contests.md, "Exit statuses"):

====  =====================================================================================
0     success
1     a check failed (``arena replay``: the log does not verify; ``arena doctor``: the bot fails)
2     a bad command line, configuration file or manifest (:data:`USAGE`)
3     something the command needs is unavailable: a port in use, a bot program that is
      missing or never connects, bubblewrap (:data:`UNAVAILABLE`)
4     a database that is not an arena database, or one made by a newer arena (:data:`DATABASE`)
130   interrupted by Ctrl-C (:data:`INTERRUPTED`)
====  =====================================================================================
"""

from __future__ import annotations

USAGE = 2
UNAVAILABLE = 3
DATABASE = 4
INTERRUPTED = 130


class UserError(ValueError):
    """A mistake of the user's, to be shown as one line (the message) with exit ``status``.

    A subclass of ``ValueError`` so that callers that already catch ``ValueError`` for bad
    input keep working."""

    status = USAGE

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class Unavailable(UserError):
    """A port in use, a bot program that cannot start or never connects (exit 3)."""

    status = UNAVAILABLE


class DatabaseError(UserError):
    """Not an arena database, or one newer than this code (exit 4)."""

    status = DATABASE


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, looking through (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def find_user_error(exc: BaseException) -> UserError | None:
    """The first :class:`UserError` in ``exc`` or its groups, or None."""
    return next((e for e in leaves(exc) if isinstance(e, UserError)), None)


def interrupted(exc: BaseException) -> bool:
    """True if ``exc`` is (or a group holding) a ``KeyboardInterrupt``."""
    return any(isinstance(e, KeyboardInterrupt) for e in leaves(exc))
