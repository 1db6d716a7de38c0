"""What the ``arena`` commands share: the table of commands (:data:`COMMANDS`), the console, the
one-line-error parser, argparse types and the ``--db`` help text. Light on purpose: ``arena
--help`` imports only this module of the package."""

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

COMMANDS: dict[str, tuple[str, str]] = {
    # command: (the module of arena.cli that adds it, its line in `arena --help`), in the order of `arena --help`
    "tournament": ("tournament", "run a tournament of local bots over TCP"),
    "worker": ("tournament", "play scheduled matches of a tournament or contest from its database"),
    "sprt": ("tournament", "sequential test of one bot against another over duplicate pairs"),
    "watch": ("watch", "follow a match live in the terminal, as a spectator"),
    "doctor": ("doctor", "conformance check of a bot before you submit it"),
    "replay": ("replay", "verify a match log (hash chain, rules engine, result) and print it"),
    "archive": ("replay", "apply the retention: match logs older than it into one bundle per day, old bot output, "
                          "live events and failed uploads deleted (docs/contests.md, 'Running a season')"),
    "bench": ("bench", "measure engine and referee throughput"),
    "bots": ("bots", "manage registered bots"),
    "author": ("authors", "your bot-author account on a contest server (self-service)"),
    "authors": ("authors", "(organiser) bot authors: add, invite, list, suspend, resume, delete"),
    "spectators": ("spectators", "betting spectators (gallery wagers, ecarte.md §E9.1)"),
    "db": ("db", "the database's schema: upgrade a database made by an older arena"),
    "serve": ("serve", "run a long-lived contest server (TCP for bots and spectators, HTTP)"),
}
"""Every ``arena`` command: the module of :mod:`arena.cli` that adds it (``add_commands(sub)``,
through :func:`add_command`) and its one line of ``arena --help``. :func:`arena.cli.main` imports
only the module of the command it runs."""


def add_command(sub: Commands, name: str) -> argparse.ArgumentParser:
    """The parser of command ``name`` (a key of :data:`COMMANDS`, whose help line it gets), added
    to ``sub``. Raises ``KeyError`` for a command missing from the table."""
    return sub.add_parser(name, help=COMMANDS[name][1])


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
