"""``arena spectators add | list``: betting spectators and their bankrolls."""

from __future__ import annotations

import argparse

from rich.table import Table

from arena.bounds import int_in
from arena.cli.common import DB_HELP, Commands, add_command, make_console
from arena.errors import UserError
from arena.names import check_name, plain
from arena.net.spectate import SpectatorHub
from arena.store.sqlite import Store
from arena.wagers.desk import BettingDesk
from arena.wagers.ledger import MAX_DEPOSIT, WagerError


def add_commands(sub: Commands) -> None:
    """Add ``spectators`` to the ``arena`` command tree."""
    sp_ = add_command(sub, "spectators")
    ssub = sp_.add_subparsers(dest="spectators_command", required=True)
    sa = ssub.add_parser("add", help="register a betting spectator, credit a bankroll, print the token once")
    sa.add_argument("name")
    sa.add_argument("--deposit", type=int_in(1, MAX_DEPOSIT), default=10000,
                    help=f"bankroll in cents, 1 to {MAX_DEPOSIT} (default 10000 = 100.00)")
    sa.add_argument("--db", default="arena.db", help=DB_HELP)
    sl = ssub.add_parser("list", help="bankrolls and the house")
    sl.add_argument("--db", default="arena.db", help=DB_HELP)
    for leaf in (sa, sl):
        leaf.set_defaults(run=cmd_spectators)


def cmd_spectators(args: argparse.Namespace) -> int:
    """``arena spectators add | list``."""
    store = Store(args.db, create=args.spectators_command != "list")
    desk = BettingDesk(store, SpectatorHub())
    if args.spectators_command == "add":
        try:
            check_name(args.name, "spectator")  # before anything is written
            with store.transaction():  # the account and its bankroll, or neither
                token = store.add_spectator(args.name)
                balance = desk.deposit(args.name, args.deposit)
        except (ValueError, WagerError) as exc:  # a bad name or amount
            raise UserError(str(exc)) from None
        print(f"registered spectator {args.name}, bankroll {balance / 100:.2f}; token (shown once):\n{token}")
        return 0
    table = Table(title="gallery bankrolls")
    table.add_column("spectator")
    table.add_column("balance", justify="right")
    for name, cents in sorted(desk.ledger.accounts.items()):
        table.add_row(plain(name), f"{cents / 100:.2f}")
    table.add_row("(house)", f"{desk.ledger.house / 100:.2f}")
    make_console().print(table)
    return 0
