"""``arena watch``: follow a match live in the terminal (:mod:`arena.tools.watch`)."""

from __future__ import annotations

import argparse

from arena.bounds import option_int
from arena.cli.common import Commands, add_command
from arena.tools.watch import main as watch_main


def add_commands(sub: Commands) -> None:
    """Add ``watch`` to the ``arena`` command tree."""
    wt = add_command(sub, "watch")
    wt.add_argument("match", nargs="?", help="the match id (default: the first in play, then the next)")
    wt.add_argument("--host", default="127.0.0.1", help="the contest server (default 127.0.0.1); tls://host:port "
                    "for TLS")
    wt.add_argument("--port", type=option_int("port"), default=7000,
                    help="the contest server's TCP port (default 7000)")
    wt.add_argument("--tls", action="store_true", help="connect with TLS (also ARENA_TLS=1)")
    wt.add_argument("--tls-ca", metavar="PATH", help="the CA file that signed the server's certificate (default "
                    "$ARENA_TLS_CA, else the system's trust store)")
    wt.add_argument("--once", action="store_true", help="print one snapshot when the match ends, then exit")
    wt.add_argument("--name", default="watcher", help="your spectator name")
    wt.set_defaults(run=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    """``arena watch``: :func:`arena.tools.watch.main` with the command line's options."""
    return watch_main(args.host, args.port, args.match, once=args.once, name=args.name, tls=args.tls,
                      ca=args.tls_ca)
