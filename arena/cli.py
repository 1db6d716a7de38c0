"""The ``arena`` command line.

* ``arena tournament --bots sample_bots/*.toml --games N --seed S [--db arena.db]``: a
  round-robin over real TCP with an Elo table at the end.
* ``arena bench``: engine and referee throughput next to a raw loopback baseline.
* ``arena bots add NAME`` / ``arena bots list``: register a bot that connects on its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec
import trio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena.formats import FORMATS
from arena.launcher import load_manifest, sandbox_available
from arena.referee import MatchConfig
from arena.store import Store
from arena.tournament import TournamentConfig, TournamentReport, run_tournament
from protocol.messages import Rules, TimeControl


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``arena`` command."""
    parser = argparse.ArgumentParser(prog="arena", description="Écarté & Piquet bot arena")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tournament", help="run a tournament of local bots over TCP")
    t.add_argument("--bots", nargs="+", metavar="MANIFEST", help="bot manifest TOML files")
    t.add_argument("--resume", nargs="?", type=int, const=0, metavar="ID",
                   help="finish an interrupted tournament of --db (default: the newest unfinished)")
    t.add_argument("--sandbox", action="store_true",
                   help="run each bot under bubblewrap: no network, read-only filesystem (stdin/stdout)")
    t.add_argument("--games", type=int, default=10, help="matches per pair (default 10)")
    t.add_argument("--seed", type=int, default=1, help="tournament seed (default 1)")
    t.add_argument("--db", default="arena.db", help="SQLite database (default arena.db)")
    t.add_argument("--logs", default="logs", help="match log directory (default logs/)")
    t.add_argument("--format", default="round-robin", choices=list(FORMATS),
                   help="round-robin (default), gauntlet, rotation (écarté simple) or chouette")
    t.add_argument("--hero", help="gauntlet: the bot that plays all the others (default: the first)")
    t.add_argument("--no-duplicate", dest="duplicate", action="store_false",
                   help="do not play pairs of matches with the same deals and seats swapped")
    t.add_argument("--concurrency", type=int, default=os.cpu_count() or 2,
                   help="matches played at once (default: the number of cores); each bot plays one match at a "
                        "time, so at most half the bots' worth of matches run together")
    t.add_argument("--move-ms", type=int, default=2000, help="time per decision in ms (default 2000)")
    t.add_argument("--bank-ms", type=int, default=0, help="time bank per match in ms (default 0)")
    t.add_argument("--grace-ms", type=int, default=50, help="transport grace in ms (default 50)")
    t.add_argument("--on-timeout", choices=["forfeit", "auto"], default="forfeit")
    t.add_argument("--max-strikes", type=int, default=3)
    t.add_argument("--max-illegal", type=int, default=0, help="illegal actions tolerated per match")
    t.add_argument("--target", type=_target, default=5, help="5, 7 or turn-up (ecarte.md §E7.1)")
    t.add_argument("--manches", type=int, choices=[1, 3], default=1, help="1 = sèche, 3 = liée")
    t.add_argument("--deal-pattern", choices=["3-2", "2-3", "2-2-1"], default="3-2")
    t.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    t.add_argument("--pack", type=int, choices=[32, 36], default=32, help="Piquet: 32 or 36 cards")
    t.add_argument("--packets", type=int, choices=[2, 3], default=2, help="Piquet: deal in packets of 2 or 3")
    t.add_argument("--scoring", choices=["rubicon", "cent"], default="rubicon", help="Piquet: rubicon or cent")
    t.add_argument("--quiet", action="store_true", help="no progress bar")

    sp = sub.add_parser("sprt", help="sequential test of one bot against another over duplicate pairs")
    sp.add_argument("--bot", required=True, metavar="MANIFEST", help="the bot under test")
    sp.add_argument("--vs", required=True, metavar="MANIFEST", help="the reference bot")
    sp.add_argument("--elo0", type=float, default=0.0, help="H0: the bot is this many Elo better (default 0)")
    sp.add_argument("--elo1", type=float, default=20.0, help="H1: the bot is this many Elo better (default 20)")
    sp.add_argument("--alpha", type=float, default=0.05)
    sp.add_argument("--beta", type=float, default=0.05)
    sp.add_argument("--max-pairs", type=int, default=5000, help="stop after this many pairs (default 5000)")
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    sp.add_argument("--move-ms", type=int, default=2000)
    sp.add_argument("--db", default="arena.db")
    sp.add_argument("--logs", default="logs")

    wt = sub.add_parser("watch", help="follow a match live in the terminal, as a spectator")
    wt.add_argument("match", nargs="?", help="the match id (default: the first in play, then the next)")
    wt.add_argument("--host", default="127.0.0.1")
    wt.add_argument("--port", type=int, default=7000, help="the contest server's TCP port (default 7000)")
    wt.add_argument("--once", action="store_true", help="print one snapshot when the match ends, then exit")
    wt.add_argument("--name", default="watcher", help="your spectator name")

    dr = sub.add_parser("doctor", help="conformance check of a bot before you submit it")
    dr.add_argument("manifest", help="the bot's manifest (TOML)")
    dr.add_argument("--move-ms", type=int, default=2000, help="time per decision in ms (default 2000)")
    dr.add_argument("--verbose", action="store_true", help="print the full transcript (token masked)")
    dr.add_argument("--sandbox", action="store_true",
                    help="run the bot under bubblewrap, speaking over stdin/stdout (ARENA_TRANSPORT=stdio)")
    dr.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte",
                    help="the game the scripted matches play (default ecarte)")

    rp = sub.add_parser("replay", help="verify a match log (hash chain, rules engine, result) and print it")
    rp.add_argument("log", help="a match log (.jsonl)")
    rp.add_argument("--db", help="also check the log's last hash against the one recorded in this database")
    rp.add_argument("--public", action="store_true", help="print only what a spectator may see")
    rp.add_argument("--quiet", action="store_true", help="verify only, print the verdict")

    b = sub.add_parser("bench", help="measure engine and referee throughput")
    b.add_argument("--deals", type=int, default=20000, help="self-play deals for the engine figure")
    b.add_argument("--decisions", type=int, default=20000, help="decisions for the TCP figures")

    bots = sub.add_parser("bots", help="manage registered bots")
    bsub = bots.add_subparsers(dest="bots_command", required=True)
    add = bsub.add_parser("add", help="register a bot and print its secret token once")
    add.add_argument("name")
    add.add_argument("--db", default="arena.db")
    sb = bsub.add_parser("submit", help="register a bot that the contest server launches itself")
    sb.add_argument("manifest", help="the bot's manifest (TOML)")
    sb.add_argument("--name", help="the name in the contest (default: the manifest's)")
    sb.add_argument("--sandbox", action="store_true", help="always launch it under bubblewrap")
    sb.add_argument("--db", default="arena.db")
    ls = bsub.add_parser("list", help="list registered bots with their ladder rating")
    ls.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    ls.add_argument("--db", default="arena.db")
    rm = bsub.add_parser("remove", help="unregister a bot (its results stay)")
    rm.add_argument("name")
    rm.add_argument("--db", default="arena.db")

    sp_ = sub.add_parser("spectators", help="betting spectators (gallery wagers, ecarte.md §E9.1)")
    ssub = sp_.add_subparsers(dest="spectators_command", required=True)
    sa = ssub.add_parser("add", help="register a betting spectator, credit a bankroll, print the token once")
    sa.add_argument("name")
    sa.add_argument("--deposit", type=int, default=10000, help="bankroll in cents (default 10000 = 100.00)")
    sa.add_argument("--db", default="arena.db")
    sl = ssub.add_parser("list", help="bankrolls and the house")
    sl.add_argument("--db", default="arena.db")

    sv = sub.add_parser("serve", help="run a long-lived contest server (TCP for bots and spectators, HTTP)")
    sv.add_argument("--config", required=True, help="contest TOML file (see docs/contest.example.toml)")
    return parser


def print_report(console: Console, report: TournamentReport) -> None:
    """Print the leaderboard (rank, bot, Elo ± 95%, games, wins, losses, draws, score %, and the
    bots whose intervals overlap), the likelihood-of-superiority matrix, and for a chouette
    its reigns and bankrolls."""
    fit = report.fit
    unit = "duplicate pairs, robust intervals" if report.paired else "single matches"
    table = Table(title=f"Tournament t{report.tournament_id}: Elo (maximum likelihood, mean 1500; {unit})")
    for col, just in (("rank", "right"), ("bot", "left"), ("Elo", "right"), ("±95%", "right"),
                      ("games", "right"), ("wins", "right"), ("losses", "right"), ("draws", "right"),
                      ("score %", "right"), ("overlaps rank", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i, r in enumerate(fit.ratings, 1):
        overlaps = [
            str(j) for j, o in enumerate(fit.ratings, 1) if o.name != r.name and fit.overlapping(r.name, o.name)
        ]
        table.add_row(str(i), r.name, f"{r.elo:.0f}", f"{r.ci95:.0f}", str(r.games), str(r.wins),
                      str(r.losses), str(r.draws), f"{100 * r.score:.1f}", ",".join(overlaps) or "-")
    console.print(table)
    if len(fit.ratings) > 2:
        los = Table(title="Likelihood of superiority (row better than column), %")
        los.add_column("")
        for r in fit.ratings:
            los.add_column(r.name, justify="right")
        for r in fit.ratings:
            los.add_row(r.name, *("" if r.name == c.name else f"{100 * fit.los(r.name, c.name):.1f}"
                                  for c in fit.ratings))
        console.print(los)
    if report.reigns:
        reigns = Table(title=f"Chouette reigns (house levy {report.house} chips)")
        for col in ("#", "chouetteur", "price", "matches", "challengers beaten", "losses"):
            reigns.add_column(col, justify="left" if col == "chouetteur" else "right")
        for i, rg in enumerate(report.reigns, 1):
            reigns.add_row(str(i), rg.chouetteur, str(rg.price), str(rg.matches), str(rg.beaten), str(rg.losses))
        console.print(reigns)
        console.print("bankrolls: " + ", ".join(f"{k} {v}" for k, v in sorted(report.bankrolls.items())))
    reasons = ", ".join(f"{k}: {v}" for k, v in sorted(report.reasons.items()))
    console.print(
        f"{report.matches} matches in {report.seconds:.1f} s "
        f"({report.matches / max(report.seconds, 1e-9):.1f} matches/s); ended by {reasons}"
    )


def cmd_tournament(args: argparse.Namespace) -> int:
    """``arena tournament``: run it, show progress, print the Elo table."""
    console = make_console()
    store = Store(args.db)
    resume = None
    try:
        if args.resume is not None:
            row = store.tournament(args.resume or None)
            if row is None:
                raise ValueError(f"nothing to resume in {args.db}")
            resume = row["id"]
            config = msgspec.convert(row["config"], TournamentConfig)
            manifests = [load_manifest(p) for p in config.manifests]
            console.print(f"resuming tournament t{resume}: {len(store.pending_matches(resume))} matches left")
        else:
            if not args.bots:
                raise ValueError("--bots is required (or --resume)")
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
                manifests=[str(Path(p).resolve()) for p in args.bots],
                match=MatchConfig(
                    game=args.game,
                    rules=Rules(deal_pattern=args.deal_pattern, target=args.target, manches=args.manches,
                                pack=args.pack, packets=args.packets, scoring=args.scoring),
                    time=TimeControl(move_ms=args.move_ms, bank_ms=args.bank_ms, grace_ms=args.grace_ms),
                    on_timeout=args.on_timeout,
                    max_strikes=args.max_strikes,
                    max_illegal=args.max_illegal,
                ),
            )
        from arena.games import validate_rules

        validate_rules(config.match.game, config.match.rules)
        if config.sandbox and not sandbox_available():
            raise ValueError("--sandbox needs bwrap (Debian package bubblewrap)")
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    store = Store(args.db)
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, disable=args.quiet,
    )
    task = None

    def on_start(tid: int, n: int) -> None:
        nonlocal task
        task = progress.add_task(f"t{tid} {config.format}", total=n, last="")

    def on_result(row, result) -> None:  # type: ignore[no-untyped-def]
        winner = (row.bot0, row.bot1)[result.winner] if result.winner is not None else "nobody"
        progress.update(task, advance=1, last=f"{row.bot0} v {row.bot1}: {winner} ({result.reason})")

    console.print(f"[bold]{len(manifests)} bots[/bold]: " + ", ".join(
        f"{m.name} ({m.language})" for m in manifests))
    try:
        with progress:
            report = trio.run(run_tournament, store, manifests, config, on_start, on_result, resume)
    except KeyboardInterrupt:
        row = store.db.execute("SELECT MAX(id) FROM tournaments").fetchone()
        console.print(f"interrupted: every finished match is in {args.db}; the rest (including the one in play) "
                      f"is played by `arena tournament --resume --db {args.db}` (tournament t{row[0]})")
        return 130
    print_report(console, report)
    console.print(f"results in {args.db}, match logs in {args.logs}/t{report.tournament_id}/")
    store.close()
    return 0


def cmd_sprt(args: argparse.Namespace) -> int:
    """``arena sprt``: play duplicate pairs until the GSPRT accepts H0 or H1; print the
    log-likelihood ratio after every pair."""
    from arena.sprt import SPRT, SprtFormat

    console = make_console()
    try:
        bot, vs = load_manifest(args.bot), load_manifest(args.vs)
        if bot.name == vs.name:
            raise ValueError("--bot and --vs must be different bots")
        test = SPRT(args.elo0, args.elo1, args.alpha, args.beta, outcomes=(0, 0.5, 1, 1.5, 2))
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    lo, hi = test.bounds
    console.print(f"SPRT {bot.name} vs {vs.name}: H0 elo={args.elo0:g}, H1 elo={args.elo1:g}, "
                  f"alpha={args.alpha:g}, beta={args.beta:g}; bounds [{lo:.2f}, {hi:.2f}]")
    fmt = SprtFormat(bot.name, vs.name, args.seed, test, args.max_pairs, on_pair=lambda t: print(t.summary()))
    config = TournamentConfig(
        format="sprt", games=2 * args.max_pairs, seed=args.seed, concurrency=1, logs_dir=args.logs,
        manifests=[str(Path(args.bot).resolve()), str(Path(args.vs).resolve())],
        match=MatchConfig(game=args.game, time=TimeControl(move_ms=args.move_ms)),
    )
    store = Store(args.db)
    report = trio.run(run_tournament, store, [bot, vs], config, None, None, None, fmt)
    verdict = {"H1": f"H1 accepted: {bot.name} is at least {args.elo1:g} Elo better",
               "H0": f"H0 accepted: {bot.name} is not {args.elo1:g} Elo better (at most {args.elo0:g})"}
    console.print(verdict.get(test.status(), f"no decision after {test.pairs} pairs"))
    console.print(f"{report.matches} matches in {report.seconds:.1f} s; results in {args.db}")
    store.close()
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """``arena replay``: exit 0 if the log verifies, 1 (with the reason) if not."""
    from arena.matchlog import ChainError, ReplayError, describe, public_view, verify_file

    console = make_console()
    expected = None
    if args.db:
        store = Store(args.db)
        row = store.db.execute("SELECT log_hash FROM matches WHERE log_path LIKE ?",
                               (f"%{Path(args.log).name}",)).fetchone()
        if row is None or row[0] is None:
            console.print(f"[red]not verified:[/red] no recorded hash for {args.log} in {args.db}")
            return 1
        expected = row[0]
    try:
        lines, result = verify_file(args.log, expected)
    except (OSError, ChainError, ReplayError, ValueError, KeyError) as exc:
        console.print(f"[red]not verified:[/red] {exc}")
        return 1
    if not args.quiet:
        names = lines[0].get("bots", ["seat 0", "seat 1"])
        for line in public_view(lines) if args.public else lines:
            console.print(describe(line, names), markup=False, highlight=False)
    chain = "hash chain intact" + (", last hash matches the database" if expected else "")
    console.print(f"[green]verified:[/green] {len(lines)} lines, {chain}, every event reproduced by the rules engine, "
                  f"result {result['reason']}")
    return 0


def cmd_bots(args: argparse.Namespace) -> int:
    """``arena bots add | submit | list | remove``."""
    store = Store(args.db)
    if args.bots_command == "add":
        try:
            token = store.add_bot(args.name)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"registered {args.name}; its token (shown once, store it now):\n{token}")
    elif args.bots_command == "submit":
        try:
            manifest = load_manifest(args.manifest)
            name = args.name or manifest.name
            store.submit_bot(name, str(Path(args.manifest).resolve()), args.sandbox)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"submitted {name}: the contest server launches {args.manifest} and enters it in the ladder")
    elif args.bots_command == "remove":
        if not store.remove_bot(args.name):
            print(f"error: no bot {args.name!r}", file=sys.stderr)
            return 1
        print(f"removed {args.name} (its results stay in the database)")
    else:
        table = Table(title=f"bots ({args.game} ladder)")
        for col in ("bot", "kind", "Elo", "games"):
            table.add_column(col, justify="left" if col in ("bot", "kind") else "right")
        for name, kind, elo, games in store.bots_overview(args.game):
            table.add_row(name, kind, "-" if elo is None else f"{elo:.0f}", str(games))
        make_console().print(table)
    return 0


def cmd_spectators(args: argparse.Namespace) -> int:
    """``arena spectators add | list``."""
    from arena.contest import BettingDesk
    from arena.spectate import SpectatorHub

    store = Store(args.db)
    desk = BettingDesk(store, SpectatorHub())
    if args.spectators_command == "add":
        try:
            token = store.add_spectator(args.name)
            balance = desk.deposit(args.name, args.deposit)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"registered spectator {args.name}, bankroll {balance / 100:.2f}; token (shown once):\n{token}")
        return 0
    table = Table(title="gallery bankrolls")
    table.add_column("spectator")
    table.add_column("balance", justify="right")
    for name, cents in sorted(desk.ledger.accounts.items()):
        table.add_row(name, f"{cents / 100:.2f}")
    table.add_row("(house)", f"{desk.ledger.house / 100:.2f}")
    make_console().print(table)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """``arena serve``: run until SIGTERM / Ctrl-C, then shut down cleanly."""
    from arena.contest import Contest, load_config

    console = make_console()
    try:
        config = load_config(args.config)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    contest = Contest(config)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            ports = await nursery.start(contest.run)
            console.print(f"{config.name}: bots and spectators on tcp://{config.server.host}:{ports[0]}, "
                          f"web and /metrics on http://{config.http_host}:{ports[1]}/  (Ctrl-C or SIGTERM to stop)")

    trio.run(main)
    done = contest.store.db.execute(
        "SELECT COUNT(*) FROM matches WHERE tournament_id=? AND status='done'", (contest.tournament_id,)
    ).fetchone()[0]
    console.print(f"stopped cleanly: {done} matches recorded in {config.db}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``arena`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "tournament":
        return cmd_tournament(args)
    if args.command == "watch":
        from arena.watch import main as watch_main

        return watch_main(args.host, args.port, args.match, once=args.once, name=args.name)
    if args.command == "doctor":
        from arena.doctor import main as doctor_main

        return doctor_main(args.manifest, move_ms=args.move_ms, verbose=args.verbose, sandbox=args.sandbox,
                           game=args.game)
    if args.command == "replay":
        return cmd_replay(args)
    if args.command == "sprt":
        return cmd_sprt(args)
    if args.command == "bench":
        from arena.bench import main as bench_main

        return bench_main(args)
    if args.command == "bots":
        return cmd_bots(args)
    if args.command == "serve":
        return cmd_serve(args)
    if args.command == "spectators":
        return cmd_spectators(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
