"""A connected bot as the referee sees it: send messages, ask for a decision, get faults.

Two layers:

* :class:`Connection` - one authenticated TCP client. A reader task (:meth:`Connection.run_reader`)
  reads every line as it arrives, timestamps it on trio's monotonic clock, answers protocol
  errors with an ``error`` message, and routes answers and faults to the seat it sits in.
* :class:`Seat` - that connection in one match: :meth:`Seat.ask` sends a ``request`` and waits
  for the matching ``action`` until the clock's deadline; anything else (a timeout, a closed
  socket, a malformed line, an answer to an unknown id) raises :class:`SeatFault` carrying the
  forfeit reason of ecarte.md §E8.1.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgspec
import trio

from arena.match.clock import Clock
from arena.metrics import METRICS
from protocol.framing import LineReader, ProtocolError, decode_client, encode, encode_into
from protocol.messages import ActionMsg, Compact, Error, GameView, Hello, Request

MAX_ERRORS_PER_CONNECTION = 100
"""After this many ``error`` messages a connection is closed (``too_many_errors``): a flood
of garbage costs the server a bounded amount of work."""


LONG_LINE_BYTES = 16 * 1024
"""A request line at least this long (bytes, newline included) is named in a timeout's error:
a bot whose read buffer is too small for it never sees the request and times out."""


def long_line_note(nbytes: int) -> str:
    """The clause a timeout's message ends with when the request line was long (``nbytes``
    bytes, newline included, at least :data:`LONG_LINE_BYTES`), else ``""``."""
    if nbytes < LONG_LINE_BYTES:
        return ""
    return (f"; the request line was {nbytes:,} bytes long: a bot must read lines of any length "
            "(docs/protocol.md §2), or ask for the compact form at hello (§8.13)")


class SeatFault(Exception):
    """A seat can no longer play. ``reason`` is the match-end reason (``forfeit_timeout``,
    ``forfeit_disconnect``, ``forfeit_protocol``, ``forfeit_illegal``); ``code`` the protocol
    error code; ``detail`` a readable explanation."""

    def __init__(self, reason: str, code: str, detail: str, seat: int) -> None:
        super().__init__(f"seat {seat}: {reason}: {code}: {detail}")
        self.reason = reason
        self.code = code
        self.detail = detail
        self.seat = seat


class SeatTimeout(SeatFault):
    """The decision's deadline passed without an answer to request ``request_id``."""

    def __init__(self, detail: str, seat: int, request_id: int) -> None:
        super().__init__("forfeit_timeout", "timeout", detail, seat)
        self.request_id = request_id


class SendFailed(Exception):
    """The peer is gone or does not read (a send did not finish within its time limit)."""


class Answer(msgspec.Struct):
    """A bot's answer: the request id, its action, and the decision's time in ms."""

    id: int
    action: Any
    elapsed_ms: float


class Connection:
    """One client after a successful ``hello``: its name, its stream and its reader task.

    ``send_timeout_s`` bounds every write: a peer that stops reading is treated as gone.
    ``closed`` is set when the reader ends (EOF, error or :meth:`aclose`).
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        reader: LineReader,
        name: str,
        role: str = "bot",
        peer: str = "",
        send_timeout_s: float = 10.0,
    ) -> None:
        self.stream = stream
        self.reader = reader
        self.name = name
        self.role = role
        self.peer = peer
        self.send_timeout_s = send_timeout_s
        self.closed = trio.Event()
        self.close_reason = ""
        self.seat: Seat | None = None
        self.pending_id: int | None = None
        self._next_id = 0
        self._expired: deque[int] = deque(maxlen=256)
        self._answered: deque[int] = deque(maxlen=256)
        self._send_lock = trio.Lock()
        self.errors_sent = 0
        self.busy = False  # seated in a match (set by the scheduler)
        self.legal_form = "full"  # "compact" if the bot asked for it at hello (set by the server)

    def new_request_id(self) -> int:
        """A fresh request id, unique on this connection."""
        self._next_id += 1
        return self._next_id

    async def send_bytes(self, data: bytes) -> None:
        """Write ``data``; raise :class:`SendFailed` if the peer is gone or not reading."""
        if self.closed.is_set():
            raise SendFailed(f"connection closed ({self.close_reason})")
        try:
            async with self._send_lock:
                with trio.fail_after(self.send_timeout_s):
                    await self.stream.send_all(data)
        except trio.TooSlowError:
            await self.aclose("not reading (send timed out)")
            raise SendFailed("peer does not read: send timed out") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            await self.aclose("send failed")
            raise SendFailed(f"send failed: {exc!r}") from None

    async def send(self, msg: msgspec.Struct) -> None:
        """Encode and send one message (see :meth:`send_bytes`)."""
        await self.send_bytes(encode(msg))

    async def send_error(self, code: str, message: str, id: int | None = None, fatal: bool = False) -> None:
        """Send an ``error`` message, ignoring a failed send."""
        try:
            await self.send(Error(code=code, message=message, id=id, fatal=fatal))
        except SendFailed:
            pass

    async def aclose(self, reason: str = "closed") -> None:
        """Close the stream (idempotent); the reader task then ends."""
        if not self.close_reason:
            self.close_reason = reason
        self.closed.set()
        with trio.CancelScope(shield=True):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def _protocol_fault(self, code: str, message: str, id: int | None = None) -> None:
        """The client broke the protocol: tell it (``fatal`` when it is in a match, which it
        then loses), count it toward :data:`MAX_ERRORS_PER_CONNECTION`, notify the seat."""
        self.errors_sent += 1
        METRICS.protocol_errors.labels(code).inc()
        await self.send_error(code, message, id=id, fatal=self.seat is not None)
        self._fault(code, message)

    def _fault(self, code: str, detail: str) -> None:
        if self.seat is not None:
            self.seat._deliver(("fault", code, detail))

    async def run_reader(self) -> None:
        """Read lines until the connection ends, routing each to the current seat."""
        blank = 0  # blank lines read (ignored, but they must not starve the event loop)
        try:
            while True:
                try:
                    line = await self.reader.read_line()
                except ProtocolError as exc:
                    METRICS.protocol_errors.labels(exc.code).inc()
                    await self.send_error(exc.code, exc.message, fatal=True)
                    self._fault(exc.code, exc.message)
                    self.close_reason = exc.code
                    return
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    return
                if line is None:
                    return
                now = trio.current_time()
                if not line.strip():
                    # Blank lines are free (no error, no write), so without this a flood of
                    # them is read chunk after chunk (64 Ki lines each) without ever yielding to
                    # the other connections' tasks: their answers would be timestamped late.
                    blank += 1
                    if blank % 64 == 0:
                        await trio.lowlevel.checkpoint()
                    continue
                await self._handle_line(line, now)
                if self.errors_sent >= MAX_ERRORS_PER_CONNECTION:
                    await self.send_error(
                        "too_many_errors", f"{self.errors_sent} errors: closing", fatal=True
                    )
                    self._fault("too_many_errors", "too many errors")
                    self.close_reason = "too_many_errors"
                    return
        finally:
            if not self.close_reason:
                self.close_reason = "disconnected"
            self.closed.set()
            if self.seat is not None:
                self.seat._deliver(("closed", self.close_reason, ""))
            with trio.CancelScope(shield=True):
                try:
                    await self.stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass

    async def _handle_line(self, line: bytes, now: float) -> None:
        try:
            msg = decode_client(line)
        except ProtocolError as exc:
            await self._protocol_fault(exc.code, exc.message)
            return
        if isinstance(msg, ActionMsg):
            rid = msg.id
            if rid == self.pending_id and self.seat is not None:
                self.pending_id = None
                self._answered.append(rid)
                self.seat._deliver(("answer", rid, msg.action, now))
            elif rid in self._expired:
                await self.send_error(
                    "late_answer",
                    f"request {rid} is no longer pending (it timed out or its match ended); answer ignored",
                    id=rid,
                )
            elif rid in self._answered:
                await self._protocol_fault("duplicate_answer", f"request {rid} was already answered", rid)
            elif self.seat is not None and self.pending_id is None:
                await self._protocol_fault("not_your_turn", f"no decision is asked of you (request {rid})", rid)
            else:
                await self._protocol_fault("unknown_request", f"no request {rid} is pending", rid)
        elif isinstance(msg, Hello):
            await self._protocol_fault("unexpected_hello", "hello is only valid as the first line")
        else:  # list / subscribe / unsubscribe: spectator messages, harmless from a bot
            await self.send_error("wrong_role", f"{type(msg).__name__} is for spectators; this connection is a bot")


class Seat:
    """A :class:`Connection` sitting at seat ``index`` (0 or 1) of match ``match_id``.

    Attach with :meth:`attach` before the match and :meth:`detach` after. Faults raised by
    :meth:`ask`, :meth:`send` and :meth:`check` are :class:`SeatFault`.
    """

    def __init__(self, conn: Connection, index: int, match_id: str, clock: Clock) -> None:
        self.conn = conn
        self.index = index
        self.match_id = match_id
        self.clock = clock
        self._in, self._out = trio.open_memory_channel[tuple](32)
        self.outbox = bytearray()  # encoded messages waiting for the next write

    def queue(self, msg: msgspec.Struct) -> None:
        """Encode ``msg`` for sending with this seat's next write (its next request, or
        :meth:`flush`). Batching makes one socket write per decision instead of one per
        event: events only inform, so a bot needs them before its next request, not sooner."""
        encode_into(msg, self.outbox)

    async def flush(self) -> None:
        """Send everything queued; a failed send is a ``forfeit_disconnect`` fault."""
        if self.outbox:
            data = bytes(self.outbox)
            self.outbox.clear()
            try:
                await self.conn.send_bytes(data)
            except SendFailed as exc:
                raise SeatFault("forfeit_disconnect", "disconnect", str(exc), self.index) from None

    @property
    def name(self) -> str:
        """The bot's name."""
        return self.conn.name

    def attach(self) -> None:
        """Route the connection's answers and faults to this seat."""
        self.conn.seat = self
        if self.conn.closed.is_set():
            self._deliver(("closed", self.conn.close_reason or "disconnected", ""))

    def detach(self) -> None:
        """Stop routing to this seat; any pending request becomes expired."""
        if self.conn.seat is self:
            self.conn.seat = None
        if self.conn.pending_id is not None:
            self.conn._expired.append(self.conn.pending_id)
            self.conn.pending_id = None

    def _deliver(self, item: tuple) -> None:
        try:
            self._in.send_nowait(item)
        except trio.WouldBlock:
            pass  # the seat is already faulted; extra faults add nothing

    def _raise_for(self, item: tuple) -> None:
        kind, code, detail = item[0], item[1], item[2]
        if kind == "closed":
            raise SeatFault("forfeit_disconnect", "disconnect", f"connection lost ({code})", self.index)
        raise SeatFault("forfeit_protocol", code, detail, self.index)

    def check(self) -> None:
        """Raise :class:`SeatFault` if a fault arrived since the last look (non-blocking)."""
        while True:
            try:
                item = self._out.receive_nowait()
            except trio.WouldBlock:
                return
            if item[0] != "answer":
                self._raise_for(item)

    async def send(self, msg: msgspec.Struct) -> None:
        """Send anything queued, then ``msg``, in one write; a failed send is a
        ``forfeit_disconnect`` fault."""
        self.queue(msg)
        data = bytes(self.outbox)
        self.outbox.clear()
        try:
            await self.conn.send_bytes(data)
        except SendFailed as exc:
            raise SeatFault("forfeit_disconnect", "disconnect", str(exc), self.index) from None

    async def ask(self, decision: str, legal: list[Any] | Compact, state: GameView) -> Answer:
        """Send a ``request`` and wait for its answer within the clock's deadline.

        Returns an :class:`Answer` (the action is not yet checked against the rules).
        Raises :class:`SeatTimeout` when the deadline passes, :class:`SeatFault` on a
        disconnect or a protocol fault.
        """
        self.check()
        conn = self.conn
        rid = conn.new_request_id()
        clock = self.clock
        start = len(self.outbox)
        encode_into(
            Request(
                id=rid,
                match_id=self.match_id,
                decision=decision,  # type: ignore[arg-type]
                legal=legal,
                state=state,
                time_ms=clock.time_ms,
                bank_ms=clock.bank_ms,
            ),
            self.outbox,
        )
        line_bytes = len(self.outbox) - start
        data = bytes(self.outbox)
        self.outbox.clear()
        conn.pending_id = rid
        t0 = trio.current_time()
        try:
            await conn.send_bytes(data)
        except SendFailed as exc:
            conn.pending_id = None
            raise SeatFault("forfeit_disconnect", "disconnect", str(exc), self.index) from None
        deadline_ms = clock.deadline_ms
        with trio.move_on_at(t0 + deadline_ms / 1000):
            while True:
                item = await self._out.receive()
                if item[0] == "answer":
                    if item[1] != rid:
                        continue
                    elapsed = (item[3] - t0) * 1000
                    if not clock.charge(elapsed):
                        break
                    return Answer(rid, item[2], elapsed)
                conn.pending_id = None
                conn._expired.append(rid)  # a stray answer later is "late", never a new fault
                self._raise_for(item)
        if conn.pending_id == rid:
            conn.pending_id = None
            conn._expired.append(rid)
            clock.charge(deadline_ms)
        raise SeatTimeout(f"no answer to request {rid} within {deadline_ms} ms{long_line_note(line_bytes)}",
                          self.index, rid)
