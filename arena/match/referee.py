"""The referee: runs one match between two seats.

For each decision it asks the seat to act (:meth:`arena.match.seat.Seat.ask`) with the legal
actions (the full list, or for a discard asked of a bot that chose the compact form at
``hello``, the engine's description of the choice: :func:`arena.games.base.offer`) and that
seat's view, checks the answer with the rules engine, and sends every resulting
event to exactly the seats allowed to see it (``seen_by``). Every event, action and incident
goes to the match log, hidden information included and marked.

Faults end the match by forfeit (ecarte.md §E8.1): a timeout (or, with ``on_timeout = auto``,
more than ``max_strikes`` timeouts, the referee playing the first legal action meanwhile), a
disconnect, a protocol fault, or more illegal actions than ``max_illegal`` allows (an illegal
action within the allowance gets an ``error`` and the decision is asked again).

The result is handed to ``record`` (which commits it to the database) *before* ``match_end``
is sent to anyone.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec

from arena.games import GAMES
from arena.games.base import IllegalAction, Seen, offer
from arena.match.clock import Clock
from arena.match.log import MatchLog
from arena.match.seat import Connection, Seat, SeatFault, SeatTimeout
from arena.metrics import METRICS
from protocol.messages import EventMsg, MatchEnd, MatchStart, Rules, TimeControl


class MatchConfig(msgspec.Struct, omit_defaults=True):
    """How a match is played: game, rule options, time control and fault policy (§E8.1).

    ``on_timeout``: ``forfeit`` (default) or ``auto`` (the referee plays the first legal
    action and counts a strike; a timeout after ``max_strikes`` strikes forfeits).
    ``max_illegal``: illegal actions tolerated per seat per match before forfeit (default 0).
    """

    game: str = "ecarte"
    rules: Rules = msgspec.field(default_factory=Rules)
    time: TimeControl = msgspec.field(default_factory=TimeControl)
    on_timeout: Literal["forfeit", "auto"] = "forfeit"
    max_strikes: int = 3
    max_illegal: int = 0


class MatchResult(msgspec.Struct):
    """The outcome of one match.

    ``winner`` is the winning seat (None for a draw or an abort); ``reason`` is how a match
    played out ended (``target`` in Écarté; ``rubicon``, ``cent`` or ``draw`` in Piquet), else a
    forfeit reason (``forfeit_timeout``, ``forfeit_disconnect``,
    ``forfeit_protocol``, ``forfeit_illegal``) or ``aborted``; ``faulty`` the seat at fault.
    ``scores``/``manches`` per seat; ``decisions`` answered; ``duration_ms`` wall time.
    """

    match_id: str
    winner: int | None
    reason: str
    scores: list[int]
    manches: list[int]
    detail: str = ""
    faulty: int | None = None
    decisions: int = 0
    deals: int = 0
    duration_ms: int = 0
    margin: int = 0
    """Piquet: the winner's rubicon score (piquet.md §P8.4); 0 otherwise."""


Recorder = Callable[[MatchResult], Awaitable[None]]


async def _no_record(result: MatchResult) -> None:
    return None


class Referee:
    """Referees match ``match_id`` between ``conns[0]`` (seat 0) and ``conns[1]`` (seat 1).

    ``seed`` drives the engine's ``random.Random`` (deck order, first dealer). ``log`` receives
    every line of the match log. ``on_event(match_id, event, seen_by)`` is an optional hook
    for spectators/metrics. ``packs``: prepared packs the engine deals before its seeded
    shuffles (scripted situations: ``arena doctor``). Call :meth:`run`.
    """

    def __init__(
        self,
        match_id: str,
        seed: int,
        config: MatchConfig,
        conns: tuple[Connection, Connection],
        log: MatchLog,
        record: Recorder = _no_record,
        on_event: Callable[[str, Any, tuple[int, ...]], None] | None = None,
        packs: Any = (),
    ) -> None:
        if config.game not in GAMES:
            raise ValueError(f"unknown game {config.game!r}; known: {', '.join(GAMES)}")
        self.match_id = match_id
        self.seed = seed
        self.config = config
        self.log = log
        self.record = record
        self.on_event = on_event
        self.seats = [
            Seat(conns[i], i, match_id, Clock(config.time)) for i in (0, 1)
        ]
        self.engine = GAMES[config.game](config.rules, random.Random(seed), packs)
        self._seq = [0, 0]
        self.strikes = [0, 0]
        self.illegal = [0, 0]
        self.decisions = 0
        self.result: MatchResult | None = None
        # metric children looked up once, not on every decision
        self._m_decisions = METRICS.decisions.labels(config.game)
        self._m_latency = [METRICS.latency.labels(c.name) for c in conns]

    def _send_events(self, events: list[Seen]) -> None:
        log = self.log
        for event, seen_by in events:
            log.event(event, seen_by)
            if self.on_event is not None:
                self.on_event(self.match_id, event, seen_by)
            for s in seen_by:
                self._seq[s] += 1
                self.seats[s].queue(EventMsg(match_id=self.match_id, seq=self._seq[s], event=event))

    async def run(self) -> MatchResult:
        """Play the match to its end and return the result (never raises a seat's fault)."""
        t_start = time.monotonic()
        seats = self.seats
        game = self.config.game
        for seat in seats:
            seat.attach()
        METRICS.matches_in_play.labels(game).inc()
        try:
            result = await self._play()
        finally:
            METRICS.matches_in_play.labels(game).dec()
            for seat in seats:
                seat.detach()
        outcome = "aborted" if result.reason == "aborted" else ("draw" if result.winner is None else "win")
        METRICS.matches_finished.labels(game, outcome, result.reason).inc()
        result.duration_ms = int((time.monotonic() - t_start) * 1000)
        result.decisions = self.decisions
        result.deals = getattr(self.engine, "deal_no", 0)
        # duration is left out of the log so that a replay is byte-identical
        self.log.write(
            {
                "type": "result",
                "winner": result.winner,
                "reason": result.reason,
                "scores": result.scores,
                "manches": result.manches,
                "faulty": result.faulty,
                "margin": result.margin,
                "decisions": result.decisions,
                "detail": result.detail,
            }
        )
        self.log.flush()  # a storage fault must show before the result is committed
        if self.log.error is not None and result.reason != "aborted":
            result = self._log_failed(result.decisions, result.deals, result.duration_ms)
        await self.record(result)
        self.result = result
        for seat in seats:
            you = "none" if result.winner is None else ("win" if result.winner == seat.index else "loss")
            try:
                await seat.send(
                    MatchEnd(
                        match_id=self.match_id,
                        winner=result.winner,
                        you=you,  # type: ignore[arg-type]
                        reason=result.reason,
                        scores=result.scores,
                        manches=result.manches,
                        detail=result.detail,
                    )
                )
            except SeatFault:
                pass
        return result

    def _log_failed(self, decisions: int = 0, deals: int = 0, duration_ms: int = 0) -> MatchResult:
        """The match's log could not be written (a full disk, a read-only path): the match is
        aborted, the storage error in its detail (see :mod:`arena.store.health`)."""
        return MatchResult(match_id=self.match_id, winner=None, reason="aborted", scores=self.engine.scores,
                           manches=self.engine.manches, detail=f"match log could not be written: {self.log.error}",
                           decisions=decisions, deals=deals, duration_ms=duration_ms)

    async def _play(self) -> MatchResult:
        engine = self.engine
        cfg = self.config
        seats = self.seats
        self.log.write(
            {
                "type": "match",
                "match_id": self.match_id,
                "game": cfg.game,
                "seed": self.seed,
                "bots": [s.name for s in seats],
                "config": msgspec.to_builtins(cfg),
            }
        )
        try:
            for seat in seats:
                await seat.send(
                    MatchStart(
                        match_id=self.match_id,
                        game=cfg.game,
                        seat=seat.index,
                        opponent=seats[1 - seat.index].name,
                        rules=cfg.rules,
                        time=cfg.time,
                        on_timeout=cfg.on_timeout,
                        max_strikes=cfg.max_strikes,
                        max_illegal=cfg.max_illegal,
                    )
                )
            self._send_events(engine.start())
            while not engine.over:
                if self.log.error is not None:
                    return self._log_failed()
                s = engine.to_act
                seat = seats[s]
                seats[1 - s].check()
                decision = engine.decision
                legal = offer(engine, seat.conn.legal_form == "compact")
                try:
                    answer = await seat.ask(decision, legal, engine.view(s))
                except SeatTimeout as fault:
                    METRICS.timeouts.labels(seat.name).inc()
                    self.log.incident(s, fault.code, fault.detail)
                    if cfg.on_timeout == "auto" and self.strikes[s] < cfg.max_strikes:
                        self.strikes[s] += 1
                        await seat.conn.send_error(
                            "timeout",
                            f"{fault.detail}; the referee played the first legal action "
                            f"(strike {self.strikes[s]} of {cfg.max_strikes})",
                            id=fault.request_id,
                        )
                        action = engine.auto_action()
                        self.log.action(s, decision, action, auto=True)
                        self._send_events(engine.apply(action))
                        continue
                    await seat.conn.send_error("timeout", fault.detail, id=fault.request_id, fatal=True)
                    raise
                try:
                    events = engine.apply(answer.action)
                except IllegalAction as exc:
                    METRICS.illegal.labels(seat.name, exc.code).inc()
                    self.log.incident(s, exc.code, str(exc))
                    self.illegal[s] += 1
                    over = self.illegal[s] > cfg.max_illegal
                    await seat.conn.send_error(exc.code, str(exc), id=answer.id, fatal=over)
                    if over:
                        raise SeatFault("forfeit_illegal", exc.code, str(exc), s) from None
                    continue
                self.decisions += 1
                self._m_decisions.inc()
                self._m_latency[s].observe(answer.elapsed_ms / 1000)
                self.log.action(s, decision, answer.action)
                self._send_events(events)
            for seat in seats:  # a fault right behind the last answer is still charged
                seat.check()
        except SeatFault as fault:
            faulty = fault.seat
            if fault.reason in ("forfeit_disconnect", "forfeit_protocol"):
                self.log.incident(faulty, fault.code, fault.detail)
            return MatchResult(
                match_id=self.match_id,
                winner=1 - faulty,
                reason=fault.reason,
                scores=engine.scores,
                manches=engine.manches,
                detail=f"{seats[faulty].name}: {fault.code}: {fault.detail}",
                faulty=faulty,
            )
        return MatchResult(
            match_id=self.match_id,
            winner=engine.winner,
            reason=engine.end_reason,
            scores=engine.scores,
            manches=engine.manches,
            margin=engine.margin,
        )


__all__ = ["MatchConfig", "MatchResult", "Referee"]
