"""The ``arena`` command line: one module per command group, each adding its commands with
``add_commands(sub)``; :data:`arena.cli.common.COMMANDS` names every command's module and its line
in ``arena --help``, in that order.

* ``arena tournament --bots sample_bots/*.toml --games N --seed S [--db arena.db]``: a
  round-robin over real TCP with an Elo table at the end (:mod:`arena.cli.tournament`, with
  ``worker`` and ``sprt``).
* ``arena bench``: engine and referee throughput next to a raw loopback baseline.
* ``arena bots add NAME`` / ``arena bots list``: register a bot that connects on its own.
* ``arena replay LOG|MATCH_KEY`` / ``arena archive``: verify a match log (a file or a member of
  a daily archive bundle); apply the storage retention.

Start-up: :func:`main` imports only the module of the command it runs (:func:`load`, the one
place a command's module is imported), so ``arena --help`` or ``arena bots list`` never load the
web server, the rating fit's numpy and scipy or the tournament runner they do not use; the
modules themselves import everything at their top.

Adding a command: a row in :data:`arena.cli.common.COMMANDS` (its module and help line) and, in
that module, ``add_commands(sub)`` whose parsers (made by :func:`arena.cli.common.add_command`)
set ``set_defaults(run=cmd_...)``; a ``cmd_...`` takes the parsed :class:`argparse.Namespace` and
returns the exit status. A new verb of an existing group is added in that group's module.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from arena.cli.common import COMMANDS, Parser, make_console
from arena.errors import INTERRUPTED, find_user_error, interrupted

__all__ = ["build_parser", "command_modules", "load", "main", "make_console"]


def load(module: str) -> ModuleType:
    """The command group module ``arena.cli.<module>`` (a module named in
    :data:`arena.cli.common.COMMANDS`), imported on first use: the one import site of the
    command modules, so that a command loads only what it runs."""
    return importlib.import_module(f"{__name__}.{module}")


def command_modules() -> list[ModuleType]:
    """Every command group module, in the order of their commands in ``arena --help``."""
    return [load(m) for m in dict.fromkeys(module for module, _ in COMMANDS.values())]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``arena`` command: each parsed command carries ``run``, the
    function that runs it. With ``command`` (a key of :data:`arena.cli.common.COMMANDS`), only its
    module is loaded: the other commands are placeholders with their help line (enough for
    ``arena --help`` and for argparse to name the valid choices), which cannot be run."""
    parser = Parser(prog="arena", description="Écarté & Piquet bot arena",
                    epilog="Exit statuses: 0 success, 1 a check failed, 2 bad command line, configuration or "
                           "manifest, 3 a port, program or bot unavailable, 4 database problem, 130 interrupted "
                           "(docs/contests.md).")
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    added: set[str] = set()
    for name, (module, text) in COMMANDS.items():
        if name in sub.choices:
            continue  # added with its module's other commands
        if command is None or module == wanted:
            if module not in added:
                load(module).add_commands(sub)
                added.add(module)
        else:
            sub.add_parser(name, help=text, add_help=False)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the ``arena`` parser's
    own options, ``--debug`` and ``--help``, take no value, so this is the word argparse takes
    as the command). ``None`` when there is none (``arena --help``); a word that is no command is
    returned as it is, and the parse refuses it in one line."""
    for i, word in enumerate(argv):
        if word == "--":
            return argv[i + 1] if i + 1 < len(argv) else None
        if not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script. A :class:`arena.errors.UserError` raised
    anywhere (also inside trio's exception groups) is printed as one line on stderr and its
    status returned; Ctrl-C returns 130; other exceptions are bugs and keep their traceback.
    ``--debug`` shows the traceback of user errors too. With ``ARENA_CPU_REPORT=FILE`` in the
    environment, the process's own CPU seconds (children excluded: the bots) and the status are
    written to FILE as JSON at the end (``{"status": 0, "cpu_s": 1.25}``: ``make bench``'s
    tournament path, :mod:`arena.tools.bench_path`)."""
    report = os.environ.get("ARENA_CPU_REPORT")
    status = _main(argv)
    if report:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        Path(report).write_text(json.dumps({"status": status, "cpu_s": usage.ru_utime + usage.ru_stime}))
    return status


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(command_of(words) or "").parse_args(words)  # loads the named command's module only
    args.argv = words  # for the --resume hint
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
