"""``arena db upgrade``: bring a database made by an older arena to this arena's schema
(:func:`arena.store.upgrade.upgrade`)."""

from __future__ import annotations

import argparse

from arena.cli.common import DB_HELP, Commands, add_command
from arena.store.upgrade import upgrade


def add_commands(sub: Commands) -> None:
    """Add ``db upgrade --db PATH|URL`` to the ``arena`` command tree."""
    db = add_command(sub, "db")
    dsub = db.add_subparsers(dest="db_command", required=True)
    up = dsub.add_parser("upgrade", help="bring a database made by an older arena to this arena's schema")
    up.add_argument("--db", default="arena.db", help=DB_HELP)
    up.set_defaults(run=cmd_db)


def cmd_db(args: argparse.Namespace) -> int:
    """``arena db upgrade``: prints one line; 0 on success (errors are
    :class:`arena.errors.DatabaseError`, one line)."""
    print(upgrade(args.db))
    return 0
