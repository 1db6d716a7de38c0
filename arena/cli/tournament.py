"""``arena tournament``, ``arena worker`` and ``arena sprt``: matches of local bots, played here or
by workers that claim them from the database."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio
from rich.console import Console, JustifyMethod
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from arena.bounds import MAX_ELO, float_in, option_int
from arena.cli.common import DB_HELP, Commands, add_command, at_least, make_console, target
from arena.errors import INTERRUPTED, Unavailable, UserError, find_user_error, interrupted
from arena.games import validate_rules
from arena.gc_policy import tune_for_server
from arena.match.clock import Clock
from arena.match.limits import LIMITS
from arena.match.referee import MatchConfig
from arena.names import escape, plain
from arena.schedule.formats import FORMATS, make_format
from arena.schedule.formats.duplicate_deals import DEFAULT_DEALS
from arena.schedule.formats.sprt import SprtFormat
from arena.schedule.front import LocalWorkers
from arena.schedule.launcher import load_manifest, sandbox_problem
from arena.schedule.progress import PlainProgress
from arena.schedule.tournament import TournamentConfig, TournamentReport, run_tournament
from arena.schedule.worker import Worker, open_db, pin_to_cpu
from arena.stats.sprt import SPRT
from arena.store.postgres import shown as shown_db
from arena.store.sqlite import Store
from protocol.messages import Rules, TimeControl


def add_commands(sub: Commands) -> None:
    """Add ``tournament``, ``worker``, ``sprt`` to the ``arena`` command tree."""
    _add_tournament(sub)
    _add_worker(sub)
    _add_sprt(sub)


def _add_tournament(sub: Commands) -> None:
    t = add_command(sub, "tournament")
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
    t.add_argument("--target", type=target, default=5, help="5, 7 or turn-up (ecarte.md §E7.1)")
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
    t.add_argument("--progress-every", type=at_least(1), default=10, metavar="N",
                   help="when stdout is not a terminal: a score line every N matches or 30 s (default 10)")
    t.add_argument("--elo-every", type=at_least(1), default=200, metavar="N",
                   help="when stdout is not a terminal: the running Elo every N matches (default 200)")
    t.set_defaults(run=cmd_tournament)


def _add_worker(sub: Commands) -> None:
    wk = add_command(sub, "worker")
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
    wk.add_argument("--cpu", type=at_least(0), metavar="N",
                    help="pin this worker and the bots it launches to core N: its matches then run on that core "
                         "alone (arena tournament/serve --workers pin their workers to the cores in turn; default: "
                         "not pinned)")
    wk.add_argument("--quiet", action="store_true", help="no line per match")
    wk.add_argument("--no-log-copies", dest="log_copies", action="store_false",
                    help="do not commit a copy of each match log to the database: the front reads this host's "
                         "logs folder (arena tournament --workers passes it; a front on another host needs the copies)")
    wk.set_defaults(run=cmd_worker)


def _add_sprt(sub: Commands) -> None:
    sp = add_command(sub, "sprt")
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
    sp.set_defaults(run=cmd_sprt)


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
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("rank", "right"), ("bot", "left"), ("Elo", "right"), ("±95%", "right"), ("games", "right"), ("wins", "right"),
        ("losses", "right"), ("draws", "right"), ("score %", "right"), ("not separated from", "left"))
    for col, just in columns:
        table.add_column(col, justify=just)
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


def _resumed(args: argparse.Namespace, store: Store, console: Console) -> tuple[int, TournamentConfig, list]:
    """``--resume [ID]``: the stored tournament's id, config and bot manifests. Raises
    :class:`UserError` if there is none to resume or its config is another version's."""
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
    return resume, config, manifests


def _new_config(args: argparse.Namespace) -> TournamentConfig:
    """A new tournament's config from the command line (``--bots`` given: the manifests' paths
    are stored resolved)."""
    return TournamentConfig(
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


def _newest(store: Store, db: str) -> int | None:
    """The newest tournament of ``db``, for the ``--resume`` hint after Ctrl-C: read through a
    fresh connection if ``store``'s was cut in the middle of a statement by the interrupt."""
    try:
        return store.newest_tournament()
    except Exception:  # noqa: BLE001 - the interrupted connection: SQLAlchemy wants a rollback first
        fresh = Store(db)
        try:
            return fresh.newest_tournament()
        finally:
            fresh.close()


def cmd_tournament(args: argparse.Namespace) -> int:
    """``arena tournament``: run it, show progress, print the Elo table. Ctrl-C stops it with
    the ``--resume`` command that finishes it (exit 130)."""
    console = make_console()
    store = Store(args.db)
    resume = None
    if args.resume is not None:
        resume, config, manifests = _resumed(args, store, console)
    else:
        if not args.bots:
            raise UserError("--bots is required (or --resume to finish an interrupted tournament)")
        manifests = [load_manifest(p) for p in args.bots]
        config = _new_config(args)
    if args.trust_bots:  # also for --resume: the organiser's choice of this run
        config.trust_bots, config.sandbox = True, False
    check_tournament(config, manifests)
    progress_lines = None
    if not console.is_terminal and not args.quiet:  # a log file: plain lines, not a redrawn bar
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

    def on_result(row: Any, result: Any) -> None:  # a MatchRow and its MatchResult (arena.schedule)
        winner = (row.bot0, row.bot1)[result.winner] if result.winner is not None else "nobody"
        progress.update(task, advance=1, last=escape(f"{row.bot0} v {row.bot1}: {winner} ({result.reason})"))
        if progress_lines is not None:
            progress_lines.on_result(row, result)

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
        tid = resume or _newest(store, args.db)
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
    store = open_db(args.db)
    if args.tournament is not None and store.tournament(args.tournament) is None:
        raise UserError(f"no tournament {args.tournament} in {shown_db(args.db)}")
    def said(row: Any, result: Any) -> None:  # a MatchRow and its MatchResult (arena.schedule)
        winner = (row.bot0, row.bot1)[result.winner] if result.winner is not None else "nobody"
        print(plain(f"{row.match_key}: {row.bot0} v {row.bot1}: {winner} ({result.reason})"), flush=True)

    worker = Worker(store, args.id, args.tournament, lease_s=args.lease_s, trust_bots=args.trust_bots,
                    logs=args.logs, exit_when_finished=args.tournament is not None,
                    on_result=None if args.quiet else said, slots=args.slots, log_copies=args.log_copies)
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
