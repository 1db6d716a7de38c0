"""Run a tournament end to end: server, bot processes, scheduled matches, results, ratings.

:func:`run_tournament` starts the TCP server on a free loopback port, registers every bot
with a fresh token (so no manual ``arena bots add`` is needed), launches each bot in its own sandbox
(:mod:`arena.schedule.launcher`; as two copies when duplicate pairs are played, :mod:`arena.schedule.copies`),
waits for them to connect, then plays the schedule of the chosen format with up to
``concurrency`` matches at once, a bot never in two matches at the same time. Each result is
committed to the store before the bots hear ``match_end``; each match writes
``<logs>/t<id>/<match_key>.jsonl``.

A bot that is not connected when its match starts loses it by ``forfeit_disconnect`` (it is
relaunched once per tournament if its process has died).

Crash safety: every scheduled match is in the database from the start as ``pending``; a result
is committed before it is announced. After a crash, ``run_tournament(..., resume=id)`` plays
exactly the matches still pending, with their stored seeds: none is lost, none counted twice
(a match cut off mid-way is replayed from its first deal, and its log rewritten).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.errors import Unavailable, UserError
from arena.games.base import quote
from arena.match.clock import Clock
from arena.match.core import MatchConfig, MatchResult
from arena.match.limits import FLEET, LIMITS
from arena.match.log import finish_logs
from arena.match.runner import Spectators
from arena.match.seat import ask_once
from arena.net.server import ArenaServer, ServerConfig
from arena.schedule.copies import (
    PAIR_COPIES,
    Halves,
    bot_log,
    launch_failure,
    secrets_of,
    start_failure,
)
from arena.schedule.fitter import fit_ladder
from arena.schedule.fleet import Fleet, OnResult, StoreSink
from arena.schedule.formats import Auction, Format, Pairing, StaticFormat, Step, derive_seed, make_format
from arena.schedule.formats.chouette import Chouette, Reign, legal_bids
from arena.schedule.formats.rotation import Rotation
from arena.schedule.launcher import BotProcess, Limits, Manifest, sandbox_problem
from arena.stats.deal_pairs import fit_twin_deals
from arena.stats.ladder import ladder_units
from arena.stats.rating import Fit, Rating, fit_units
from arena.store.sqlite import MatchRow, Store
from protocol.messages import AuctionView


class TournamentConfig(msgspec.Struct, omit_defaults=True):
    """A tournament: format (``round-robin``, ``gauntlet`` with its ``hero``, ``rotation``,
    ``chouette``), ``games`` (matches per pair, or in all for rotation and chouette), whether
    pairs are played in duplicate (ecarte.md §E8.2), seed, concurrency, where logs go, how each
    match is played (``match``) and how long bots get to connect (``connect_timeout_s``)."""

    format: str = "round-robin"
    games: int = 10
    duplicate: bool = True
    hero: str | None = None
    seed: int = 1
    concurrency: int = 2
    logs_dir: str = "logs"
    match: MatchConfig = msgspec.field(default_factory=MatchConfig)
    server: ServerConfig = msgspec.field(default_factory=ServerConfig)
    connect_timeout_s: float = 20.0
    limits: Limits = msgspec.field(default_factory=Limits)
    sandbox: bool = False
    """Kept for old command lines and stored configs: bots are sandboxed unless ``trust_bots``."""
    trust_bots: bool = False
    """UNSAFE: run the bots as plain processes without bubblewrap (docs/contests.md, "Security model")."""
    copies: int = 0
    """Processes per bot (:mod:`arena.schedule.copies`); 0: two when matches are played in duplicate pairs, else one."""
    manifests: list[str] = msgspec.field(default_factory=list)
    """Manifest paths of the bots (stored with the tournament, so ``--resume`` can relaunch them)."""
    archives: dict[str, int] = msgspec.field(default_factory=dict)
    """Played on workers: the version of each bot's archive in the database (name -> version),
    which every worker unpacks and runs (:mod:`arena.schedule.worker`)."""


class TournamentReport(msgspec.Struct):
    """What a finished tournament returns: its id, the rating fit (``fit.ratings`` best
    first, with intervals and likelihood of superiority), match count, the reasons matches
    ended (reason -> count), the wall time in seconds, and for a chouette its reigns and
    bankrolls."""

    tournament_id: int
    fit: Fit
    matches: int
    reasons: dict[str, int]
    seconds: float
    paired: bool = False
    twin_deals: int = 0
    """Duplicate-deals: the deals per match, the ratings being on the twin-deal scale (else 0)."""
    reigns: list[Reign] = msgspec.field(default_factory=list)
    bankrolls: dict[str, int] = msgspec.field(default_factory=dict)
    house: int = 0

    @property
    def ratings(self) -> list[Rating]:
        """The fitted ratings, best first."""
        return self.fit.ratings


async def run_tournament(
    store: Store,
    manifests: list[Manifest],
    config: TournamentConfig,
    on_start: Callable[[int, int], None] | None = None,
    on_result: OnResult | None = None,
    resume: int | None = None,
    fmt: Format | None = None,
    workers: Any = None,
) -> TournamentReport:
    """Play a whole tournament (or, with ``resume``, the pending matches of tournament
    ``resume``) and return its report.

    ``on_start(tournament_id, n_matches_to_play)`` is called once scheduled;
    ``on_result(row, result)`` after each match is committed. ``fmt`` replaces the format
    named in ``config`` (``arena sprt`` passes its own). Raises ``ValueError`` for an unknown
    format, duplicate bot names, or a ``resume`` id that does not exist, and its subclass
    :class:`~arena.schedule.launcher.SandboxError` if the bots are to be sandboxed (the default) and
    ``bwrap`` is missing.

    ``workers`` (an :class:`arena.schedule.front.LocalWorkers`): the matches are played by
    worker processes, each with its own copies of the bots, unpacked from archives stored in the
    database; same seeds, logs and ratings as in one process. A chouette (whose auctions ask
    every bot at once) is always played in one process.
    """
    names = [m.name for m in manifests]
    if len(set(names)) != len(names):
        raise UserError(f"bot names must be unique: {names}")
    if config.concurrency < 1:
        raise UserError("concurrency must be at least 1")
    if config.format == "duplicate-deals" and config.match.rules.deals < 1:
        raise UserError("duplicate-deals needs matches of a fixed number of deals (rules.deals, --deals N)")
    isolated = config.sandbox or not config.trust_bots
    if isolated and (problem := sandbox_problem()) is not None:
        raise Unavailable(problem)
    if fmt is None:
        fmt = make_format(config.format, names, config.games, config.seed, config.duplicate, config.hero)
    for name in names:  # registered with a token nobody holds: each copy gets its own (arena.schedule.copies)
        store.add_launched_bot(name)
    if workers is not None and resume is None and not isinstance(fmt, Chouette):
        if len(config.manifests) != len(manifests):
            raise UserError("--workers needs each bot's manifest file (TournamentConfig.manifests)")
        config.archives = workers.store_archives(store, config.manifests)
    if resume is None:
        static = fmt.schedule if isinstance(fmt, StaticFormat) else []
        tid = store.create_tournament(config.match.game, config.format, config.seed, config, names, static)
    else:
        if store.tournament(resume) is None:
            raise UserError(f"no tournament {resume} in the database")
        tid = resume
        finish_logs(Path(config.logs_dir) / f"t{tid}")  # recorded before a crash, never closed
    if on_start:
        total = len(store.pending_matches(tid)) if isinstance(fmt, StaticFormat) else config.games
        on_start(tid, total)
    t0 = trio.current_time()
    if workers is not None and not isinstance(fmt, Chouette):
        async def play_steps(play: Callable[[Step], Any]) -> None:
            await _play_format(store, tid, fmt, msgspec.structs.replace(config, concurrency=workers.count), play=play)

        await workers.play(store, tid, fmt, not isolated, on_result,
                           play_steps=None if isinstance(fmt, StaticFormat) else play_steps)
        return _report(store, tid, names, config, fmt, t0)
    await _play_in_process(store, tid, manifests, config, fmt, isolated, on_result)
    return _report(store, tid, names, config, fmt, t0)


async def _play_in_process(store: Store, tid: int, manifests: list[Manifest], config: TournamentConfig, fmt: Format,
                           isolated: bool, on_result: OnResult | None) -> None:
    """Play tournament ``tid`` (:func:`run_tournament`) in this process: launch every bot's copies
    (sandboxed if ``isolated``), wait for them all to connect (one that cannot start stops it all:
    :func:`arena.schedule.copies.start_failure`), play the format's matches, then stop the bots."""
    names = [m.name for m in manifests]
    server = ArenaServer(store, config.server)
    fleet = Fleet(server, msgspec.structs.replace(FLEET, connect_ms=int(config.connect_timeout_s * 1000)))
    logs = Path(config.logs_dir) / f"t{tid}"
    n_copies = config.copies or (PAIR_COPIES if plays_pairs(fmt) else 1)
    halves = Halves(lambda name: n_copies)
    hide = secrets_of(store.path, config.logs_dir)
    paths = dict(zip(names, config.manifests)) if len(config.manifests) == len(names) else {}
    by_name = {m.name: m for m in manifests}

    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)

        async def start_bot(m: Manifest, copy: int) -> BotProcess:
            env = {
                "ARENA_HOST": config.server.host,
                "ARENA_PORT": str(port),
                "ARENA_BOT_SEED": str(derive_seed(config.seed, "bot", m.name)),
            }
            others = [o.directory for o in manifests if o.name != m.name]
            try:
                return await fleet.launch(nursery, m, copy, env, bot_log(logs, store.bot_id(m.name), copy),
                                          config.limits, isolated, hide, others)
            except OSError as exc:  # a missing or non-executable program
                raise launch_failure(m, paths.get(m.name), exc) from None

        try:
            for m in manifests:
                for copy in range(n_copies):
                    await start_bot(m, copy)
            deadline = trio.current_time() + config.connect_timeout_s
            for (name, copy), proc in list(fleet.procs.items()):  # a bot that cannot start stops it all, unscored
                left_ms = int(max(0.0, deadline - trio.current_time()) * 1000)
                if await fleet.wait_for_hello(proc, copy, left_ms) is None:
                    raise start_failure(proc, paths.get(name), config.connect_timeout_s)

            async def play(row: MatchRow, copies: tuple[int, int]) -> MatchResult:
                for name in (row.bot0, row.bot1):  # a copy whose process died is relaunched once
                    await fleet.relaunch_dead(name, range(n_copies), lambda c, m=by_name[name]: start_bot(m, c))
                return await fleet.play(row, config.match, logs, StoreSink(row, store.record_result,
                                                                           on_result=on_result), copies=copies)

            await _play_format(store, tid, fmt, config, play, halves=halves, server=server)
        finally:
            await fleet.stop_all("tournament over")
            nursery.cancel_scope.cancel()


def _report(store: Store, tid: int, names: list[str], config: TournamentConfig, fmt: Format,
            t0: float) -> TournamentReport:
    """Mark the tournament finished, refit the persistent ladder of its game (once, at the end:
    :mod:`arena.schedule.fitter`) and make its report."""
    store.finish_tournament(tid)
    fit_ladder(store, config.match.game)
    matches = store.matches(tid)
    reasons: dict[str, int] = {}
    for row in matches:
        reasons[row["reason"] or "unplayed"] = reasons.get(row["reason"] or "unplayed", 0) + 1
    fitted, paired = rate_tournament(store, tid, names, config)
    report = TournamentReport(
        tournament_id=tid,
        fit=fitted,
        matches=len(matches),
        reasons=reasons,
        seconds=trio.current_time() - t0,
        paired=paired,
        twin_deals=config.match.rules.deals if config.format == "duplicate-deals" else 0,
    )
    if isinstance(fmt, Chouette):
        report.reigns, report.bankrolls, report.house = fmt.reigns, dict(fmt.bankrolls), fmt.house
    return report


def rate_tournament(store: Store, tid: int, names: list[str], config: TournamentConfig) -> tuple[Fit, bool]:
    """The rating fit of a tournament and whether it was played in duplicate pairs.

    Every format gets robust intervals (the sandwich of :mod:`arena.stats.rating`), clustered by the
    unit that varies together: the duplicate pair when the two matches of a pair are both
    finished, else the match (:func:`arena.stats.ladder.ladder_units`). ``paired`` is True when at
    least one pair is complete. Duplicate-deals: the fit on twin deals
    (:func:`arena.stats.deal_pairs.fit_twin_deals`), clustered by pair."""
    if config.format == "duplicate-deals":
        return fit_twin_deals(store.matches(tid), config.match.rules.deals, names,
                              read=lambda m: store.match_log_bytes(m["match_key"], m["log_path"])), True
    rows = [(tid, m["bot0"], m["bot1"], m["winner_seat"], m["pair_key"])
            for m in store.matches(tid) if m["status"] == "done"]
    units = ladder_units(rows)
    return fit_units(units, names, variance="robust"), any(u[3] == 2 for u in units)
def plays_pairs(fmt: Format) -> bool:
    """True if ``fmt`` may hand out duplicate pairs (its bots then run as two copies): a static
    schedule with a pair key, or any dynamic format but rotation and chouette (which never pair)."""
    if isinstance(fmt, StaticFormat):
        return any(p.pair is not None for p in fmt.schedule)
    return not isinstance(fmt, (Rotation, Chouette))


def settle_stored(store: Store, tid: int, fmt: Format, steps: list[Step],
                  pending: dict[int, MatchRow] | None = None) -> list[Step]:
    """Feed ``fmt`` the results already stored for any of ``steps`` (a resumed tournament) and
    return the steps still to play. Resuming thus rebuilds the format's state from the stored
    results, in the order the format hands out its steps, and the same seeds come out.
    ``pending``: the tournament's pending rows by index, read once (:func:`pending_by_index`):
    a step found there is still to play without a query of its own. Raises ``ValueError`` if a
    stored seed differs from the format's."""
    left: list[Step] = []
    for step in steps:
        if isinstance(step, Auction):
            row = store.auction(tid, step.index)
            if row is None:
                left.append(step)
            else:
                fmt.record_auction(step, row["bids"])
            continue
        known = pending.get(step.index) if pending is not None else None
        if known is not None:
            if known.seed != step.seed:
                raise ValueError(f"match {step.index} of t{tid}: stored seed differs from the format's")
            left.append(step)
            continue
        row = store.match_by_index(tid, step.index)
        if row is not None and row["seed"] != step.seed:
            raise ValueError(f"match {step.index} of t{tid}: stored seed differs from the format's")
        if row is None or row["status"] == "pending":
            left.append(step)
        else:
            fmt.record(step, row["winner"])
    return left


def pending_by_index(store: Store, tid: int, fmt: Format) -> dict[int, MatchRow] | None:
    """A static format's pending matches of tournament ``tid`` by index, read in one query at the
    start (they are all in the database from the start, :func:`run_tournament`; as many rows as
    the schedule the format holds anyway): each match is then started without a query to find
    its row or schedule it. None for a format that decides as it goes (each match is added as
    the format hands it out)."""
    if not isinstance(fmt, StaticFormat):
        return None
    return {row.idx: row for row in store.pending_matches(tid)}


PlayRow = Callable[[MatchRow, tuple[int, int]], Awaitable[MatchResult]]
"""``play(row, copies)``: play a stored match between those copies of its bots, to a result."""


async def _play_format(
    store: Store,
    tid: int,
    fmt: Format,
    config: TournamentConfig,
    play_row: PlayRow | None = None,
    halves: Halves | None = None,
    play: Callable[[Pairing], Any] | None = None,
    server: ArenaServer | None = None,
) -> None:
    """Run the format's steps with at most ``concurrency`` matches at once, each bot in one
    step at a time, until the format is done: each match by ``play_row`` (in this process),
    or by ``play`` (played elsewhere, a worker: returns the winner's name); ``halves`` picks the
    copies of the bots that play each match (:mod:`arena.schedule.copies`; default: copy 0);
    ``server``: where a chouette's auctions ask the bots."""
    queue: list[Step] = []
    busy: set[str] = set()
    running = 0
    changed = trio.Event()
    pending = pending_by_index(store, tid, fmt) if play_row is not None else None

    def bots_of(step: Step) -> tuple[str, ...]:
        return step.bidders if isinstance(step, Auction) else (step.bot0, step.bot1)

    async def run(step: Step) -> None:
        nonlocal changed, running
        try:
            if isinstance(step, Auction):
                assert server is not None
                winner_bids = await run_auction(store, server, tid, step, fmt)
                fmt.record_auction(step, winner_bids)
            elif play is not None:  # played elsewhere (a worker): ``play`` returns the winner's name
                fmt.record(step, await play(step))
            else:
                assert play_row is not None
                row = pending.pop(step.index, None) if pending is not None else None
                if row is None:  # a format that decides as it goes: scheduled now
                    row = store.add_match(tid, config.match.game, step)
                copies = halves.assign(step) if halves is not None else (0, 0)
                result = await play_row(row, copies)
                fmt.record(step, None if result.winner is None else (step.bot0, step.bot1)[result.winner])
        finally:
            running -= 1
            busy.difference_update(bots_of(step))
            changed.set()
            changed = trio.Event()

    async with trio.open_nursery() as nursery:
        while True:
            while not queue and not fmt.done:
                fresh = fmt.ready(busy)
                if not fresh:
                    break
                queue.extend(settle_stored(store, tid, fmt, fresh, pending))
            started = False
            for step in list(queue):
                if running >= config.concurrency:
                    break
                names = bots_of(step)
                if busy.intersection(names):
                    continue
                queue.remove(step)
                busy.update(names)
                running += 1
                nursery.start_soon(run, step)
                started = True
            if fmt.done and not queue and running == 0:
                return
            if not started:
                await changed.wait()


async def ask_bid(conn: Any, auction_id: str, legal: list[int], view: AuctionView) -> int | None:
    """Ask ``conn`` for a chouette bid (ecarte.md §E9.3, docs/protocol.md §8.12): a request
    outside any match, default time control. Returns the bid if it is in ``legal``; else None
    (no answer, a fault, or an answer outside ``legal``, which also gets ``illegal_action``, not
    fatal: the caller counts it as 0)."""
    answer = await ask_once(conn, auction_id, "bid", legal, view, Clock(LIMITS.time_control()))
    if answer is None:
        return None
    rid, action = answer
    if action in legal and not isinstance(action, bool):
        return action
    await conn.send_error("illegal_action", f"bid {quote(action)} is not in legal; counted as 0", id=rid)
    return None


async def run_auction(store: Store, server: ArenaServer, tid: int, auction: Auction, fmt: Format) -> dict[str, int]:
    """Ask every bidder for a ``bid`` at once (ecarte.md §E9.3) and commit the auction.
    A bot that is absent, times out or answers something not in ``legal`` bids 0."""
    assert isinstance(fmt, Chouette)
    bids: dict[str, int] = {}
    auction_id = f"t{tid}-a{auction.index + 1:04d}"

    async def ask(name: str) -> None:
        conn = server.bots.get(name)
        bankroll = fmt.bankrolls[name]
        if conn is None or conn.closed.is_set():
            return
        view = AuctionView(
            bot=name, bankroll=bankroll, bankrolls=dict(fmt.bankrolls), queue=list(auction.bidders),
            auction=auction.index + 1, reigns=[(r.chouetteur, r.price, r.beaten) for r in fmt.reigns],
        )
        bid = await ask_bid(conn, auction_id, legal_bids(bankroll), view)
        if bid is not None:
            bids[name] = bid

    async with trio.open_nursery() as nursery:
        for name in auction.bidders:
            nursery.start_soon(ask, name)
    clean = {b: bids.get(b, 0) for b in auction.bidders}
    winner = max(auction.bidders, key=lambda b: (clean[b], -auction.bidders.index(b)))
    store.record_auction(tid, auction.index, clean, winner, clean[winner])
    return clean


async def play_match(store: Store, server: ArenaServer, row: MatchRow, config: MatchConfig, logs: Path,
                     hub: Spectators | None = None, pair: str | None = None) -> MatchResult:
    """Play the stored match ``row`` between the bots connected to ``server`` (copy 0 of each;
    absent: it loses) and commit its result to ``store`` before the bots hear ``match_end``
    (:meth:`arena.schedule.fleet.Fleet.play`; a storage error of the commit propagates)."""
    return await Fleet(server).play(row, config, logs, StoreSink(row, store.record_result), hub=hub, pair=pair)
