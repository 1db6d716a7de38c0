"""``arena replay`` and ``arena archive``: verify a match log (a file, a member of a daily archive
bundle, or a match key); apply the storage retention."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.text import Text

from arena.bounds import float_in
from arena.cli.common import DB_HELP, Commands, add_command, make_console
from arena.errors import Unavailable, UserError
from arena.match.log import ChainError, decompress
from arena.match.replay import ReplayError, verify_bytes
from arena.match.views import describe, public_view, seat_view
from arena.names import plain
from arena.schedule.contest import load_config
from arena.store.log_archive import (
    MAX_DAYS,
    RETENTION_KEYS,
    ArchiveBusy,
    Retention,
    apply_retention,
    describe_report,
    is_bundle_ref,
    parse_ref,
    read_stored,
)
from arena.store.postgres import is_url
from arena.store.postgres import shown as shown_db
from arena.store.sqlite import Store


def add_commands(sub: Commands) -> None:
    """Add ``replay``, ``archive`` to the ``arena`` command tree."""
    rp = add_command(sub, "replay")
    rp.add_argument("log", help="a match log (.jsonl.gz or .jsonl), a member of an archive bundle "
                    "(logs/archive/DAY.zip#MATCH.jsonl.gz), or a match key (t3-m0042: found through --db, as a file "
                    "or in its bundle)")
    rp.add_argument("--db", help="also check the log's last hash against the one recorded in this database "
                    "(an SQLite file or a postgresql:// URL; default for a match key: arena.db); a log archived "
                    "since is then read from its bundle")
    rp.add_argument("--public", action="store_true", help="print only what a spectator may see")
    rp.add_argument("--seat", type=int, choices=(0, 1),
                    help="print only what the author of the bot in this seat may see: its cards, its actions, "
                         "what it sent when it was charged, never the opponent's")
    rp.add_argument("--quiet", action="store_true", help="verify only, print the verdict")
    rp.set_defaults(run=cmd_replay)
    ac = add_command(sub, "archive")
    ac.add_argument("--config", metavar="CONTEST", help="take db, logs and [retention] from this contest file")
    ac.add_argument("--db", help="the database whose matches' logs are archived: " + DB_HELP
                    + "; default: the contest file's, or arena.db")
    ac.add_argument("--logs", help="the match log directory (default: the contest file's, or logs/)")
    for key, what in (("logs_days", "match logs stay files, then go into their day's bundle"),
                      ("bot_output_days", "bot output logs not written to are kept"),
                      ("events_days", "live events are kept"), ("failed_uploads_days", "failed uploads are kept"),
                      ("test_matches_days", "finished test matches are kept")):
        ac.add_argument(f"--{key.replace('_', '-')}", dest=key, type=float_in(0.0, MAX_DAYS), metavar="DAYS",
                        help=f"days {what} (default: [retention] {key} of the contest file, else "
                             f"{getattr(Retention(), key):g})")
    ac.set_defaults(run=cmd_archive)


def _looks_like_key(text: str) -> bool:
    """True if ``text`` given to ``arena replay`` is a match key (``t3-m0042``) rather than a path."""
    return not os.path.exists(text) and "/" not in text and "#" not in text and not text.endswith((".gz", ".jsonl"))


def _key_of(path: str) -> str:
    """The match key a log's file name (or bundle member) carries: ``t3-m0042.jsonl.gz`` -> ``t3-m0042``."""
    name = parse_ref(path)[1] if is_bundle_ref(path) or "#" in path else Path(path).name
    return name.removesuffix(".gz").removesuffix(".jsonl")


def _replay_store(db: str) -> Store:
    """The store ``arena replay`` reads hashes from; a missing SQLite file is a user error (not created)."""
    if not is_url(db) and not Path(db).exists():
        raise UserError(f"no database {db}: pass the contest's or tournament's --db")
    return Store(db)


def cmd_replay(args: argparse.Namespace) -> int:
    """``arena replay``: exit 0 if the log verifies, 1 (with the reason) if not. The log is a file,
    a member of an archive bundle, or a match key looked up in the database (its file, its bundle
    or its worker's copy); with a database its last hash must be the recorded one."""
    console = make_console()

    def failed(reason: str) -> int:
        console.print(Text.assemble(("not verified:", "red"), f" {reason}"))
        return 1

    expected = None
    where = args.log
    raw = None
    try:
        if _looks_like_key(args.log) or args.db:
            key = args.log if _looks_like_key(args.log) else _key_of(args.log)
            db = args.db or "arena.db"
            store = _replay_store(db)
            found = store.match_log_of(key)
            if found is None or found[1] is None:
                if not _looks_like_key(args.log) and not os.path.exists(args.log) and "#" not in args.log:
                    return failed(f"no such file {args.log}, and no match {key} with a recorded log in {shown_db(db)}")
                return failed(f"no recorded hash for {args.log} in {shown_db(db)} (match {key}: "
                              f"{'not in this database' if found is None else 'recorded without a log'})")
            log_path, expected = found
            if _looks_like_key(args.log) or not os.path.exists(args.log.split("#")[0]):
                if log_path is None:  # archived or moved since: where the database says
                    return failed(f"no log recorded for {key} in {shown_db(db)}")
                raw, where = store.match_log_bytes(key, log_path), log_path
                if raw is None:
                    return failed(f"the log of {key} is not at {log_path} (nor in the database)")
        if raw is None:
            raw = decompress(read_stored(args.log))
        lines, result = verify_bytes(raw, expected)
    except FileNotFoundError as exc:
        hint = "" if args.db else " (archived? add --db to read it from its day's bundle)"
        return failed(f"{exc.strerror}: {exc.filename}{hint}")
    except (OSError, ChainError, ReplayError, ValueError, KeyError) as exc:
        if isinstance(exc, UserError):
            raise
        return failed(str(exc))
    if not args.quiet:
        names = lines[0].get("bots", ["seat 0", "seat 1"])
        shown = public_view(lines) if args.public else seat_view(lines, args.seat) if args.seat is not None else lines
        for line in shown:
            console.print(describe(line, names), markup=False, highlight=False)
    chain = "hash chain intact" + (", last hash matches the database" if expected else "")
    source = f" (read from {where})" if where != args.log else ""
    judged = result.get("rechecked", 0)
    charges = f", {judged} charge{'s' if judged != 1 else ''} judged again" if judged else ""
    console.print(Text.assemble(("verified:", "green"), f" {len(lines)} lines{source}, {chain}, every event reproduced "
                                f"by the rules engine{charges}, result {result['reason']}"))
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    """``arena archive``: apply the retention once (:func:`arena.store.log_archive.apply_retention`)
    and say what it did in one line. Safe to interrupt: run it again to go on."""
    retention, db, logs = Retention(), "arena.db", "logs"
    if args.config:
        cfg = load_config(args.config)
        retention, db, logs = cfg.retention, cfg.db, cfg.logs
    db, logs = args.db or db, args.logs or logs
    for key in RETENTION_KEYS:
        if getattr(args, key) is not None:
            setattr(retention, key, getattr(args, key))
    if not Path(logs).is_dir():
        raise UserError(f"no match log directory {logs}: pass the one the matches were written to (--logs)")
    store = _replay_store(db)
    try:
        report = apply_retention(store, logs, retention)
    except ArchiveBusy as exc:
        raise Unavailable(str(exc)) from None
    except OSError as exc:  # a full disk, a read-only folder: nothing of the day in hand was deleted
        raise Unavailable(f"archive stopped: {exc}; no log was lost, run it again once this is fixed") from None
    finally:
        store.close()
    print(plain(describe_report(report, logs)), flush=True)
    return 0
