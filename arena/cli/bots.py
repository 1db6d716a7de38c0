"""``arena bots add | submit | list | remove`` on the contest's database; ``arena bots upload |
test | remote`` (an author, over HTTP) are run by :func:`arena.cli.authors.cmd_author`."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from arena.cli.authors import cmd_author
from arena.cli.common import DB_HELP, Commands, add_command, make_console
from arena.errors import Unavailable, UserError
from arena.names import plain
from arena.schedule.launcher import command_problem, load_manifest
from arena.store import pages
from arena.store.archives import ArchiveError, pack
from arena.store.postgres import shown as shown_db
from arena.store.sqlite import Store


def add_commands(sub: Commands) -> None:
    """Add ``bots`` to the ``arena`` command tree."""
    bots = add_command(sub, "bots")
    bsub = bots.add_subparsers(dest="bots_command", required=True)
    add = bsub.add_parser("add", help="register a bot and print its secret token once")
    add.add_argument("name")
    add.add_argument("--db", default="arena.db", help=DB_HELP)
    sb = bsub.add_parser("submit", help="register a bot that the contest server launches itself")
    sb.add_argument("manifest", help="the bot's manifest (TOML)")
    sb.add_argument("--name", help="the name in the contest (default: the manifest's)")
    sb.add_argument("--sandbox", action="store_true",
                    help="launch it under bubblewrap even if the contest sets trust_bots (sandboxed is the default)")
    sb.add_argument("--db", default="arena.db", help=DB_HELP)
    ls = bsub.add_parser("list", help="list registered bots with their ladder rating")
    ls.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    ls.add_argument("--db", default="arena.db", help=DB_HELP)
    rm = bsub.add_parser("remove", help="unregister a bot (its results stay)")
    rm.add_argument("name")
    rm.add_argument("--db", default="arena.db", help=DB_HELP)
    up = bsub.add_parser("upload", help="(author) upload your bot to a contest server; the doctor checks it first")
    up.add_argument("bot", help="the bot's directory (its manifest.toml or only *.toml) or its manifest")
    up.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    up.add_argument("--token", help="your author token (default: $ARENA_AUTHOR_TOKEN)")
    up.add_argument("--no-wait", action="store_true", help="do not wait for the doctor's verdict")
    bt = bsub.add_parser("test", help="(author) unrated test matches of your bot against a ladder bot; waits and "
                         "prints the results")
    bt.add_argument("name", help="your bot")
    bt.add_argument("--vs", required=True, help="the ladder bot to play against")
    bt.add_argument("--games", type=int, default=2, help="how many games (default 2; a daily quota applies)")
    bt.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    bt.add_argument("--token", help="your author token (default: $ARENA_AUTHOR_TOKEN)")
    bt.add_argument("--no-wait", action="store_true", help="ask and return: the author page shows the results")
    rb = bsub.add_parser("remote", help="(author) get a token for your bot that connects over TCP")
    rb.add_argument("name")
    rb.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    rb.add_argument("--token", help="your author token (default: $ARENA_AUTHOR_TOKEN)")
    for leaf in (add, sb, ls, rm):
        leaf.set_defaults(run=cmd_bots)
    for leaf in (up, bt, rb):
        leaf.set_defaults(run=cmd_author)


def cmd_bots(args: argparse.Namespace) -> int:
    """``arena bots add | submit | list | remove``."""
    store = Store(args.db, create=args.bots_command not in ("list", "remove"))
    if args.bots_command == "add":
        try:
            token = store.add_bot(args.name)
        except ValueError as exc:  # a bad name (Store.add_bot's documented error)
            raise UserError(str(exc)) from None
        print(f"registered {args.name}; its token (shown once, store it now):\n{token}")
    elif args.bots_command == "submit":
        manifest = load_manifest(args.manifest)
        if problem := command_problem(manifest):
            raise Unavailable(f"{args.manifest}: the bot cannot start: {problem}; fix `command` in the manifest")
        name = args.name or manifest.name
        try:
            store.submit_bot(name, str(Path(args.manifest).resolve()), args.sandbox)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        print(f"submitted {name}: the contest server launches {args.manifest} and enters it in the ladder")
        try:  # what a worker on another host unpacks and runs (arena.schedule.worker)
            version = store.put_archive(name, pack(args.manifest))
            print(f"stored as archive version {version} for the workers")
        except (ArchiveError, OSError) as exc:
            print(plain(f"not stored as an archive ({exc}): only workers on this host can run it"))
    elif args.bots_command == "remove":
        if not store.remove_bot(args.name):
            raise UserError(f"no bot {args.name!r} in {shown_db(args.db)} (`arena bots list` shows them)", 1)
        print(f"removed {args.name} (its results stay in the database)")
    else:
        print_bots(store, args.game)
    return 0


def print_bots(store: Store, game: str) -> None:
    """``arena bots list``: every registered bot with its kind, its state as the contest server
    last published it (:mod:`arena.schedule.supervisor`: running, backoff, disabled, stopped; ``-`` if no
    server has published for 15 s), whether it is connected, its failures in a row, ladder Elo
    (``?`` after a provisional one: its interval unknown or wider than
    :data:`arena.stats.rating.PROVISIONAL_CI95`) and games; how old the ratings are (the ladder is
    fitted in the background); then the last output lines of each bot that is failing. Every
    statement it runs is in :mod:`arena.store.pages`."""
    import time

    status = pages.bot_status(store)
    fresh = bool(status) and time.time() - max(r["updated_at"] for r in status.values()) < 15
    age = pages.ratings_age(store, game)
    console = make_console()
    table = Table(title=f"bots ({game} ladder)" + ("" if fresh else "; no contest server running"),
                  caption=Text(pages.describe_age(age) + f"; ? marks a provisional Elo (interval over "
                               f"±{age['provisional_ci95']:.0f} or not known yet)"))
    for col in ("bot", "kind", "state", "connected", "failures", "Elo", "±95%", "games"):
        table.add_column(col, justify="left" if col in ("bot", "kind", "state", "connected") else "right")
    failing = []
    for row in pages.bots_listing(store, game):
        name, kind, elo, ci95 = row["bot"], row["kind"], row["elo"], row["ci95"]
        st = status.get(name) if fresh else None
        state = st["state"] if st and kind == "submitted" else "-"
        if st and st["state"] == "backoff" and st["next_launch"]:
            state += f" (next in {max(0, st['next_launch'] - time.time()):.0f} s)"
        connected = ("yes" if st and st["connected"] else "no") if fresh else "-"
        table.add_row(plain(name), kind, state, connected, str(st["failures"]) if st and kind == "submitted" else "-",
                      "-" if elo is None else f"{elo:.0f}" + ("?" if row["provisional"] else ""),
                      "-" if ci95 is None else f"{ci95:.0f}", str(row["games"]))
        if st and st["state"] in ("backoff", "disabled") and st["last_output"]:
            failing.append((name, st["last_output"].splitlines()))
    console.print(table)
    for name, lines in failing:
        console.print(f"last output of {name}:", markup=False, highlight=False)
        for line in lines:
            console.print(f"  | {line}", markup=False, highlight=False)
