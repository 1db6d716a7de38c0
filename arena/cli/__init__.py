"""The ``arena`` command line: one module per command group, each adding its commands with
``add_commands(sub)`` and standing in ``arena --help`` at its ``PLACE``.

* ``arena tournament --bots sample_bots/*.toml --games N --seed S [--db arena.db]``: a
  round-robin over real TCP with an Elo table at the end (:mod:`arena.cli.tournament`, with
  ``worker`` and ``sprt``).
* ``arena bench``: engine and referee throughput next to a raw loopback baseline.
* ``arena bots add NAME`` / ``arena bots list``: register a bot that connects on its own.
* ``arena replay LOG|MATCH_KEY`` / ``arena archive``: verify a match log (a file or a member of
  a daily archive bundle); apply the storage retention.

Adding a command is a one-module change: a new module here with ``PLACE`` (a number after the
others' to come last in ``arena --help``) and ``add_commands(sub)``, whose parsers set
``set_defaults(run=cmd_...)``; a ``cmd_...`` takes the parsed :class:`argparse.Namespace` and
returns the exit status. A new verb of an existing group is added in that group's module.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from arena.cli.common import Parser, make_console
from arena.cli.tournament import resume_command
from arena.errors import INTERRUPTED, find_user_error, interrupted

__all__ = ["build_parser", "main", "make_console", "resume_command"]


def command_modules() -> list:
    """The modules of this package that add commands (those with ``add_commands``), in the
    order of their ``PLACE``."""
    names = [info.name for info in pkgutil.iter_modules(__path__) if info.name != "__main__"]  # that one runs main
    found = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return sorted((m for m in found if hasattr(m, "add_commands")), key=lambda m: m.PLACE)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``arena`` command: each parsed command carries ``run``, the
    function that runs it."""
    parser = Parser(prog="arena", description="Écarté & Piquet bot arena",
                    epilog="Exit statuses: 0 success, 1 a check failed, 2 bad command line, configuration or "
                           "manifest, 3 a port, program or bot unavailable, 4 database problem, 130 interrupted "
                           "(docs/contests.md).")
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in command_modules():
        module.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script. A :class:`arena.errors.UserError` raised
    anywhere (also inside trio's exception groups) is printed as one line on stderr and its
    status returned; Ctrl-C returns 130; other exceptions are bugs and keep their traceback.
    ``--debug`` shows the traceback of user errors too."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the --resume hint
    try:
        return args.run(args)
    except BaseException as exc:
        if args.debug:
            raise
        err = find_user_error(exc)
        if err is not None:
            print(f"arena: error: {err}", file=sys.stderr)
            return err.status
        if interrupted(exc):
            print("arena: interrupted", file=sys.stderr)
            return INTERRUPTED
        raise
