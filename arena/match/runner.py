"""One way to play a match: :class:`MatchRunner`, which every driver uses (issue 23).

A driver (a tournament, a worker, a contest server, a benchmark) decides what to play next and
where results go; the runner is given one match (:class:`MatchSpec`), the two seats'
connections (None for a seat whose bot is not there), the path of its log and a
:class:`ResultSink`, and plays the match to a result: the sink gets it once, before the bots
hear ``match_end``. Nothing outside the core (:class:`arena.match.core.MatchCore`) decides a
result: an absent bot, a log that cannot be opened or written and a cancellation are inputs of
the core (:meth:`~arena.match.core.MatchCore.absent`, :meth:`~arena.match.core.MatchCore.log_failed`,
:meth:`~arena.match.core.MatchCore.cancelled`), and the runner only carries out what it returns;
the match itself is driven by :class:`arena.match.referee.Referee`.

Cancellation (``on_cancel``): ``"leave"`` (a tournament: the match stays pending and is played
again from its first deal on ``--resume``) or ``"abort"`` (a contest server shutting down: the
result is recorded as ``aborted``, once, without waiting: :meth:`ResultSink.record_now`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec
import trio

from arena.match.core import MatchConfig, MatchCore, MatchResult, result_line
from arena.match.log import MatchLog
from arena.match.referee import Referee
from arena.match.seat import Connection
from arena.metrics import METRICS


class MatchSpec(msgspec.Struct, frozen=True):
    """What is played: ``match_id`` (its key), ``seed`` (the deals), ``config`` (game, rules,
    time control, fault policy), the bots' ``names`` per seat, ``pair`` (the duplicate pair it
    belongs to, shown to spectators) and ``packs`` (prepared packs dealt before the seeded
    shuffles: scripted situations)."""

    match_id: str
    seed: int
    config: MatchConfig
    names: tuple[str, str]
    pair: str | None = None
    packs: Any = ()


class LogRef(msgspec.Struct, frozen=True):
    """The match log a result points to: its ``path`` and the full hash of its last line
    (``last_hash``, 64 hex digits), which the store keeps so a rewritten log is caught."""

    path: str
    last_hash: str


class ResultSink(Protocol):
    """Where a driver's results go (the store, under a lease for a worker)."""

    async def record(self, result: MatchResult, log: LogRef | None) -> None:
        """Commit ``result`` (``log``: None if its log could not be written); may wait and
        retry while storage fails. Called once per match, before ``match_end`` is sent."""
        ...

    def record_now(self, result: MatchResult, log: LogRef | None) -> None:
        """Commit ``result`` at once, once, at a cancellation (a failure leaves the match
        pending: the sink swallows it)."""
        ...

    def storage_fault(self, what: str, error: OSError) -> None:
        """``what`` (``"match log"``) could not be written: ``error``."""
        ...


class Spectators(Protocol):
    """Who follows matches live (:class:`arena.net.spectate.SpectatorHub`, or a worker's
    forwarder to the front's hub)."""

    def match_started(self, match_id: str, game: str, bots: list[str], rules: Any, time: Any,
                      pair: str | None = None) -> None: ...

    def event(self, match_id: str, event: Any, seen_by: tuple[int, ...]) -> None: ...

    def match_ended(self, match_id: str, winner: int | None, reason: str, scores: list[int]) -> None: ...


class NoSink:
    """A sink that keeps nothing (benchmarks, tests): the result is only returned."""

    async def record(self, result: MatchResult, log: LogRef | None) -> None:
        """Nothing to commit."""

    def record_now(self, result: MatchResult, log: LogRef | None) -> None:
        """Nothing to commit."""

    def storage_fault(self, what: str, error: OSError) -> None:
        """Nothing to pause."""


_yield = trio.lowlevel.cancel_shielded_checkpoint
"""Let the other tasks run (the loop polls for I/O first) without being a cancellation point."""


def _count(game: str, result: MatchResult) -> None:
    outcome = "aborted" if result.reason == "aborted" else ("draw" if result.winner is None else "win")
    METRICS.matches_finished.labels(game, outcome, result.reason).inc()


class MatchRunner:
    """Plays ``spec`` between ``seats`` (a connection per seat, None if absent) to a result
    committed to ``sink``; ``log_path``: where its log goes (``.gz``: compressed; None: no
    file); ``hub``: spectators; ``on_cancel``: see the module docstring; ``log_factory(path)``
    opens the log (a :class:`~arena.match.log.MatchLog`, or a subclass that also watches its
    lines: the test matches of :mod:`arena.schedule.on_demand`). Call :meth:`run`.
    ``ValueError`` for an unknown game or a bad time control."""

    def __init__(self, spec: MatchSpec, seats: tuple[Connection | None, Connection | None],
                 sink: ResultSink | None = None, log_path: str | Path | None = None, *,
                 hub: Spectators | None = None, on_cancel: Literal["leave", "abort"] = "leave",
                 log_factory: Callable[[Path | None], MatchLog] = MatchLog) -> None:
        self.spec = spec
        self.log_factory = log_factory
        self.seats = seats
        self.sink: ResultSink = sink if sink is not None else NoSink()
        self.log_path = Path(log_path) if log_path is not None else None
        self.hub = hub
        self.on_cancel = on_cancel
        self.result: MatchResult | None = None
        """The result once recorded."""

    def _log_ref(self, log: MatchLog) -> LogRef | None:
        if log.error is not None or self.log_path is None:
            return None
        return LogRef(str(self.log_path), log.last_hash)

    async def run(self) -> MatchResult:
        """Play the match to its result, commit it to the sink, return it. A seat's fault never
        raises; the sink's own errors and a cancellation do (after ``on_cancel``)."""
        spec, seats = self.spec, self.seats
        # a match's start and end are the longest steps a server takes (a log file opened, a
        # deal, a log compressed and closed: about a millisecond in all): the loop polls for
        # answers between their parts (_yield), so that the other matches' answers are not held
        # up behind all of them at once. Not a cancellation point: a match handed to a runner is
        # played or recorded as on_cancel says
        await _yield()
        absent = [i for i, c in enumerate(seats) if c is None or c.closed.is_set()]
        if absent:
            return await self._unplayed(absent)
        a, b = seats
        assert a is not None and b is not None
        with self.log_factory(self.log_path) as log:
            if log.error is not None:  # not even opened: the match is not played
                self.sink.storage_fault("match log", log.error)
                core = MatchCore(spec.match_id, spec.seed, spec.config, spec.names, packs=spec.packs)
                return await self._finish(core.log_failed(log.error, opened=False).result, None)
            await _yield()
            return await self._play(a, b, log)

    async def _unplayed(self, absent: list[int]) -> MatchResult:
        """A bot was not there: the core writes the whole log (header, incidents, result)."""
        spec = self.spec
        out = MatchCore(spec.match_id, spec.seed, spec.config, spec.names, packs=spec.packs).absent(absent)
        assert out.result is not None
        with self.log_factory(self.log_path) as log:
            for line in out.log:  # each its own hashed block, as a log of a match never started is
                log.write(line)
            log.write(result_line(out.result))
        if log.error is not None:
            self.sink.storage_fault("match log", OSError(f"the log of {spec.match_id} could not be written"))
        return await self._finish(out.result, self._log_ref(log))

    async def _finish(self, result: MatchResult | None, log: LogRef | None) -> MatchResult:
        assert result is not None
        _count(self.spec.config.game, result)
        await self.sink.record(result, log)
        self.result = result
        return result

    async def _play(self, a: Connection, b: Connection, log: MatchLog) -> MatchResult:
        spec, hub, sink = self.spec, self.hub, self.sink

        async def record(result: MatchResult) -> None:
            await _yield()  # the log was just compressed and flushed: the last long step of a match
            await sink.record(result, self._log_ref(log))
            self.result = result

        referee = Referee(spec.match_id, spec.seed, spec.config, (a, b), log, record,
                          hub.event if hub is not None else None, spec.packs)
        if hub is not None:
            cfg = spec.config
            hub.match_started(spec.match_id, cfg.game, list(spec.names), cfg.rules, cfg.time, spec.pair)
        try:
            return await referee.run()
        except trio.Cancelled:
            if self.on_cancel == "abort" and self.result is None:
                with trio.CancelScope(shield=True):
                    aborted = referee.core.cancelled().result
                    assert aborted is not None
                    self.result = referee.result = aborted
                    sink.record_now(aborted, self._log_ref(log))
            raise
        finally:
            if log.error is not None:
                sink.storage_fault("match log", log.error)
            if hub is not None:
                r = self.result
                hub.match_ended(spec.match_id, r.winner if r else None, r.reason if r else "aborted",
                                r.scores if r else [0, 0])


def aborted(match_id: str, detail: str) -> MatchResult:
    """The result of a match stopped before a runner of this process could play it to its end
    (queued for a worker when the server shut down, or cut by a bug): ``aborted`` with
    ``detail``, as the core decides it (:meth:`arena.match.core.MatchCore.abort`)."""
    out = MatchCore(match_id, 0, MatchConfig(), ("", "")).abort(detail)
    assert out.result is not None
    return out.result


__all__ = ["LogRef", "MatchRunner", "MatchSpec", "NoSink", "ResultSink", "Spectators", "aborted"]
