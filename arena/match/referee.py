"""The referee: the trio driver of one match's core (:class:`arena.match.core.MatchCore`), for two
connected seats. Drivers play matches through :class:`arena.match.runner.MatchRunner`, which
uses it (and handles absent seats, the log's file and cancellation).

The core decides everything (the rules, the fault policy of ecarte.md §E8.1, what each seat is
sent); the referee only carries it out. It seats both connections
(:class:`arena.match.seat.Connection`) with itself as their handler, so each answer, fault,
deadline and disconnect reaches the core in the task of the reader that saw it, which then
writes what the core returned (:meth:`Referee._apply`): the match log's lines, the spectators'
events, the metrics, and the bytes for each seat, the request last, its deadline armed on the
asked seat's reader just before the write starts. A plain answer may instead reach it in the
dispatcher's task (:meth:`Referee.answer_now`, :mod:`arena.match.dispatch`): the same steps, as
far as they go without waiting (:meth:`Referee._apply_now`); a write a socket does not take
whole is finished by the answering seat's reader. :meth:`Referee.run` starts the match, waits
for its end, writes the log's ``result`` line, hands the result to ``record`` (which commits it
to the database) and only then sends ``match_end``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import trio

from arena.match import fairclock
from arena.match.core import NOTHING, MatchConfig, MatchCore, MatchResult, Output, result_line
from arena.match.log import MatchLog
from arena.match.seat import Connection, HeldWrite, SendFailed
from arena.metrics import METRICS, DecisionTally

Recorder = Callable[[MatchResult], Awaitable[None]]


async def _no_record(result: MatchResult) -> None:
    return None


class Referee:
    """Referees match ``match_id`` between ``conns[0]`` (seat 0) and ``conns[1]`` (seat 1).

    ``seed`` drives the engine's ``random.Random`` (deck order, first dealer). ``log`` receives
    every line of the match log. ``on_event(match_id, event, seen_by)`` is an optional hook
    for spectators/metrics. ``packs``: prepared packs the engine deals before its seeded
    shuffles (scripted situations: ``arena doctor``). Call :meth:`run`. ``ValueError`` for an
    unknown game or a bad time control.
    """

    playing = 0
    """Matches being refereed in this process (admission control reads it)."""

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
        self.match_id = match_id
        self.seed = seed
        self.config = config
        self.conns = conns
        self.log = log
        self.record = record
        self.on_event = on_event
        self.core = MatchCore(match_id, seed, config, (conns[0].name, conns[1].name),
                              (conns[0].legal_form == "compact", conns[1].legal_form == "compact"), packs,
                              (conns[0].core.new_request_id, conns[1].core.new_request_id))
        self.engine = self.core.engine
        self.result: MatchResult | None = None
        self._over = trio.Event()
        self._now = trio.current_time  # the loop clock's own method once run() starts
        # decisions and their latency counted here, added to the metrics in batches
        self._tally = DecisionTally(METRICS.decisions.labels(config.game), METRICS.latency)

    @property
    def decisions(self) -> int:
        """Decisions answered so far."""
        return self.core.decisions

    async def run(self) -> MatchResult:
        """Play the match to its end and return the result (never raises a seat's fault)."""
        t_start = time.monotonic()
        self._now = fairclock.watch().now
        conns = self.conns
        core = self.core
        game = self.config.game
        for i, conn in enumerate(conns):
            conn.attach(self, i)
        METRICS.matches_in_play.labels(game).inc()
        Referee.playing += 1
        try:
            await self._apply(core.start())
            if core.result is None:
                await self._apply(core.begin())
            await self._over.wait()
        finally:
            self._tally.flush()
            Referee.playing -= 1
            METRICS.matches_in_play.labels(game).dec()
            for conn in conns:
                conn.detach(self)
        result = core.result
        assert result is not None
        outcome = "aborted" if result.reason == "aborted" else ("draw" if result.winner is None else "win")
        METRICS.matches_finished.labels(game, outcome, result.reason).inc()
        result.duration_ms = int((time.monotonic() - t_start) * 1000)
        self.log.write(result_line(result))
        self.log.flush()  # a storage fault must show before the result is committed
        if self.log.error is not None:  # the core decides: a result without its log is aborted
            failed = core.log_failed(self.log.error).result
            if failed is not None:
                failed.duration_ms = result.duration_ms
                result = failed
        await self.record(result)
        self.result = result
        for seat, data in core.match_end():
            try:
                await conns[seat].send_bytes(data)
            except SendFailed:
                pass
        return result

    async def _apply(self, out: Output) -> None:
        """Carry out one output of the core: log, spectators, metrics, then the writes in order.
        A failed write is the seat's disconnect (fed back to the core); writes of an output
        overtaken by the end of the match are dropped."""
        rest = self._apply_now(out)
        if rest is not None:
            await rest

    def _apply_now(self, out: Output) -> Coroutine[Any, Any, None] | None:
        """:meth:`_apply` as far as it goes without waiting: None when done, else the rest to
        await (a write the socket did not take whole, an abort)."""
        if out is NOTHING:
            return None
        log = self.log
        log.write_all(out.log)
        core = self.core
        if out.events and self.on_event is not None:
            for event, seen_by in out.events:
                self.on_event(self.match_id, event, seen_by)
        if out.elapsed_ns is not None:
            self._tally.add(out.elapsed_ns / 1e9)
        if out.timeout is not None:
            METRICS.timeouts.labels(self.conns[out.timeout].name).inc()
        if out.illegal is not None:
            METRICS.illegal.labels(self.conns[out.illegal[0]].name, out.illegal[1]).inc()
        if log.error is not None and core.result is None:
            return self._apply(core.log_failed(log.error))
        return self._write_now(out, 0)

    def _write_now(self, out: Output, start: int) -> Coroutine[Any, Any, None] | None:
        """Write ``out.sends[start:]`` in order, each straight to its socket; the request last,
        its deadline armed just before its write starts. None when all went, else the rest to
        await (:meth:`_write_rest`) from the first write a socket did not take whole."""
        core = self.core
        sends = out.sends
        last = len(sends) - 1
        for i in range(start, last + 1):
            if core.result is not None and core.result is not out.result:
                return None  # another input ended the match meanwhile
            seat, data = sends[i]
            conn = self.conns[seat]
            if i == last and out.asked is not None:
                rid = out.asked[1]
                conn.core.expect(rid)
                now_ns = int(self._now() * 1e9)
                conn.arm(core.sent(seat, now_ns), rid, now_ns)
            rest = conn.send_now(data)
            if rest is not None:
                return self._write_rest(out, i, rest)
        if out.result is not None:
            self._over.set()
        return None

    async def _write_rest(self, out: Output, i: int, rest: HeldWrite) -> None:
        """Finish write ``i`` of ``out`` (``rest``: what its socket did not take, in its turn),
        then the writes after it."""
        seat = out.sends[i][0]
        try:
            await self.conns[seat].send_held(rest)
        except SendFailed as exc:
            if self.core.result is None:
                await self._apply(self.core.disconnected(seat, str(exc)))
                return
        more = self._write_now(out, i + 1)
        if more is not None:
            await more

    def writable_now(self) -> bool:
        """Whether both seats' sockets take a write at once (see
        :meth:`arena.match.seat.Connection.writable_now`): :meth:`answer_now` may then run."""
        a, b = self.conns
        return a.direct and b.direct

    def answer_now(self, conn: Connection, rid: int, action: Any, t_ns: int) -> Coroutine[Any, Any, None] | None:
        """:meth:`on_answer` without waiting, for the dispatcher's task
        (:meth:`arena.match.seat.Connection.on_readable`): None when done, else the rest, which
        the seat's reader task awaits."""
        return self._apply_now(self.core.answer(conn.seat_no, rid, action, t_ns, conn.core.last_line))

    # -- the connections' handler (arena.match.seat.Handler)

    async def on_answer(self, conn: Connection, rid: int, action: Any, t_ns: int) -> None:
        """Seat ``conn.seat_no`` answered request ``rid`` (arrived at ``t_ns``, loop clock, ns)."""
        await self._apply(self.core.answer(conn.seat_no, rid, action, t_ns, conn.core.last_line))

    async def on_fault(self, conn: Connection, code: str, detail: str) -> None:
        """A protocol fault of that seat (its error is already sent), caused by the line the
        connection classified last (kept in the log)."""
        await self._apply(self.core.fault(conn.seat_no, code, detail, conn.core.last_line, conn.core.last_len))

    async def on_deadline(self, conn: Connection, rid: int) -> None:
        """That seat's request ``rid`` timed out."""
        await self._apply(self.core.timeout(conn.seat_no, rid))

    async def on_closed(self, conn: Connection, reason: str) -> None:
        """That seat's connection ended."""
        await self._apply(self.core.disconnected(conn.seat_no, f"connection lost ({reason})"))


__all__ = ["MatchConfig", "MatchResult", "Referee"]
