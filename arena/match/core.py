"""The match core without I/O: the whole fault policy of ecarte.md §E8.1, in one place.

In the style of h11 (events in, events and bytes out; no sockets, no clock, no tasks), two
state machines that a driver (:mod:`arena.match.referee`, :mod:`arena.match.seat`) feeds:

* :class:`ConnectionCore` - one bot connection's side of the protocol (docs/protocol.md §10,
  §11): it decodes each line the bot sends and says what it is: the answer to the pending
  request, or an error to send back (``late_answer``, ``duplicate_answer``, ``not_your_turn``,
  ``unknown_request``, a framing code, ``wrong_role``), whether that error is a protocol fault
  (fatal in a match, one step towards ``too_many_errors``) and whether the connection must close.
  It owns the request ids of the connection (unique, increasing, never reset).
* :class:`MatchCore` - one match: it wraps the pure rules engine (:mod:`arena.games`), is told
  :meth:`~MatchCore.start`, "seat s answered request r with this action at time t"
  (:meth:`~MatchCore.answer`), "seat s's deadline passed" (:meth:`~MatchCore.timeout`), "seat s
  committed a protocol fault" (:meth:`~MatchCore.fault`), "seat s is gone"
  (:meth:`~MatchCore.disconnected`), "stop" (:meth:`~MatchCore.abort`, :meth:`~MatchCore.cancelled`),
  "the log cannot be opened or written" (:meth:`~MatchCore.log_failed`) and "a bot is absent"
  (:meth:`~MatchCore.absent`); each call returns an :class:`Output`: the bytes to write to each
  seat (encoded once, in order), the lines for the match log, the engine events for spectators,
  the seat now asked (whose deadline the driver arms once the request is written:
  :meth:`~MatchCore.sent`) and, once over, the :class:`MatchResult`. The core alone decides a
  result: its drivers (:mod:`arena.match.referee`, :mod:`arena.match.runner`) only carry it out.

Times the driver passes are integer nanoseconds on whatever monotonic clock it uses (the one
unit from the socket to the core: ``t_ns``, ``deadline_ns``); the core only subtracts them, and
its clocks count in the wire's milliseconds. What the driver passes as "sent" and "answered"
times is the fair clock's business (:mod:`arena.match.fairclock`, docs/protocol.md §10.4).

The policy (ecarte.md §E8.1, piquet.md §P9; docs/protocol.md §10.5, §10.6, §11, §12), every
number from :class:`arena.match.limits.Limits`:

* a decision may take ``move_ms``, then draws on the bank; past ``move_ms + bank + grace_ms``
  it has timed out (:class:`arena.match.clock.Clock`);
* a timeout forfeits (``forfeit_timeout``), or under ``on_timeout = auto`` the first legal
  action is played for the seat and counts a strike, until ``max_strikes`` strikes;
* an illegal action within ``max_illegal`` is answered with a non-fatal error and the decision
  asked again; beyond it the seat forfeits (``forfeit_illegal``);
* a protocol fault in a match forfeits at once (``forfeit_protocol``); a closed or unwritable
  connection forfeits (``forfeit_disconnect``); a bot absent when its match is due forfeits it
  (both absent: ``aborted``); a match stopped by the server, or whose log cannot be written, is
  ``aborted``. Every charge is logged as an ``incident`` naming the seat.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import Callable
from itertools import chain as _chain
from itertools import combinations as _combinations
from typing import Any, Literal

import msgspec
from msgspec import Raw

from arena.games import GAMES
from arena.games.base import IllegalAction, Seen, offer
from arena.match.clock import Clock
from arena.match.limits import LIMITS, Limits
from arena.match.log import LOG_VERSION, RAW_BYTES, LogAction, LogIncident, LogSeen, offered_fields, raw_fields
from protocol.framing import ProtocolError, decode_client, encode
from protocol.messages import (
    ActionMsg,
    Compact,
    Error,
    ErrorCode,
    Hello,
    MatchEnd,
    MatchStart,
    Request,
    Rules,
    TimeControl,
)

# ----------------------------------------------------------------------------- configuration


class MatchConfig(msgspec.Struct, omit_defaults=True):
    """How a match is played: game, rule options, time control and fault policy (§E8.1).

    ``on_timeout``: ``forfeit`` (default) or ``auto`` (the referee plays the first legal
    action and counts a strike; a timeout after ``max_strikes`` strikes forfeits).
    ``max_illegal``: illegal actions tolerated per seat per match before forfeit. Defaults and
    meanings: :class:`arena.match.limits.Limits`.
    """

    game: str = "ecarte"
    rules: Rules = msgspec.field(default_factory=Rules)
    time: TimeControl = msgspec.field(default_factory=TimeControl)
    on_timeout: Literal["forfeit", "auto"] = LIMITS.on_timeout
    max_strikes: int = LIMITS.max_strikes
    max_illegal: int = LIMITS.max_illegal

    def limits(self, base: Limits = LIMITS) -> Limits:
        """``base`` with this match's time control and fault policy. ``ValueError`` naming the
        field for a value the constraints of :class:`~arena.match.limits.Limits` refuse."""
        try:
            return msgspec.convert(
                {**msgspec.to_builtins(base), "move_ms": self.time.move_ms, "bank_ms": self.time.bank_ms,
                 "grace_ms": self.time.grace_ms, "on_timeout": self.on_timeout, "max_strikes": self.max_strikes,
                 "max_illegal": self.max_illegal}, Limits)
        except msgspec.ValidationError as exc:
            raise ValueError(str(exc)) from None


class MatchResult(msgspec.Struct):
    """The outcome of one match.

    ``winner`` is the winning seat (None for a draw or an abort); ``reason`` is how a match
    played out ended (``target`` in Écarté; ``rubicon``, ``cent`` or ``draw`` in Piquet; ``deals``),
    else a forfeit reason (``forfeit_timeout``, ``forfeit_disconnect``, ``forfeit_protocol``,
    ``forfeit_illegal``) or ``aborted``; ``faulty`` the seat at fault.
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


def result_line(result: MatchResult) -> dict[str, Any]:
    """The ``result`` line of a match log (no duration: a replay is byte-identical)."""
    return {"type": "result", "winner": result.winner, "reason": result.reason, "scores": result.scores,
            "manches": result.manches, "faulty": result.faulty, "margin": result.margin,
            "decisions": result.decisions, "detail": result.detail}


def long_line_note(nbytes: int, limits: Limits = LIMITS) -> str:
    """The clause a timeout's message ends with when the request line was long (``nbytes``
    bytes, newline included, at least ``limits.long_line_bytes``), else ``""``."""
    if nbytes < limits.long_line_bytes:
        return ""
    return (f"; the request line was {nbytes:,} bytes long: a bot must read lines of any length "
            "(docs/protocol.md §2), or ask for the compact form at hello (§8.13)")


def unplayed(match_id: str, names: tuple[str, str],
             absent: list[int]) -> tuple[MatchResult, list[tuple[int, str, str]]]:
    """A match not played because the seats ``absent`` (one or both) were not connected when it
    was due: the absent seat forfeits (``forfeit_disconnect``), both absent is ``aborted``
    (docs/protocol.md §12). Returns the result and the incidents to log ``(seat, code, detail)``."""
    both = len(absent) == 2
    result = MatchResult(
        match_id=match_id, winner=None if both else 1 - absent[0],
        reason="aborted" if both else "forfeit_disconnect", scores=[0, 0], manches=[0, 0],
        detail="not connected: " + ", ".join(names[i] for i in absent), faulty=None if both else absent[0])
    incidents = [(i, "not_connected", f"{names[i]} was not connected when the match was due") for i in absent]
    return result, incidents


def _refused(action: Any, raw: bytes | None, raw_len: int | None) -> dict[str, Any]:
    """The fields of an illegal answer's incident (:class:`arena.match.log.LogIncident`): the
    line as the bot sent it (``raw``, cut), and the action as decoded when the line was cut (or
    not given) and the action is short enough to keep."""
    extra = {} if raw is None else raw_fields(raw)
    if raw_len is not None and extra:
        extra["raw_len"] = raw_len
    if raw is None or extra["raw_len"] > len(raw[:RAW_BYTES]):
        encoded = msgspec.json.encode(action)
        if len(encoded) <= RAW_BYTES:
            extra["action"] = action
    return extra


# ----------------------------------------------------------------------------- one connection


class Fault(msgspec.Struct, frozen=True, gc=False):
    """A protocol fault of a seated connection (docs/protocol.md §11): its ``code`` and a
    readable ``detail``; in a match, fatal (``forfeit_protocol``)."""

    code: str
    detail: str


class Answer(msgspec.Struct, frozen=True, gc=False):
    """A line that answers the pending request ``rid`` with ``action``."""

    rid: int
    action: Any


class Refusal(msgspec.Struct, frozen=True, gc=False):
    """A line that earns an error: ``error`` to send back; ``fault`` the protocol fault it is
    for the match the connection sits in (None: harmless, e.g. ``late_answer``); ``close`` the
    reason to close the connection with (``too_many_errors``) or None."""

    error: Error
    fault: Fault | None = None
    close: str | None = None


Verdict = Answer | Refusal
"""What a line a bot sent is (:meth:`ConnectionCore.line`)."""


class ConnectionCore:
    """One bot connection's protocol state (docs/protocol.md §10.1, §10.2, §11), without I/O.

    ``seated`` is True while the connection sits in a match (or a chouette auction): a protocol
    fault is then fatal. :meth:`line` classifies each line the bot sends; :meth:`broken` a line
    the framing refused (``line_too_long``, ``truncated``). Request ids come from
    :meth:`new_request_id`; :meth:`expect` marks one pending, :meth:`expire` gives it up.
    """

    __slots__ = ("limits", "seated", "pending_id", "errors", "_next_id", "_expired", "_answered", "last_line",
                 "last_len")

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.limits = limits
        self.seated = False
        self.pending_id: int | None = None
        self.errors = 0
        """Protocol faults committed so far (towards ``limits.max_errors``: ``too_many_errors``)."""
        self._next_id = 0
        self._expired: deque[int] = deque(maxlen=256)
        self._answered: deque[int] = deque(maxlen=256)
        self.last_line = b""
        """The last line classified by :meth:`line` (or the first bytes of a line the framing
        refused, :meth:`refused`): what the match log keeps of a rejected answer or a fault."""
        self.last_len = 0
        """The whole length of :attr:`last_line`'s line (bytes, newline excluded)."""

    def new_request_id(self) -> int:
        """A fresh request id, unique on this connection."""
        self._next_id += 1
        return self._next_id

    def expect(self, rid: int) -> None:
        """Request ``rid`` has been sent: it is now the pending one."""
        self.pending_id = rid

    def expire(self) -> None:
        """The pending request (if any) is given up (a timeout, the match over): an answer to
        it later gets ``late_answer``, never a fault."""
        if self.pending_id is not None:
            self._expired.append(self.pending_id)
            self.pending_id = None

    def line(self, line: bytes) -> Verdict | None:
        """What a line the bot sent (without its newline) is: None for a blank line (ignored),
        an :class:`Answer` to the pending request, else a :class:`Refusal`. The line is kept in
        :attr:`last_line` (and its length in :attr:`last_len`) for the log of a refused answer."""
        self.last_line = line
        self.last_len = len(line)
        try:
            msg = decode_client(line)
        except ProtocolError as exc:
            if not line.strip():
                return None
            return self._protocol_fault(exc.code, exc.message)
        if isinstance(msg, ActionMsg):
            rid = msg.id
            if rid == self.pending_id and self.seated:
                self.pending_id = None
                self._answered.append(rid)
                return Answer(rid, msg.action)
            if rid in self._expired:
                text = f"request {rid} is no longer pending (it timed out or its match ended); answer ignored"
                return Refusal(Error(code="late_answer", message=text, id=rid))
            if rid in self._answered:
                return self._protocol_fault("duplicate_answer", f"request {rid} was already answered", rid)
            if self.seated and self.pending_id is None:
                return self._protocol_fault("not_your_turn", f"no decision is asked of you (request {rid})", rid)
            return self._protocol_fault("unknown_request", f"no request {rid} is pending", rid)
        if isinstance(msg, Hello):
            return self._protocol_fault("unexpected_hello", "hello is only valid as the first line")
        # list / subscribe / unsubscribe / bet: spectator messages, harmless from a bot
        text = f"{type(msg).__name__} is for spectators; this connection is a bot"
        return Refusal(Error(code="wrong_role", message=text))

    def _protocol_fault(self, code: ErrorCode, message: str, rid: int | None = None) -> Refusal:
        self.errors += 1
        close = "too_many_errors" if self.errors >= self.limits.max_errors else None
        return Refusal(Error(code=code, message=message, id=rid, fatal=self.seated),
                       Fault(code, message), close)

    def too_many(self) -> Error:
        """The closing ``too_many_errors`` error (after the error that reached the limit)."""
        return Error(code="too_many_errors", message=f"{self.errors} errors: closing", fatal=True)

    def refused(self, head: bytes, size: int) -> None:
        """The framing refused a line (``line_too_long``, ``truncated``): ``head`` its first bytes
        kept, ``size`` the bytes of it received (see :attr:`last_line`)."""
        self.last_line = head
        self.last_len = size

    @staticmethod
    def broken(exc: ProtocolError) -> Error:
        """The fatal error for a line the framing refused (the connection then closes)."""
        return Error(code=exc.code, message=exc.message, fatal=True)


# ----------------------------------------------------------------------------- one match


class Output(msgspec.Struct, gc=False):
    """What one input to :class:`MatchCore` produced, in order.

    ``sends``: ``(seat, bytes)`` writes; ``log``: objects for
    :meth:`arena.match.log.MatchLog.write`; ``events``: engine events with the seats that saw
    them (for spectators); ``asked``: ``(seat, request id)`` of the request among ``sends`` whose
    deadline the driver arms once written (:meth:`MatchCore.sent`), else None; ``result``: set
    when the match is over. For metrics: ``elapsed_ns`` of an accepted answer of seat
    ``decided``, ``timeout`` the seat that timed out, ``illegal`` ``(seat, code)`` of an illegal
    action."""

    sends: list[tuple[int, bytes]] = msgspec.field(default_factory=list)
    log: list[Any] = msgspec.field(default_factory=list)
    events: list[Seen] = msgspec.field(default_factory=list)
    asked: tuple[int, int] | None = None
    result: MatchResult | None = None
    elapsed_ns: int | None = None
    decided: int = 0
    timeout: int | None = None
    illegal: tuple[int, str] | None = None


NOTHING = Output()
"""The output of an input that changes nothing (an input after the end, a stale id). Never
modify it."""


class _Pending(msgspec.Struct, gc=False):
    """The request a seat is asked: its id, decision, line length (bytes) and ``deadline_ms``,
    how long the seat may take (ms, the wire's unit: move + bank + grace); ``sent_ns`` once
    written (:meth:`MatchCore.sent`). A struct: built in C once per decision."""

    rid: int
    decision: str
    line_bytes: int
    deadline_ms: int
    sent_ns: int | None = None


class MatchCore:
    """One match between seats 0 and 1 (``names``), sans I/O. See the module docstring.

    ``seed`` drives the engine's ``random.Random``; ``compact[s]``: seat ``s`` asked for the
    compact legal form; ``packs``: prepared packs dealt before the seeded shuffles;
    ``request_ids[s]``: returns the next request id of seat ``s``'s connection (default: a
    counter from 1). ``ValueError`` for an unknown game or a bad time control.
    """

    def __init__(
        self,
        match_id: str,
        seed: int,
        config: MatchConfig,
        names: tuple[str, str],
        compact: tuple[bool, bool] = (False, False),
        packs: Any = (),
        request_ids: tuple[Callable[[], int], Callable[[], int]] | None = None,
    ) -> None:
        if config.game not in GAMES:
            raise ValueError(f"unknown game {config.game!r}; known: {', '.join(GAMES)}")
        self.match_id = match_id
        self.seed = seed
        self.config = config
        self.clocks = (Clock(config.time), Clock(config.time))  # ValueError for a bad time control first
        self.limits = config.limits()
        self.names = names
        self.compact = compact
        self.engine = GAMES[config.game](config.rules, random.Random(seed), packs)
        if request_ids is None:
            request_ids = (itertools.count(1).__next__, itertools.count(1).__next__)
        self._ids = request_ids
        self._seq = [0, 0]
        self._outbox: tuple[list[bytes], list[bytes]] = ([], [])
        """Per seat, the pieces of the lines queued for its next write (its events), joined then."""
        self._match_json = _encode(match_id)
        self._event_head = b'{"type":"event","match_id":%b,"seq":' % self._match_json
        self.pending: list[_Pending | None] = [None, None]
        self._held: list[tuple[str, str, str, dict[str, Any]] | None] = [None, None]
        self.strikes = [0, 0]
        self.illegal = [0, 0]
        self.decisions = 0
        self.result: MatchResult | None = None

    # -- inputs

    def start(self) -> Output:
        """Begin: the log's header and ``match_start`` to each seat (a write of its own). Then,
        once they are written, :meth:`begin`."""
        out = Output()
        cfg = self.config
        out.log.append({"type": "match", "v": LOG_VERSION, "match_id": self.match_id, "game": cfg.game,
                        "seed": self.seed, "bots": list(self.names), "config": msgspec.to_builtins(cfg),
                        "forms": ["compact" if c else "full" for c in self.compact]})
        for s in (0, 1):
            out.sends.append((s, encode(MatchStart(
                match_id=self.match_id, game=cfg.game, seat=s, opponent=self.names[1 - s], rules=cfg.rules,
                time=cfg.time, on_timeout=cfg.on_timeout, max_strikes=cfg.max_strikes,
                max_illegal=cfg.max_illegal))))
        return out

    def begin(self) -> Output:
        """The first deal: its events and the first request."""
        if self.result is not None:
            return NOTHING
        out = Output()
        self._emit(out, self.engine.start())
        self._ask(out)
        return out

    def sent(self, seat: int, t_ns: int) -> int | None:
        """The request to ``seat`` was handed to the transport at ``t_ns``: its clock starts.
        Returns the deadline (ns, same clock) after which the driver reports :meth:`timeout`
        (None: nothing is asked of ``seat``)."""
        p = self.pending[seat]
        if p is None:
            return None
        p.sent_ns = t_ns
        return t_ns + p.deadline_ms * 1_000_000

    def answer(self, seat: int, rid: int, action: Any, t_ns: int, raw: bytes | None = None,
               raw_len: int | None = None) -> Output:
        """Seat ``seat`` answered request ``rid`` with ``action``; the answer reached us at
        ``t_ns`` (the fair clock's arrival time, ns). The action is checked against the rules.
        ``raw``: the line the bot sent (``raw_len`` its whole length, if ``raw`` is only its
        start), kept in the log's incident if the rules refuse the action."""
        p = self.pending[seat]
        if p is None or p.rid != rid or self.result is not None:
            return NOTHING
        self.pending[seat] = None
        sent_ns = p.sent_ns
        elapsed_ns = 0 if sent_ns is None else max(0, t_ns - sent_ns)
        elapsed = elapsed_ns / 1_000_000
        if not self.clocks[seat].charge(elapsed):
            out = Output()
            self._timed_out(out, seat, p, elapsed)
            return out
        engine = self.engine
        try:
            events = engine.apply(action)
        except IllegalAction as exc:
            out = Output()
            out.illegal = (seat, exc.code)
            out.log.append(LogIncident(seat, exc.code, str(exc), **_refused(action, raw, raw_len),
                                       **offered_fields(offer(engine, self.compact[seat]))))
            self.illegal[seat] += 1
            over = self.illegal[seat] > self.limits.max_illegal
            out.sends.append((seat, encode(Error(code=exc.code, message=str(exc), id=rid, fatal=over))))
            if over:  # the result goes to both bots and the public: it names the rule, not the hand
                allowed = self.limits.max_illegal
                why = f"{allowed + 1} illegal answers, {allowed} allowed" + (f" ({exc.rule})" if exc.rule else "")
                self._forfeit(out, seat, "forfeit_illegal", exc.code, why, incident=False)
            else:
                self._ask(out)
            return out
        self.decisions += 1
        out = Output([], [LogAction(seat, p.decision, action)], [], None, None, elapsed_ns, seat)
        self._emit(out, events)
        self._ask(out)
        return out

    def timeout(self, seat: int, rid: int | None = None) -> Output:
        """Seat ``seat``'s deadline passed with its request (``rid``, if given) unanswered."""
        p = self.pending[seat]
        if p is None or (rid is not None and p.rid != rid) or self.result is not None:
            return NOTHING
        self.pending[seat] = None
        self.clocks[seat].charge(p.deadline_ms)
        out = Output()
        self._timed_out(out, seat, p, p.deadline_ms)
        return out

    def fault(self, seat: int, code: str, detail: str, raw: bytes | None = None, raw_len: int | None = None) -> Output:
        """Seat ``seat`` committed protocol fault ``code`` (its error is already sent: see
        :class:`ConnectionCore`): it forfeits (``forfeit_protocol``). See :meth:`_charge` for when.
        ``raw``: the line that caused it, if a line did (``raw_len``: its whole length, if
        ``raw`` is only its start; see :attr:`ConnectionCore.last_line`), kept in the log."""
        extra = {} if raw is None else raw_fields(raw)
        if raw_len is not None and extra:
            extra["raw_len"] = raw_len
        return self._charge(seat, ("forfeit_protocol", code, detail, extra))

    def disconnected(self, seat: int, detail: str) -> Output:
        """Seat ``seat``'s connection closed or could not be written to (``detail`` says
        how): it forfeits (``forfeit_disconnect``). See :meth:`_charge` for when."""
        return self._charge(seat, ("forfeit_disconnect", "disconnect", detail, {}))

    def _charge(self, seat: int, fault: tuple[str, str, str, dict[str, Any]]) -> Output:
        """A fault of ``seat`` forfeits at once if ``seat`` is asked (or nobody is); while only
        the other seat is asked it is held (the first one per seat) and charged before the next
        decision, or at the end of a match played out: the opponent's decision in progress is
        never cut short (docs/protocol.md §11, notes)."""
        if self.result is not None:
            return NOTHING
        if self.pending[seat] is None and self.pending[1 - seat] is not None:
            if self._held[seat] is None:
                self._held[seat] = fault
            return NOTHING
        out = Output()
        self._forfeit(out, seat, *fault, incident=True)
        return out

    def abort(self, detail: str, force: bool = False) -> Output:
        """Stop the match without a winner (``aborted``): the server shuts down, or the match
        log cannot be written. ``force``: also a match already over whose result is not yet
        committed (the server shuts down before it is)."""
        if self.result is not None and not force:
            return NOTHING
        out = Output()
        self._end(out, MatchResult(match_id=self.match_id, winner=None, reason="aborted", scores=self.engine.scores,
                                   manches=self.engine.manches, detail=detail))
        return out

    def cancelled(self) -> Output:
        """The driver was cancelled (the server shuts down) before the result was committed:
        ``aborted``, also if the match was already over (:meth:`abort` with ``force``)."""
        return self.abort("server shut down during the match", force=True)

    def log_failed(self, error: OSError, opened: bool = True) -> Output:
        """The match log could not be opened (``opened`` False: nothing is played) or written:
        the match is ``aborted`` with the error in its detail, also one already over whose
        result is not yet committed (a result without its log would be unverifiable); an
        abort stays as it is. ``duration_ms`` is the driver's to set."""
        if not opened:
            return self.abort(f"match log could not be opened: {error}")
        if self.result is not None and self.result.reason == "aborted":
            return NOTHING
        return self.abort(f"match log could not be written: {error}", force=True)

    def absent(self, seats: list[int]) -> Output:
        """The match is not played: the seats ``seats`` (one or both) were not connected when it
        was due (:func:`unplayed`): its whole log (header, an incident per absent seat) and
        its result, nothing to send."""
        out = self.start()
        out.sends = []
        result, incidents = unplayed(self.match_id, self.names, seats)
        out.log.extend(LogIncident(seat, code, detail) for seat, code, detail in incidents)
        self._end(out, result)
        return out

    def match_end(self) -> list[tuple[int, bytes]]:
        """Once over: each seat's last write, the events still queued for it then ``match_end``."""
        r = self.result
        assert r is not None, "the match is not over"
        sends = []
        for s in (0, 1):
            you: Literal["win", "loss", "none"] = "none" if r.winner is None else ("win" if r.winner == s else "loss")
            queued = self._outbox[s]
            queued.append(encode(MatchEnd(match_id=self.match_id, winner=r.winner, you=you, reason=r.reason,
                                          scores=r.scores, manches=r.manches, detail=r.detail)))
            sends.append((s, b"".join(queued)))
            queued.clear()
        return sends

    # -- the policy

    def _timed_out(self, out: Output, seat: int, p: _Pending, elapsed: float) -> None:
        """§E8.1, docs/protocol.md §10.5: forfeit, or under ``auto`` a strike and the first legal
        action. ``elapsed``: what the decision took (ms; the deadline itself when it passed)."""
        limits = self.limits
        detail = f"no answer to request {p.rid} within {p.deadline_ms} ms{long_line_note(p.line_bytes, limits)}"
        out.timeout = seat
        out.log.append(LogIncident(seat, "timeout", detail, ms=[math.ceil(elapsed), p.deadline_ms]))
        if limits.on_timeout == "auto" and self.strikes[seat] < limits.max_strikes:
            self.strikes[seat] += 1
            text = (f"{detail}; the referee played the first legal action "
                    f"(strike {self.strikes[seat]} of {limits.max_strikes})")
            out.sends.append((seat, encode(Error(code="timeout", message=text, id=p.rid))))
            action = self.engine.auto_action()
            out.log.append(LogAction(seat, p.decision, action, True))
            self._emit(out, self.engine.apply(action))
            self._ask(out)
            return
        out.sends.append((seat, encode(Error(code="timeout", message=detail, id=p.rid, fatal=True))))
        self._forfeit(out, seat, "forfeit_timeout", "timeout", detail, incident=False)

    def _forfeit(self, out: Output, seat: int, reason: str, code: str, detail: str,
                 extra: dict[str, Any] | None = None, *, incident: bool) -> None:
        if incident:
            out.log.append(LogIncident(seat, code, detail, **(extra or {})))
        engine = self.engine
        self._end(out, MatchResult(match_id=self.match_id, winner=1 - seat, reason=reason, scores=engine.scores,
                                   manches=engine.manches, detail=f"{self.names[seat]}: {code}: {detail}",
                                   faulty=seat))

    def _end(self, out: Output, result: MatchResult) -> None:
        self.pending = [None, None]
        result.decisions = self.decisions
        result.deals = getattr(self.engine, "deal_no", 0)
        self.result = out.result = result

    def _emit(self, out: Output, events: list[Seen]) -> None:
        """Log every event, queue it for the seats allowed to see it (sent with their next write).

        Each event is encoded once, for its log line (a :class:`~arena.match.log.LogSeen` holding
        it as :class:`msgspec.Raw`) and each seat's ``event`` message, built around those bytes:
        the bytes of :class:`~protocol.messages.EventMsg` encoded whole (type tag first, then
        the fields in order)."""
        seq = self._seq
        outbox = self._outbox
        log = out.log.append
        head = self._event_head
        encode_event = _encode
        for event, seen_by in events:
            raw = encode_event(event)
            # the event, encoded: msgspec writes a Raw's bytes as they are (LogSeen's field is typed for
            # what readers decode, a GameEvent)
            log(LogSeen(list(seen_by), Raw(raw)))  # type: ignore[arg-type]
            for s in seen_by:
                n = seq[s] = seq[s] + 1
                # the seat's line in pieces, joined with its next write
                outbox[s].extend((head, _SEQ[n] if n < _SEQ_KEPT else b'%d,"event":' % n, raw, b"}\n"))
        out.events += events

    def _ask(self, out: Output) -> None:
        """Ask the seat to act (its queued events and the request in one write), or end a match
        played out."""
        engine = self.engine
        held = self._held
        if held[0] is not None or held[1] is not None:
            to_act = engine.to_act  # None only once over
            first = (0, 1) if engine.over or to_act is None else (1 - to_act, to_act)
            for seat in first:
                fault = held[seat]
                if fault is not None:
                    self._forfeit(out, seat, *fault, incident=True)
                    return
        if engine.over:
            self._end(out, MatchResult(match_id=self.match_id, winner=engine.winner, reason=engine.end_reason,
                                       scores=engine.scores, manches=engine.manches, margin=engine.margin))
            return
        s = engine.to_act
        decision = engine.decision
        assert s is not None and decision is not None, "a match not over has a seat to act and a decision"
        clock = self.clocks[s]
        rid = self._ids[s]()
        queued = self._outbox[s]
        # Clock.time_ms and Clock.deadline_ms without their property calls (once per decision)
        control = clock.control
        time_ms, bank_ms = control.move_ms, clock.bank_ms
        word = _DECISION_JSON.get(decision)
        if word is not None and type(rid) is int and type(time_ms) is int and type(bank_ms) is int:
            # the request built around its encoded pieces: the bytes of Request(...) encoded whole
            line = _REQUEST % (rid, self._match_json, word, legal_json(engine, self.compact[s]),
                               _encode(engine.peek_view(s)), time_ms, bank_ms)
        else:
            # an engine names its decisions as str (GameMatch.decision); each is one of the protocol's
            # (Decision), which encoding does not check
            line = encode(Request(id=rid, match_id=self.match_id, decision=decision,  # type: ignore[arg-type]
                                  legal=offer(engine, self.compact[s]), state=engine.view(s), time_ms=time_ms,
                                  bank_ms=bank_ms))
        self.pending[s] = _Pending(rid, decision, len(line), time_ms + bank_ms + control.grace_ms)
        if queued:  # the events queued for the seat go first, in the same write
            queued.append(line)
            line = b"".join(queued)
            queued.clear()
        out.sends.append((s, line))
        out.asked = (s, rid)


_encode = msgspec.json.Encoder().encode

_SEQ_KEPT = 4096
_SEQ = [b'%d,"event":' % n for n in range(_SEQ_KEPT)]
"""The middle of a seat's :class:`protocol.messages.EventMsg` line (after its type tag, match id
and ``"seq":``, before the event encoded) for each sequence number below :data:`_SEQ_KEPT`."""

_REQUEST = (b'{"type":"request","id":%d,"match_id":%b,"decision":%b,"legal":%b,"state":%b,"time_ms":%d,'
            b'"bank_ms":%d}\n')
"""A :class:`protocol.messages.Request` line around its encoded pieces (its fields in order)."""

_DECISION_JSON: dict[str, bytes] = {
    d: _encode(d) for d in ("propose", "respond", "discard", "king", "play", "look", "expose", "bid")}
"""Each decision of :class:`protocol.messages.Request` encoded (any other takes the struct's path)."""

def legal_json(engine: Any, compact: bool) -> bytes:
    """The ``legal`` field of the request for ``engine``'s pending decision, encoded: the bytes of
    :func:`arena.games.base.offer` ``(engine, compact)`` encoded. A choice of cards asked in the
    full form (the lists of :func:`arena.games.base.expand_choice`, in its order) is its hand's
    cards put into a template of the sets kept per hand size and sizes of the choice
    (:data:`_CHOICE_TEMPLATES`, one ``bytes.translate``): no list is made, nothing encoded."""
    choose = engine.choice()
    if choose is None:
        return _encode(engine.legal_actions())
    if compact:
        return _encode(Compact(choose=choose))
    least, most = choose.min, choose.max
    if least < 0:  # no choice the rules make: as offer() gives it
        return _encode(engine.legal_actions())
    cards = choose.from_
    n = len(cards)
    if n <= _TEMPLATE_CARDS and least <= most and _PLAIN_CARDS.issuperset(cards):
        template = _CHOICE_TEMPLATES.get((n, least, most)) or _choice_template(n, least, most)
        return template.translate(bytes.maketrans(_MARKS[: 2 * n], "".join(cards).encode()))
    return _encode(list(_chain(*[_combinations(cards, k) for k in range(least, most + 1)])))


_TEMPLATE_CARDS = 12
"""The largest hand whose discards :func:`legal_json` builds from a template (a Piquet hand)."""

_MARKS = bytes(b for i in range(_TEMPLATE_CARDS) for b in (1 + i, 0x10 + i))
"""The placeholders of a discard's template: card ``i`` of the hand is the two bytes
``_MARKS[2 * i : 2 * i + 2]`` (control characters that no card holds; see :data:`_PLAIN_CARDS`),
its rank's then its suit's, so that one translation table puts the hand's cards in every place."""

_PLAIN_CARDS = frozenset(r + s for s in "cdhs" for r in "6789TJQKA")
"""Every card of both packs: two ASCII letters or digits, encoded by JSON as they are."""

_CHOICE_TEMPLATES: dict[tuple[int, int, int], bytes] = {}
"""The full form of a choice of ``min`` to ``max`` cards of a hand of ``n``, keyed ``(n, min, max)``:
the JSON of every set (:func:`arena.games.base.expand_choice`'s order) with the placeholders of
:data:`_MARKS` for the hand's cards (at most 13**3 keys, a few KB each)."""


def _choice_template(n: int, least: int, most: int) -> bytes:
    """The template of :data:`_CHOICE_TEMPLATES` for ``(n, least, most)``, made and kept."""
    marks = [_MARKS[2 * i: 2 * i + 2] for i in range(n)]
    sets = (b",".join(b'"%b"' % mark for mark in c) for k in range(least, most + 1) for c in _combinations(marks, k))
    template = _CHOICE_TEMPLATES[n, least, most] = b"[" + b",".join(b"[%b]" % s for s in sets) + b"]"
    return template


__all__ = ["NOTHING", "Answer", "ConnectionCore", "Fault", "MatchConfig", "MatchCore", "MatchResult", "Output",
           "Refusal", "Verdict", "legal_json", "long_line_note", "result_line", "unplayed"]
