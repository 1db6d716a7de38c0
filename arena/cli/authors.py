"""``arena author register`` and ``arena bots upload | test | remote`` (a bot author, over HTTP);
``arena authors ...`` (the organiser, on the contest's database)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.authors import client
from arena.authors.accounts import TOKEN_SEPARATOR
from arena.cli.common import DB_HELP, Commands, add_command, make_console
from arena.errors import Unavailable, UserError
from arena.names import plain
from arena.schedule.launcher import command_problem, load_manifest
from arena.store.sqlite import Store


def add_commands(sub: Commands) -> None:
    """Add ``author``, ``authors`` to the ``arena`` command tree."""
    au = add_command(sub, "author")
    ausub = au.add_subparsers(dest="author_command", required=True)
    ar = ausub.add_parser("register", help="create your author account; prints your token once")
    ar.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    ar.add_argument("--name", required=True, help="your author name")
    ar.add_argument("--invitation", help="the code the organiser gave you (registration = \"invite\")")
    ar.set_defaults(run=cmd_author)
    aus = add_command(sub, "authors")
    aussub = aus.add_subparsers(dest="authors_command", required=True)
    for verb, text in (("add", "create an author account and print its token once"),
                       ("invite", "print a single-use invitation code"), ("list", "list authors and their bots"),
                       ("suspend", "suspend an author: no login, their bots withdrawn"),
                       ("resume", "lift a suspension"),
                       ("delete", "delete an author with their bots' registrations and code (results stay)")):
        cmd = aussub.add_parser(verb, help=text)
        if verb in ("add", "suspend", "resume", "delete"):
            cmd.add_argument("name")
        if verb == "invite":
            cmd.add_argument("--note", default="", help="who the code is for (kept with it)")
        cmd.add_argument("--db", default="arena.db", help=DB_HELP)
        cmd.set_defaults(run=cmd_authors)


def cmd_author(args: argparse.Namespace) -> int:
    """``arena author register``, ``arena bots upload | test | remote``: an author talking to a
    contest server over HTTP (:mod:`arena.authors.client`)."""
    console = make_console()
    if args.command == "author":
        token = client.register(args.server, args.name, args.invitation)
        print(f"registered author {args.name}; your token (shown once, store it now, e.g. in "
              f"{client.TOKEN_ENV}):\n{token}")
        return 0
    token = client.author_token(args.token)
    if args.bots_command == "test":
        state = client.test(args.server, token, args.name, args.vs, args.games, wait=not args.no_wait,
                            progress=lambda line: console.print(plain(line)))
        print_tests(console, args.server, state["tests"])
        return 0 if all(t["status"] != "aborted" for t in state["tests"]) else 1
    if args.bots_command == "remote":
        bot_token = client.remote(args.server, token, args.name)
        print(f"remote bot {args.name} is yours; its token (shown once; the bot sends it in hello):\n{bot_token}")
        return 0
    manifest = client.find_manifest(args.bot)
    if problem := command_problem(load_manifest(manifest)):
        raise Unavailable(f"{manifest}: the bot cannot start: {problem}; fix `command` in the manifest")
    state = client.upload(args.server, token, args.bot, wait=not args.no_wait,
                          progress=lambda line: console.print(plain(line)))
    print_upload(console, state)
    return 0 if state["status"] in ("passed", "queued", "checking") else 1


def print_upload(console: Console, state: dict) -> None:
    """An upload's status and the doctor's report (every field shown as plain text)."""
    report = state.get("report") or {}
    if report.get("checks"):
        table = Table(title=Text(f"arena doctor on the server: {state['bot']}"), show_lines=True)
        for col in ("check", "result", "details"):
            table.add_column(col, overflow="fold")
        for c in report["checks"]:
            table.add_row(plain(c["title"]), plain(c["status"], "green" if c["status"] == "PASS" else
                                                   "red" if c["status"] == "FAIL" else "yellow"), plain(c["details"]))
        console.print(table)
    if report.get("log_tail") and not report.get("ok"):
        console.print(plain("last lines of the bot's output:"))
        console.print(plain(report["log_tail"]))
    status = state["status"]
    line = {"passed": f"passed: {state['bot']} version {state.get('version')} enters the ladder",
            "failed": f"refused: {report.get('summary', '')}",
            }.get(status, f"{status}: the doctor has not decided yet; see the author page or run again later")
    console.print(plain(f"upload {state['id']} {line}", "green" if status == "passed" else
                        "red" if status == "failed" else "yellow"), soft_wrap=True)


def print_tests(console: Console, server: str, tests: list[dict]) -> None:
    """Test matches (:func:`arena.authors.accounts.test_summary`): one line each, then the total of
    those played, as plain text."""
    won = lost = drawn = 0
    for t in tests:
        score = "" if t["score"] is None else f" {t['score'][0]}-{t['score'][1]}"
        how = t["outcome"] or ""
        won, lost, drawn = won + (how == "won"), lost + (how == "lost"), drawn + (how == "draw")
        more = f" {t['reason']}" if t["status"] == "done" else (f": {t['detail']}" if t["detail"] else "")
        page = f"  {server.rstrip('/')}{t['replay']}" if t["replay"] else ""
        console.print(plain(f"x{t['id']} {t['bot']} (seat {t['seat']}) v {t['vs']}: {t['status']} {how}{score}{more}"
                            f"{page}"), soft_wrap=True)
    played = won + lost + drawn
    waiting = sum(t["status"] in ("queued", "playing") for t in tests)
    console.print(plain(f"{played} played: {won} won, {lost} lost, {drawn} drawn"
                        + (f"; {waiting} not over yet (see your author page)" if waiting else "")), soft_wrap=True)


def cmd_authors(args: argparse.Namespace) -> int:
    """``arena authors add | invite | list | suspend | resume | delete`` (the organiser, on the
    contest's database)."""
    import time

    store = Store(args.db, create=args.authors_command != "list")
    verb = args.authors_command
    if verb == "add":
        try:
            _, secret = store.add_author(args.name)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        print(f"registered author {args.name}; their token (shown once, hand it over):\n"
              f"{args.name}{TOKEN_SEPARATOR}{secret}")
    elif verb == "invite":
        code = store.add_invitation(args.note)
        print(f"invitation code (single use; `arena author register --invitation CODE`):\n{code}")
    elif verb in ("suspend", "resume"):
        if not store.set_author_status(args.name, "suspended" if verb == "suspend" else "active"):
            raise UserError(f"no author {args.name!r} in {args.db} (`arena authors list` shows them)", 1)
        print(f"{args.name} {'suspended: cannot log in, their bots are withdrawn' if verb == 'suspend' else 'active'}")
    elif verb == "delete":
        bots = store.delete_author(args.name)
        if bots is None:
            raise UserError(f"no author {args.name!r} in {args.db} (`arena authors list` shows them)", 1)
        print(f"deleted {args.name} and their bots {', '.join(bots) or '(none)'} (results stay in the database)")
    else:
        table = Table(title="authors")
        for col in ("author", "status", "bots", "registered"):
            table.add_column(col)
        for a in store.authors():
            bots = ", ".join(name for name, _ in store.owned_bots(a["id"]))
            table.add_row(plain(a["name"]), a["status"], plain(bots or "-"),
                          time.strftime("%Y-%m-%d %H:%M", time.gmtime(a["created_at"])))
        make_console().print(table)
    return 0
