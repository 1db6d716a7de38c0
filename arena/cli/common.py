"""What the ``arena`` commands share: the console, the one-line-error parser, argparse types and
the ``--db`` help text."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from rich.console import Console

from arena.errors import USAGE

if TYPE_CHECKING:
    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Commands = argparse._SubParsersAction  # what ``add_subparsers`` returns, given to each ``add_commands``

DB_HELP = ("the database: an SQLite file (default arena.db) or a postgresql://user@host:port/dbname URL "
           "(password from PGPASSFILE, never on the command line; docs/contests.md)")


def make_console() -> Console:
    """A rich console; when output is not a terminal (a pipe, a CI log) it is 140 columns wide
    so that tables are not wrapped at rich's default of 80."""
    console = Console()
    return console if console.is_terminal else Console(width=140)


def target(text: str) -> int | str:
    """The argparse type of ``--target``: ``5``, ``7`` (an int) or ``turn-up``. Raises
    :class:`argparse.ArgumentTypeError` otherwise."""
    if text == "turn-up":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("target is 5, 7 or turn-up") from None


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number ``>= low``; else :class:`argparse.ArgumentTypeError`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    parse.__name__ = f"int >= {low}"
    return parse


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block) and exit status 2 (:data:`USAGE`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
