"""``arena doctor``: the conformance check of a bot (:mod:`arena.tools.doctor`)."""

from __future__ import annotations

import argparse

from arena.bounds import option_int
from arena.cli.common import Commands, add_command
from arena.errors import UserError
from arena.match.limits import LIMITS
from arena.tools.doctor import main as doctor_main


def add_commands(sub: Commands) -> None:
    """Add ``doctor`` to the ``arena`` command tree."""
    dr = add_command(sub, "doctor")
    dr.add_argument("manifest", help="the bot's manifest (TOML)")
    dr.add_argument("--move-ms", type=option_int("move_ms"), default=LIMITS.move_ms,
                    help="time per decision in ms (default 2000)")
    dr.add_argument("--verbose", action="store_true", help="print the full transcript (token masked)")
    dr.add_argument("--sandbox", action="store_true",
                    help="the default: the bot runs as the upload gate and the ladder run it, under bubblewrap, "
                         "speaking over stdin/stdout (ARENA_TRANSPORT=stdio); kept for old command lines")
    dr.add_argument("--tcp", action="store_true",
                    help="the bot connects over TCP as a remote bot does (ARENA_HOST, ARENA_PORT), unsandboxed")
    dr.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte",
                    help="the game the scripted matches play (default ecarte)")
    dr.add_argument("--tls", action="store_true",
                    help="the bot connects over TCP with TLS (ARENA_TLS=1) to a throwaway certificate (its CA in "
                         "ARENA_TLS_CA); implies --tcp")
    dr.set_defaults(run=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """``arena doctor``: :func:`arena.tools.doctor.main`; 0 if every check passed, 1 if not.
    Raises :class:`UserError` for ``--sandbox`` with ``--tcp`` or ``--tls``."""
    if args.sandbox and (args.tcp or args.tls):
        raise UserError("--sandbox (stdin/stdout, the default) cannot go with --tcp or --tls: choose one")
    return doctor_main(args.manifest, move_ms=args.move_ms, verbose=args.verbose,
                       sandbox=not (args.tcp or args.tls), game=args.game, tls=args.tls)
