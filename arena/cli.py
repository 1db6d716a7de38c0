"""The ``arena`` command line.

* ``arena tournament --bots sample_bots/*.toml --games N --seed S [--db arena.db]``: a
  round-robin over real TCP with an Elo table at the end.
* ``arena bench``: engine and referee throughput next to a raw loopback baseline.
* ``arena bots add NAME`` / ``arena bots list``: register a bot that connects on its own.
* ``arena replay LOG|MATCH_KEY`` / ``arena archive``: verify a match log (a file or a member of
  a daily archive bundle); apply the storage retention.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import trio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from arena.bounds import MAX_ELO, float_in, int_in, option_int
from arena.errors import INTERRUPTED, USAGE, Unavailable, UserError, find_user_error, interrupted
from arena.gc_policy import tune_for_server
from arena.match.limits import LIMITS
from arena.match.referee import MatchConfig
from arena.names import check_name, escape, plain
from arena.net.tls import exposure_warning
from arena.schedule.formats import FORMATS
from arena.schedule.formats.duplicate_deals import DEFAULT_DEALS
from arena.schedule.launcher import command_problem, load_manifest, sandbox_problem
from arena.schedule.tournament import TournamentConfig, TournamentReport, run_tournament
from arena.store import upgrade as db_upgrade
from arena.store.log_archive import (
    MAX_DAYS,
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
from arena.wagers.ledger import MAX_DEPOSIT
from protocol.messages import Rules, TimeControl

if TYPE_CHECKING:  # the contest's modules load only for `arena serve`
    from arena.schedule.contest import ContestConfig


def make_console() -> Console:
    """A rich console; when output is not a terminal (a pipe, a CI log) it is 140 columns wide
    so that tables are not wrapped at rich's default of 80."""
    console = Console()
    return console if console.is_terminal else Console(width=140)


def _target(text: str) -> int | str:
    if text == "turn-up":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("target is 5, 7 or turn-up") from None


def _at_least(low: int):  # noqa: ANN202 - an argparse type
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


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block) and exit status 2 (:data:`USAGE`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


DB_HELP = ("the database: an SQLite file (default arena.db) or a postgresql://user@host:port/dbname URL "
           "(password from PGPASSFILE, never on the command line; docs/contests.md)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``arena`` command."""
    parser = _Parser(prog="arena", description="Écarté & Piquet bot arena",
                     epilog="Exit statuses: 0 success, 1 a check failed, 2 bad command line, configuration or "
                            "manifest, 3 a port, program or bot unavailable, 4 database problem, 130 interrupted "
                            "(docs/contests.md).")
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tournament", help="run a tournament of local bots over TCP")
    t.add_argument("--bots", nargs="+", metavar="MANIFEST", help="bot manifest TOML files")
    t.add_argument("--resume", nargs="?", type=option_int("resume"), const=0, metavar="ID",
                   help="finish an interrupted tournament of --db (default: the newest unfinished)")
    t.add_argument("--sandbox", action="store_true",
                   help="the default: each bot runs under bubblewrap (kept for old command lines)")
    t.add_argument("--trust-bots", action="store_true",
                   help="UNSAFE: run the bots as plain processes, without bubblewrap (only for code you trust)")
    t.add_argument("--games", type=option_int("games"), default=10, help="matches per pair (default 10)")
    t.add_argument("--seed", type=option_int("seed"), default=1, help="tournament seed (default 1)")
    t.add_argument("--db", default="arena.db", help=DB_HELP)
    t.add_argument("--logs", default="logs", help="match log directory (default logs/)")
    t.add_argument("--format", default="round-robin", choices=list(FORMATS),
                   help="round-robin (default), gauntlet, rotation (écarté simple), chouette, or duplicate-deals "
                        "(duplicate pairs of fixed-length matches, rated on twin deals)")
    t.add_argument("--deals", type=int, default=0,
                   help="every match is exactly this many deals, no target (default: the rules' own match; "
                        "duplicate-deals: 6)")
    t.add_argument("--hero", help="gauntlet: the bot that plays all the others (default: the first)")
    t.add_argument("--no-duplicate", dest="duplicate", action="store_false",
                   help="do not play pairs of matches with the same deals and seats swapped")
    t.add_argument("--concurrency", type=option_int("concurrency"), default=os.cpu_count() or 2,
                   help="matches played at once (default: the number of cores); each bot plays one match at a "
                        "time, so at most half the bots' worth of matches run together")
    t.add_argument("--workers", type=option_int("workers"), default=os.cpu_count() or 2, metavar="N",
                   help="worker processes that play the matches, each with its own copies of the bots (default: "
                        "the number of cores); 0: every match in this process (--concurrency at once)")
    t.add_argument("--move-ms", type=option_int("move_ms"), default=LIMITS.move_ms,
                   help=f"time per decision in ms (default {LIMITS.move_ms})")
    t.add_argument("--bank-ms", type=option_int("bank_ms"), default=LIMITS.bank_ms,
                   help=f"time bank per match in ms (default {LIMITS.bank_ms})")
    t.add_argument("--grace-ms", type=option_int("grace_ms"), default=LIMITS.grace_ms,
                   help=f"transport grace in ms (default {LIMITS.grace_ms})")
    t.add_argument("--on-timeout", choices=["forfeit", "auto"], default=LIMITS.on_timeout)
    t.add_argument("--max-strikes", type=option_int("max_strikes"), default=LIMITS.max_strikes)
    t.add_argument("--max-illegal", type=option_int("max_illegal"), default=LIMITS.max_illegal,
                   help="illegal actions tolerated per match")
    t.add_argument("--target", type=_target, default=5, help="5, 7 or turn-up (ecarte.md §E7.1)")
    t.add_argument("--manches", type=int, choices=[1, 3], default=1, help="1 = sèche, 3 = liée")
    t.add_argument("--deal-pattern", choices=["3-2", "2-3", "2-2-1"], default="3-2")
    t.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    t.add_argument("--pack", type=int, choices=[32, 36], default=32, help="Piquet: 32 or 36 cards")
    t.add_argument("--packets", type=int, choices=[2, 3], default=2, help="Piquet: deal in packets of 2 or 3")
    t.add_argument("--scoring", choices=["rubicon", "cent"], default="rubicon", help="Piquet: rubicon or cent")
    t.add_argument("--no-pin", action="store_true",
                   help="leave the workers unpinned (by default each is pinned to a core with its bots: "
                        "docs/contests.md, 'What a worker runs')")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("--progress-every", type=_at_least(1), default=10, metavar="N",
                   help="when stdout is not a terminal: a score line every N matches or 30 s (default 10)")
    t.add_argument("--elo-every", type=_at_least(1), default=200, metavar="N",
                   help="when stdout is not a terminal: the running Elo every N matches (default 200)")

    wk = sub.add_parser("worker", help="play scheduled matches of a tournament or contest from its database")
    wk.add_argument("--db", default="arena.db", help="the database of the tournament or contest: " + DB_HELP)
    wk.add_argument("--tournament", type=option_int("tournament"), metavar="ID",
                    help="only this tournament's matches, and exit once it is finished (default: any, until stopped)")
    wk.add_argument("--logs", help="match log directory (default: the tournament's)")
    wk.add_argument("--id", help="this worker's name in the queue (default host:pid)")
    wk.add_argument("--lease-s", type=float_in(1.0, 3600.0), default=30.0,
                    help="seconds without renewal after which this worker's match is played again by another "
                         "(default 30)")
    wk.add_argument("--trust-bots", action="store_true",
                    help="UNSAFE: run bots unsandboxed when their tournament allows it (trusted code only)")
    wk.add_argument("--slots", type=option_int("slots"), default=1,  # arena.schedule.worker.SLOTS
                    help="matches played at once, each with its own copies of the bots (default 1: one "
                         "bot on the clock per worker, so one per core with the default --workers)")
    wk.add_argument("--cpu", type=_at_least(0), metavar="N",
                    help="pin this worker and the bots it launches to core N: its matches then run on that core "
                         "alone (arena tournament/serve --workers pin their workers to the cores in turn; default: "
                         "not pinned)")
    wk.add_argument("--quiet", action="store_true", help="no line per match")

    sp = sub.add_parser("sprt", help="sequential test of one bot against another over duplicate pairs")
    sp.add_argument("--bot", required=True, metavar="MANIFEST", help="the bot under test")
    sp.add_argument("--vs", required=True, metavar="MANIFEST", help="the reference bot")
    sp.add_argument("--elo0", type=float_in(-MAX_ELO, MAX_ELO), default=0.0,
                    help="H0: the bot is this many Elo better (default 0)")
    sp.add_argument("--elo1", type=float_in(-MAX_ELO, MAX_ELO), default=20.0,
                    help="H1: the bot is this many Elo better (default 20)")
    sp.add_argument("--alpha", type=float_in(0.0, 1.0), default=0.05)
    sp.add_argument("--beta", type=float_in(0.0, 1.0), default=0.05)
    sp.add_argument("--max-pairs", type=option_int("max_pairs"), default=5000,
                    help="stop after this many pairs (default 5000)")
    sp.add_argument("--seed", type=option_int("seed"), default=1)
    sp.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    sp.add_argument("--move-ms", type=option_int("move_ms"), default=LIMITS.move_ms)
    sp.add_argument("--db", default="arena.db", help=DB_HELP)
    sp.add_argument("--logs", default="logs")
    sp.add_argument("--trust-bots", action="store_true",
                    help="UNSAFE: run the bots as plain processes, without bubblewrap")

    wt = sub.add_parser("watch", help="follow a match live in the terminal, as a spectator")
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

    dr = sub.add_parser("doctor", help="conformance check of a bot before you submit it")
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

    rp = sub.add_parser("replay", help="verify a match log (hash chain, rules engine, result) and print it")
    rp.add_argument("log", help="a match log (.jsonl.gz or .jsonl), a member of an archive bundle "
                    "(logs/archive/DAY.zip#MATCH.jsonl.gz), or a match key (t3-m0042: found through --db, as a file "
                    "or in its bundle)")
    rp.add_argument("--db", help="also check the log's last hash against the one recorded in this database "
                    "(an SQLite file or a postgresql:// URL; default for a match key: arena.db); a log archived "
                    "since is then read from its bundle")
    rp.add_argument("--public", action="store_true", help="print only what a spectator may see")
    rp.add_argument("--quiet", action="store_true", help="verify only, print the verdict")

    ac = sub.add_parser("archive", help="apply the retention: match logs older than it into one bundle per day, "
                        "old bot output, live events and failed uploads deleted (docs/contests.md, 'Running a season')")
    ac.add_argument("--config", metavar="CONTEST", help="take db, logs and [retention] from this contest file")
    ac.add_argument("--db", help="the database whose matches' logs are archived: " + DB_HELP
                    + "; default: the contest file's, or arena.db")
    ac.add_argument("--logs", help="the match log directory (default: the contest file's, or logs/)")
    for key, what in (("logs_days", "match logs stay files, then go into their day's bundle"),
                      ("bot_output_days", "bot output logs not written to are kept"),
                      ("events_days", "live events are kept"), ("failed_uploads_days", "failed uploads are kept")):
        ac.add_argument(f"--{key.replace('_', '-')}", dest=key, type=float_in(0.0, MAX_DAYS), metavar="DAYS",
                        help=f"days {what} (default: [retention] {key} of the contest file, else "
                             f"{getattr(Retention(), key):g})")

    b = sub.add_parser("bench", help="measure engine and referee throughput")
    b.add_argument("--deals", type=option_int("deals"), default=20000, help="self-play deals for the engine figure")
    b.add_argument("--decisions", type=option_int("decisions"), default=20000, help="decisions for the TCP figures")
    b.add_argument("--flood-s", type=float_in(0.0, 3600.0), default=5.0,
                   help="seconds per window of the flood figures (wrong-token hellos, idle spectators); 0 skips them")
    b.add_argument("--server-s", type=float_in(0.0, 600.0), default=10.0,
                   help="seconds per phase of the instant C bots' figures (one match, 100 at once); 0 skips them")
    b.add_argument("--scale", action="store_true",
                   help="only the fair-clock study: 1,000 then 2,000 concurrent matches of instant C bots")
    b.add_argument("--workers-games", type=_at_least(0), default=20, metavar="N",
                   help="workers phase: matches per pair of the 8-bot tournament played on 1, then 2 workers, then "
                        "in one process (default 20: 560 matches, of which each worker's start-up - its bots "
                        "launched - is a small part; 0 skips it)")
    b.add_argument("--db", help="workers phase: the database (e.g. postgresql://...; default a temporary SQLite file)")
    b.add_argument("--only-workers", action="store_true", help="run only the workers phase")

    bots = sub.add_parser("bots", help="manage registered bots")
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
    rb = bsub.add_parser("remote", help="(author) get a token for your bot that connects over TCP")
    rb.add_argument("name")
    rb.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    rb.add_argument("--token", help="your author token (default: $ARENA_AUTHOR_TOKEN)")

    au = sub.add_parser("author", help="your bot-author account on a contest server (self-service)")
    ausub = au.add_subparsers(dest="author_command", required=True)
    ar = ausub.add_parser("register", help="create your author account; prints your token once")
    ar.add_argument("--server", required=True, help="the contest's web address, e.g. http://host:8080")
    ar.add_argument("--name", required=True, help="your author name")
    ar.add_argument("--invitation", help="the code the organiser gave you (registration = \"invite\")")
    aus = sub.add_parser("authors", help="(organiser) bot authors: add, invite, list, suspend, resume, delete")
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

    sp_ = sub.add_parser("spectators", help="betting spectators (gallery wagers, ecarte.md §E9.1)")
    ssub = sp_.add_subparsers(dest="spectators_command", required=True)
    sa = ssub.add_parser("add", help="register a betting spectator, credit a bankroll, print the token once")
    sa.add_argument("name")
    sa.add_argument("--deposit", type=int_in(1, MAX_DEPOSIT), default=10000,
                    help=f"bankroll in cents, 1 to {MAX_DEPOSIT} (default 10000 = 100.00)")
    sa.add_argument("--db", default="arena.db", help=DB_HELP)
    sl = ssub.add_parser("list", help="bankrolls and the house")
    sl.add_argument("--db", default="arena.db", help=DB_HELP)

    db_upgrade.add_parser(sub, DB_HELP)

    sv = sub.add_parser("serve", help="run a long-lived contest server (TCP for bots and spectators, HTTP)")
    sv.add_argument("--config", required=True, help="contest TOML file (see docs/contest.example.toml)")
    sv.add_argument("--workers", type=option_int("workers"), metavar="N",
                    help="worker processes that play the matches between submitted bots (default: the contest "
                         "file's workers, 0: all in this process)")
    return parser


def print_report(console: Console, report: TournamentReport) -> None:
    """Print the leaderboard (rank, bot, Elo ± 95%, games, wins, losses, draws, score %, and the
    ranks not separated from it at 95%: the interval of the rating difference, from the
    covariance, contains 0, i.e. the likelihood of superiority is between 2.5% and 97.5%), the
    likelihood-of-superiority matrix, and for a chouette its reigns and bankrolls."""
    fit = report.fit
    unit = "duplicate pairs, robust intervals" if report.paired else "single matches, robust intervals"
    if report.twin_deals:
        unit = (f"duplicate deals: pairs of {report.twin_deals}-deal matches scored deal by deal, Elo per twin deal, "
                "games = twin deals, robust intervals")
    table = Table(title=f"Tournament t{report.tournament_id}: Elo (maximum likelihood, mean 1500; {unit})")
    for col, just in (("rank", "right"), ("bot", "left"), ("Elo", "right"), ("±95%", "right"),
                      ("games", "right"), ("wins", "right"), ("losses", "right"), ("draws", "right"),
                      ("score %", "right"), ("not separated from", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i, r in enumerate(fit.ratings, 1):
        overlaps = [
            str(j) for j, o in enumerate(fit.ratings, 1) if o.name != r.name and not fit.separated(r.name, o.name)
        ]
        table.add_row(str(i), plain(r.name), f"{r.elo:.0f}", f"{r.ci95:.0f}", str(r.games), str(r.wins),
                      str(r.losses), str(r.draws), f"{100 * r.score:.1f}", ",".join(overlaps) or "-")
    console.print(table)
    if len(fit.ratings) > 2:
        los = Table(title="Likelihood of superiority (row better than column), %")
        los.add_column("")
        for r in fit.ratings:
            los.add_column(plain(r.name), justify="right")
        for r in fit.ratings:
            los.add_row(plain(r.name), *("" if r.name == c.name else f"{100 * fit.los(r.name, c.name):.1f}"
                                  for c in fit.ratings))
        console.print(los)
    if report.reigns:
        reigns = Table(title=f"Chouette reigns (house levy {report.house} chips)")
        for col in ("#", "chouetteur", "price", "matches", "challengers beaten", "losses"):
            reigns.add_column(col, justify="left" if col == "chouetteur" else "right")
        for i, rg in enumerate(report.reigns, 1):
            reigns.add_row(str(i), plain(rg.chouetteur), str(rg.price), str(rg.matches), str(rg.beaten), str(rg.losses))
        console.print(reigns)
        console.print(plain("bankrolls: " + ", ".join(f"{k} {v}" for k, v in sorted(report.bankrolls.items()))))
    reasons = ", ".join(f"{k}: {v}" for k, v in sorted(report.reasons.items()))
    console.print(plain(
        f"{report.matches} matches in {report.seconds:.1f} s "
        f"({report.matches / max(report.seconds, 1e-9):.1f} matches/s); ended by {reasons}"
    ))


def check_tournament(config: TournamentConfig, manifests: list) -> None:
    """Refuse a tournament that cannot be played, before any bot is launched: duplicate bot
    names, an unknown ``--hero``, too few bots for the format, rule options the game does not
    have, a bad time control, no working bwrap for the sandbox (the default; ``--trust-bots``
    opts out). Raises :class:`UserError`."""
    from arena.games import validate_rules
    from arena.match.clock import Clock
    from arena.schedule.formats import make_format

    names = [m.name for m in manifests]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"two manifests use the bot name {', '.join(map(repr, twice))}: give each bot its own "
                        "`name` in its manifest")
    if config.format == "gauntlet" and config.hero is not None and config.hero not in names:
        raise UserError(f"--hero {config.hero!r} is not one of the bots ({', '.join(names)}): "
                        "pass the name of one of them")
    try:
        make_format(config.format, names, config.games, config.seed, config.duplicate, config.hero)
    except ValueError as exc:
        raise UserError(f"--format {config.format}: {exc}") from None
    try:
        validate_rules(config.match.game, config.match.rules)
    except ValueError as exc:
        raise UserError(f"{config.match.game} rules: {exc}") from None
    try:
        Clock(config.match.time)
    except ValueError as exc:
        raise UserError(f"time control: {exc}") from None
    if (config.sandbox or not config.trust_bots) and (problem := sandbox_problem()) is not None:
        raise Unavailable(problem)


def resume_command(argv: Sequence[str], tournament_id: int | None) -> str:
    """The command that finishes an interrupted tournament: ``arena tournament --resume ID``
    followed by every option the interrupted run was given (``argv``, from ``tournament`` on),
    except ``--bots`` and an earlier ``--resume`` (the stored tournament names its bots), quoted
    for a POSIX shell."""
    words = list(argv)
    if "tournament" in words:
        words = words[words.index("tournament") + 1:]
    kept: list[str] = []
    skipping = False
    for i, word in enumerate(words):
        if word.startswith("-"):
            skipping = word in ("--bots", "--resume") or word.startswith(("--bots=", "--resume="))
            if skipping:
                continue
        elif skipping and (words[i - 1] != "--resume" or word.isdigit()):
            continue
        else:
            skipping = False
        kept.append(word)
    resume = ["--resume", str(tournament_id)] if tournament_id else ["--resume"]
    return shlex.join(["arena", "tournament", *resume, *kept])


def cmd_tournament(args: argparse.Namespace) -> int:
    """``arena tournament``: run it, show progress, print the Elo table. Ctrl-C stops it with
    the ``--resume`` command that finishes it (exit 130)."""
    console = make_console()
    store = Store(args.db)
    resume = None
    if args.resume is not None:
        row = store.tournament(args.resume or None)
        if row is None:
            what = f"no tournament t{args.resume}" if args.resume else "no unfinished tournament"
            raise UserError(f"nothing to resume: {what} in {shown_db(args.db)}")
        resume = row["id"]
        try:
            config = msgspec.convert(row["config"], TournamentConfig)
        except msgspec.ValidationError as exc:
            raise UserError(f"tournament t{resume} in {shown_db(args.db)} was made by another version of arena and "
                            f"cannot be resumed by this one ({exc}); start a new tournament") from None
        manifests = [load_manifest(p) for p in config.manifests]
        console.print(f"resuming tournament t{resume}: {len(store.pending_matches(resume))} matches left")
    else:
        if not args.bots:
            raise UserError("--bots is required (or --resume to finish an interrupted tournament)")
        manifests = [load_manifest(p) for p in args.bots]
        config = TournamentConfig(
            format=args.format,
            games=args.games,
            duplicate=args.duplicate,
            hero=args.hero,
            seed=args.seed,
            concurrency=args.concurrency,
            logs_dir=args.logs,
            sandbox=args.sandbox,
            trust_bots=args.trust_bots,
            manifests=[str(Path(p).resolve()) for p in args.bots],
            match=MatchConfig(
                game=args.game,
                rules=Rules(deal_pattern=args.deal_pattern, target=args.target, manches=args.manches,
                            pack=args.pack, packets=args.packets, scoring=args.scoring,
                            deals=args.deals or (DEFAULT_DEALS if args.format == "duplicate-deals" else 0)),
                time=TimeControl(move_ms=args.move_ms, bank_ms=args.bank_ms, grace_ms=args.grace_ms),
                on_timeout=args.on_timeout,
                max_strikes=args.max_strikes,
                max_illegal=args.max_illegal,
            ),
        )
    if args.trust_bots:  # also for --resume: the organiser's choice of this run
        config.trust_bots, config.sandbox = True, False
    check_tournament(config, manifests)
    progress_lines = None
    if not console.is_terminal and not args.quiet:  # a log file: plain lines, not a redrawn bar
        from arena.schedule.progress import PlainProgress

        progress_lines = PlainProgress(args.progress_every, 30.0, args.elo_every,
                                       out=lambda text: print(text, flush=True))
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, disable=args.quiet or progress_lines is not None,
    )
    task = None

    def on_start(tid: int, n: int) -> None:
        nonlocal task
        task = progress.add_task(f"t{tid} {config.format}", total=n, last="")
        if progress_lines is not None:
            progress_lines.start(n)
            print(f"tournament t{tid}: {n} matches to play", flush=True)

    def on_result(row, result) -> None:  # type: ignore[no-untyped-def]
        winner = (row.bot0, row.bot1)[result.winner] if result.winner is not None else "nobody"
        progress.update(task, advance=1, last=escape(f"{row.bot0} v {row.bot1}: {winner} ({result.reason})"))
        if progress_lines is not None:
            progress_lines.on_result(row, result)

    from arena.schedule.worker import LocalWorkers

    console.print(Text.assemble((f"{len(manifests)} bots", "bold"), ": " + ", ".join(
        f"{m.name} ({m.language})" for m in manifests)))
    tune_for_server()  # start-up is over: a server's garbage collection (arena/gc_policy.py)
    try:
        with progress:
            report = trio.run(run_tournament, store, manifests, config, on_start, on_result, resume, None,
                              LocalWorkers(args.workers, pin=not args.no_pin) if args.workers else None)
    except BaseException as exc:
        if getattr(args, "debug", False) or not interrupted(exc) or find_user_error(exc) is not None:
            raise
        tid = resume or store.newest_tournament()
        console.print(plain(f"interrupted: every finished match is in {shown_db(args.db)}; the rest (including the "
                            f"one in play) is played by `{resume_command(getattr(args, 'argv', []), tid)}`"),
                      soft_wrap=True)
        return INTERRUPTED
    print_report(console, report)
    console.print(plain(f"results in {shown_db(args.db)}, match logs in {args.logs}/t{report.tournament_id}/"))
    store.close()
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """``arena worker``: claim and play matches until the tournament is finished (with
    ``--tournament``) or until interrupted (:mod:`arena.schedule.worker`)."""
    from arena.schedule.worker import Worker, open_db, pin_to_cpu

    store = open_db(args.db)
    if args.tournament is not None and store.tournament(args.tournament) is None:
        raise UserError(f"no tournament {args.tournament} in {shown_db(args.db)}")
    def said(row, result) -> None:  # type: ignore[no-untyped-def]
        winner = (row.bot0, row.bot1)[result.winner] if result.winner is not None else "nobody"
        print(plain(f"{row.match_key}: {row.bot0} v {row.bot1}: {winner} ({result.reason})"), flush=True)

    worker = Worker(store, args.id, args.tournament, lease_s=args.lease_s, trust_bots=args.trust_bots,
                    logs=args.logs, exit_when_finished=args.tournament is not None,
                    on_result=None if args.quiet else said, slots=args.slots)
    if not args.quiet:
        print(plain(f"worker {worker.id}: playing the matches queued in {shown_db(args.db)}"), flush=True)
    if args.cpu is not None:
        pin_to_cpu(args.cpu)  # before any bot is launched: they inherit it
    tune_for_server()  # start-up is over: a server's garbage collection (arena/gc_policy.py), in each worker too
    played = trio.run(worker.run, True)
    if not args.quiet:
        print(plain(f"worker {worker.id}: {played} matches committed, {worker.lost} leases lost"), flush=True)
    store.close()
    return 0


def cmd_sprt(args: argparse.Namespace) -> int:
    """``arena sprt``: play duplicate pairs until the GSPRT accepts H0 or H1; print the
    log-likelihood ratio after every pair."""
    from arena.stats.sprt import SPRT, SprtFormat

    console = make_console()
    bot, vs = load_manifest(args.bot), load_manifest(args.vs)
    if bot.name == vs.name:
        raise UserError(f"--bot and --vs are both {bot.name!r}: test a bot against a different one")
    try:
        test = SPRT(args.elo0, args.elo1, args.alpha, args.beta, outcomes=(0, 0.5, 1, 1.5, 2))
    except ValueError as exc:
        raise UserError(f"sprt: {exc}") from None
    lo, hi = test.bounds
    console.print(plain(f"SPRT {bot.name} vs {vs.name}: H0 elo={args.elo0:g}, H1 elo={args.elo1:g}, "
                  f"alpha={args.alpha:g}, beta={args.beta:g}; bounds [{lo:.2f}, {hi:.2f}]"))
    fmt = SprtFormat(bot.name, vs.name, args.seed, test, args.max_pairs, on_pair=lambda t: print(t.summary()))
    if not args.trust_bots and (problem := sandbox_problem()) is not None:
        raise Unavailable(problem)
    config = TournamentConfig(
        format="sprt", games=2 * args.max_pairs, seed=args.seed, concurrency=1, logs_dir=args.logs,
        trust_bots=args.trust_bots,
        manifests=[str(Path(args.bot).resolve()), str(Path(args.vs).resolve())],
        match=MatchConfig(game=args.game, time=TimeControl(move_ms=args.move_ms)),
    )
    store = Store(args.db)
    report = trio.run(run_tournament, store, [bot, vs], config, None, None, None, fmt)
    verdict = {"H1": f"H1 accepted: {bot.name} is at least {args.elo1:g} Elo better",
               "H0": f"H0 accepted: {bot.name} is not {args.elo1:g} Elo better (at most {args.elo0:g})"}
    console.print(plain(verdict.get(test.status(), f"no decision after {test.pairs} pairs")))
    console.print(plain(f"{report.matches} matches in {report.seconds:.1f} s; results in {shown_db(args.db)}"))
    store.close()
    return 0


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
    from arena.match.log import ChainError, ReplayError, decompress, describe, public_view, verify_bytes

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
        for line in public_view(lines) if args.public else lines:
            console.print(describe(line, names), markup=False, highlight=False)
    chain = "hash chain intact" + (", last hash matches the database" if expected else "")
    source = f" (read from {where})" if where != args.log else ""
    console.print(Text.assemble(("verified:", "green"), f" {len(lines)} lines{source}, {chain}, every event reproduced "
                                f"by the rules engine, result {result['reason']}"))
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    """``arena archive``: apply the retention once (:func:`arena.store.log_archive.apply_retention`)
    and say what it did in one line. Safe to interrupt: run it again to go on."""
    retention, db, logs = Retention(), "arena.db", "logs"
    if args.config:
        from arena.schedule.contest import load_config

        cfg = load_config(args.config)
        retention, db, logs = cfg.retention, cfg.db, cfg.logs
    db, logs = args.db or db, args.logs or logs
    for key in ("logs_days", "bot_output_days", "events_days", "failed_uploads_days"):
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
        from arena.store.archives import ArchiveError, pack

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

    from arena.store import pages

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


def cmd_author(args: argparse.Namespace) -> int:
    """``arena author register``, ``arena bots upload``, ``arena bots remote``: an author talking to a
    contest server over HTTP (:mod:`arena.net.author_client`)."""
    from arena.net import author_client as client

    console = make_console()
    if args.command == "author":
        token = client.register(args.server, args.name, args.invitation)
        print(f"registered author {args.name}; your token (shown once, store it now, e.g. in "
              f"{client.TOKEN_ENV}):\n{token}")
        return 0
    token = client.author_token(args.token)
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


def cmd_authors(args: argparse.Namespace) -> int:
    """``arena authors add | invite | list | suspend | resume | delete`` (the organiser, on the
    contest's database)."""
    import time

    from arena.net.accounts import TOKEN_SEPARATOR

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


def cmd_spectators(args: argparse.Namespace) -> int:
    """``arena spectators add | list``."""
    from arena.net.spectate import SpectatorHub
    from arena.wagers.desk import BettingDesk

    store = Store(args.db, create=args.spectators_command != "list")
    desk = BettingDesk(store, SpectatorHub())
    if args.spectators_command == "add":
        from arena.wagers.ledger import WagerError

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


def _serve_paths(config: ContestConfig) -> list[str]:
    """What ``arena serve`` creates on its first start with ``config``: the SQLite database
    (and its WAL files), the logs and uploads folders."""
    paths = [config.logs, config.uploads.dir]
    if not is_url(config.db):
        paths += [config.db, f"{config.db}-wal", f"{config.db}-shm"]
    return paths


def cmd_serve(args: argparse.Namespace) -> int:
    """``arena serve``: run until SIGTERM / Ctrl-C, then shut down cleanly."""
    from arena.schedule.contest import Contest, load_config

    console = make_console()
    config = load_config(args.config)
    if args.workers is not None:
        config.workers = args.workers
    if not config.trust_bots and (problem := sandbox_problem()) is not None:
        line = problem.replace("pass --trust-bots", "set trust_bots = true")
        console.print(plain(f"submitted bots will not be launched: {line}", "red"), soft_wrap=True)
    made = [p for p in _serve_paths(config) if not os.path.lexists(p)]  # removed again if the start fails
    contest = Contest(config)
    tls = config.server.tls_cert is not None  # the web page's HTTPS comes from the same files
    if (warning := exposure_warning(config.server.host, tls, config.http_host, tls)) is not None:
        console.print(plain(warning, "yellow"), soft_wrap=True)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            ports = await nursery.start(contest.run)
            tune_for_server()  # start-up is over: a server's garbage collection (arena/gc_policy.py)
            tcp, http = ("tls", "https") if tls else ("tcp", "http")
            console.print(plain(f"{config.name}: bots and spectators on {tcp}://{config.server.host}:{ports[0]}, "
                          f"web and /metrics on {http}://{config.http_host}:{ports[1]}/  (Ctrl-C or SIGTERM to stop)"))

    try:
        trio.run(main)
    except BaseException:
        if contest.http_port is None:  # it never served: leave no new database or folder behind
            contest.store.close()
            for path in made:
                shutil.rmtree(path) if os.path.isdir(path) else Path(path).unlink(missing_ok=True)
        raise
    done = contest.store.finished_matches(contest.tournament_id)
    if fault := contest.unsaved or contest.health.reason:  # a full or read-only disk: nothing recorded is lost
        what, _, why = fault.partition(": ")
        raise Unavailable(f"stopped while the {what} could not be written ({why}): {done} matches recorded in "
                          f"{shown_db(config.db)}, none lost; the matches left in play are aborted at the next "
                          "start; free the disk (or make it writable) before starting again")
    console.print(plain(f"stopped cleanly: {done} matches recorded in {shown_db(config.db)}"))
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "db":
        return db_upgrade.run(args)
    if args.command == "tournament":
        return cmd_tournament(args)
    if args.command == "watch":
        from arena.tools.watch import main as watch_main

        return watch_main(args.host, args.port, args.match, once=args.once, name=args.name, tls=args.tls,
                          ca=args.tls_ca)
    if args.command == "doctor":
        from arena.tools.doctor import main as doctor_main

        if args.sandbox and (args.tcp or args.tls):
            raise UserError("--sandbox (stdin/stdout, the default) cannot go with --tcp or --tls: choose one")
        return doctor_main(args.manifest, move_ms=args.move_ms, verbose=args.verbose,
                           sandbox=not (args.tcp or args.tls), game=args.game, tls=args.tls)
    if args.command == "replay":
        return cmd_replay(args)
    if args.command == "archive":
        return cmd_archive(args)
    if args.command == "sprt":
        return cmd_sprt(args)
    if args.command == "worker":
        return cmd_worker(args)
    if args.command == "bench":
        from arena.tools.bench import main as bench_main

        return bench_main(args)
    if args.command == "bots" and args.bots_command in ("upload", "remote") or args.command == "author":
        return cmd_author(args)
    if args.command == "authors":
        return cmd_authors(args)
    if args.command == "bots":
        return cmd_bots(args)
    if args.command == "serve":
        return cmd_serve(args)
    if args.command == "spectators":
        return cmd_spectators(args)
    return USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script. A :class:`arena.errors.UserError` raised
    anywhere (also inside trio's exception groups) is printed as one line on stderr and its
    status returned; Ctrl-C returns 130; other exceptions are bugs and keep their traceback.
    ``--debug`` shows the traceback of user errors too."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for the --resume hint
    try:
        return _dispatch(args)
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


if __name__ == "__main__":
    sys.exit(main())
