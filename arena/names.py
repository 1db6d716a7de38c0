"""Names are data: the one rule for every name a user gives the arena, and how text from users
is shown in the terminal.

A **name** (a bot's, a betting spectator's, a watcher's) is 1 to :data:`MAX_NAME` characters
among ``A-Z a-z 0-9 _ . -``, not starting with ``.`` or ``-``: it can never be markup (no ``[``,
``<``, ``&``), a path (no ``/``, never ``.`` or ``..``), an option (no leading ``-``), a
terminal control sequence, or two look-alike spellings of one bot. It is checked wherever a name
enters: a manifest, ``arena bots add``/``submit``, ``arena spectators add``, the store, and a
``hello`` (``bad_name``). docs/protocol.md §4 and docs/bots.md state it.

Everything else users write (a manifest's description or language, a contest's name, the
``message`` or ``reason`` of a server, a detail quoting a bot's line) is free text, and names
registered before this rule may be anything: all of it is shown through :func:`plain` (a rich
``Text``, never parsed as markup) or :func:`escape` (inside a markup string we write), and
never used to build a path (files are named after ids: ``t<tournament>-m<match>``).
"""

from __future__ import annotations

import re

from rich.markup import escape as _rich_escape
from rich.text import Text

MAX_NAME = 32
"""Longest name, in characters."""

NAME_RULE = f"1-{MAX_NAME} characters among A-Z a-z 0-9 _ . - (not starting with . or -)"
"""The rule in words, as error messages and the docs give it."""

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class BadName(ValueError):
    """A name that breaks the rule; the message is one line saying what is wrong and the rule.
    ``code`` is the protocol error code (``bad_name``)."""

    code = "bad_name"


def is_valid_name(name: object) -> bool:
    """True if ``name`` is a str following the rule of this module."""
    return isinstance(name, str) and len(name) <= MAX_NAME and _NAME.fullmatch(name) is not None


def check_name(name: object, what: str = "bot") -> str:
    """``name`` itself if it follows the rule, else :class:`BadName` (``what``: ``bot``,
    ``spectator``, ... for the message). The name is quoted with ``repr`` (shortened), so the
    message is one printable line whatever the name holds."""
    if is_valid_name(name):
        return name  # type: ignore[return-value]
    shown = repr(name)
    if len(shown) > 48:
        shown = shown[:45] + "..."
    raise BadName(f"bad {what} name {shown}: a name is {NAME_RULE}")


def escape(text: object) -> str:
    """``text`` made safe to put inside a rich markup string (``[`` can open no tag)."""
    return _rich_escape(str(text))


def plain(text: object, style: str = "") -> Text:
    """``text`` as a rich ``Text``: printed exactly as it is, never parsed as markup."""
    return Text(str(text), style=style)
