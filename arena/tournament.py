"""Run a tournament end to end: server, bot processes, scheduled matches, results, ratings.

:func:`run_tournament` starts the TCP server on a free loopback port, registers every bot
with a fresh token (so no manual ``arena bots add`` is needed), launches each bot as its own
process, waits for them to connect, then plays the schedule of the chosen format with up to
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

import math
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

from arena.formats.round_robin import derive_seed, schedule
from arena.launcher import BotProcess, Limits, Manifest, launch
from arena.matchlog import MatchLog
from arena.rating import Rating, fit_ratings
from arena.referee import MatchConfig, MatchResult, Referee
from arena.server import ArenaServer, ServerConfig
from arena.store import MatchRow, Store
from protocol.messages import Goodbye


class TournamentConfig(msgspec.Struct, omit_defaults=True):
    """A tournament: format, matches per pair, seed, concurrency, where logs go, how each match
    is played (``match``) and how long bots get to connect (``connect_timeout_s``)."""

    format: str = "round-robin"
    games: int = 10
    seed: int = 1
    concurrency: int = 2
    logs_dir: str = "logs"
    match: MatchConfig = msgspec.field(default_factory=MatchConfig)
    server: ServerConfig = msgspec.field(default_factory=ServerConfig)
    connect_timeout_s: float = 20.0
    limits: Limits = msgspec.field(default_factory=Limits)
    sandbox: bool = False
    manifests: list[str] = msgspec.field(default_factory=list)
    """Manifest paths of the bots (stored with the tournament, so ``--resume`` can relaunch them)."""


class TournamentReport(msgspec.Struct):
    """What a finished tournament returns: its id, ratings (best first), match count, the
    reasons matches ended (reason -> count) and the wall time in seconds."""

    tournament_id: int
    ratings: list[Rating]
    matches: int
    reasons: dict[str, int]
    seconds: float


OnResult = Callable[[MatchRow, MatchResult], None]


async def run_tournament(
    store: Store,
    manifests: list[Manifest],
    config: TournamentConfig,
    on_start: Callable[[int, int], None] | None = None,
    on_result: OnResult | None = None,
    resume: int | None = None,
) -> TournamentReport:
    """Play a whole tournament (or, with ``resume``, the pending matches of tournament
    ``resume``) and return its report.

    ``on_start(tournament_id, n_matches_to_play)`` is called once scheduled;
    ``on_result(row, result)`` after each match is committed. Raises ``ValueError`` for an
    unknown format, duplicate bot names, or a ``resume`` id that does not exist.
    """
    names = [m.name for m in manifests]
    if len(set(names)) != len(names):
        raise ValueError(f"bot names must be unique: {names}")
    if config.format != "round-robin":
        raise ValueError(f"unknown format {config.format!r} (known: round-robin)")
    if config.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    tokens = {name: store.add_bot(name) for name in names}
    if resume is None:
        plan = schedule(names, config.games, config.seed)
        tid = store.create_tournament(config.match.game, config.format, config.seed, config, names, plan)
    else:
        if store.tournament(resume) is None:
            raise ValueError(f"no tournament {resume} in the database")
        tid = resume
    rows = store.pending_matches(tid)
    if on_start:
        on_start(tid, len(rows))
    t0 = trio.current_time()
    server = ArenaServer(store, config.server)
    procs: dict[str, BotProcess] = {}
    logs = Path(config.logs_dir) / f"t{tid}"

    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)

        async def start_bot(m: Manifest) -> None:
            env = {
                "ARENA_HOST": config.server.host,
                "ARENA_PORT": str(port),
                "ARENA_NAME": m.name,
                "ARENA_TOKEN": tokens[m.name],
                "ARENA_BOT_SEED": str(derive_seed(config.seed, "bot", m.name)),
            }
            procs[m.name] = await launch(
                nursery, m, env, logs / "bots" / f"{m.name}.log", config.limits, config.sandbox
            )

        try:
            for m in manifests:
                await start_bot(m)
            for name in names:
                await server.wait_for(name, config.connect_timeout_s)
            relaunched: set[str] = set()
            by_name = {m.name: m for m in manifests}

            async def ensure_connected(name: str) -> None:
                if name in server.bots or name in relaunched:
                    return
                proc = procs.get(name)
                if proc is not None and not proc.running:
                    relaunched.add(name)
                    await start_bot(by_name[name])
                    await server.wait_for(name, config.connect_timeout_s)

            await _play_schedule(store, server, rows, config, logs, ensure_connected, on_result)
        finally:
            with trio.CancelScope(shield=True):
                for conn in list(server.bots.values()):
                    with trio.move_on_after(1):
                        try:
                            await conn.send(Goodbye(reason="tournament over"))
                        except Exception:  # noqa: BLE001 - a bot already gone is fine
                            pass
                    await conn.aclose("tournament over")
                with trio.move_on_after(3):
                    for proc in procs.values():
                        await proc.stop()
                for proc in procs.values():
                    proc.stop_now()
            nursery.cancel_scope.cancel()

    store.finish_tournament(tid)
    matches = store.matches(tid)
    reasons: dict[str, int] = {}
    for row in matches:
        reasons[row["reason"] or "unplayed"] = reasons.get(row["reason"] or "unplayed", 0) + 1
    return TournamentReport(
        tournament_id=tid,
        ratings=fit_ratings(store.results(tid), names),
        matches=len(matches),
        reasons=reasons,
        seconds=trio.current_time() - t0,
    )


async def _play_schedule(
    store: Store,
    server: ArenaServer,
    rows: list[MatchRow],
    config: TournamentConfig,
    logs: Path,
    ensure_connected: Callable[[str], object],
    on_result: OnResult | None,
) -> None:
    """Run ``rows`` with at most ``concurrency`` at once and each bot in one match at a time."""
    pending = list(rows)
    busy: set[str] = set()
    changed = trio.Event()

    async def play(row: MatchRow) -> None:
        nonlocal changed
        try:
            await play_match(store, server, row, config.match, logs, ensure_connected, on_result)
        finally:
            busy.discard(row.bot0)
            busy.discard(row.bot1)
            changed.set()
            changed = trio.Event()

    async with trio.open_nursery() as nursery:
        while pending:
            started = False
            if len(busy) // 2 < config.concurrency:
                for i, row in enumerate(pending):
                    if row.bot0 not in busy and row.bot1 not in busy:
                        busy.update((row.bot0, row.bot1))
                        del pending[i]
                        nursery.start_soon(play, row)
                        started = True
                        break
            if not started:
                await changed.wait()


async def play_match(
    store: Store,
    server: ArenaServer,
    row: MatchRow,
    match_config: MatchConfig,
    logs: Path,
    ensure_connected: Callable[[str], object] | None = None,
    on_result: OnResult | None = None,
) -> MatchResult:
    """Referee one scheduled match, commit its result, then announce it. A bot not connected
    loses by ``forfeit_disconnect`` (both absent: ``aborted``)."""
    if ensure_connected is not None:
        for name in (row.bot0, row.bot1):
            await ensure_connected(name)  # type: ignore[misc]
    conns = [server.bots.get(row.bot0), server.bots.get(row.bot1)]
    log_path = logs / f"{row.match_key}.jsonl"

    async def record(result: MatchResult) -> None:
        store.record_result(row.match_key, result, str(log_path))
        if on_result:
            on_result(row, result)

    absent = [i for i, c in enumerate(conns) if c is None or c.closed.is_set()]
    if absent:
        result = MatchResult(
            match_id=row.match_key,
            winner=None if len(absent) == 2 else 1 - absent[0],
            reason="aborted" if len(absent) == 2 else "forfeit_disconnect",
            scores=[0, 0],
            manches=[0, 0],
            detail="not connected: " + ", ".join((row.bot0, row.bot1)[i] for i in absent),
            faulty=absent[0] if len(absent) == 1 else None,
        )
        await record(result)
        return result
    with MatchLog(log_path) as log:
        referee = Referee(row.match_key, row.seed, match_config, (conns[0], conns[1]), log, record)
        return await referee.run()


def stable_order(report: TournamentReport) -> bool:
    """True if adjacent bots in the ranking are separated by more than their intervals
    overlap (a rough check that the order is settled)."""
    r = report.ratings
    return all(
        (a.elo - b.elo) > math.hypot(a.ci95, b.ci95) for a, b in zip(r, r[1:])
    )
