"""A connected bot as the referee sees it: one long-lived reader, cheap writes, one deadline.

:class:`Connection` is one authenticated client. Its reader task (:meth:`Connection.run_reader`)
lives as long as the connection and does all the reading: each line goes to the connection's
protocol state (:class:`arena.match.core.ConnectionCore`), which says whether it answers the
pending request or earns an error; answers and faults go straight to the match the connection
sits in (its :class:`Handler`, the referee), in the reader's own task: no task, channel or
cancel scope is made per decision. The pending request's deadline is the deadline of the
reader's one cancel scope (:meth:`Connection.arm`); a new scope is made only after a deadline
fired. When it fires, the reader first takes in what the kernel already holds (an answer that
arrived in time but was not read yet is accepted), then tells the handler.

Writes (:meth:`Connection.send_bytes`) go straight to the socket when it takes them whole (the
usual case: no lock, no time-out, no task switch); only a partial write waits for the rest,
under a lock that keeps later writes in order, within ``send_timeout_s``, shielded so a write is
never cut in the middle of a line. Streams other than a socket (memory streams in tests) take
the locked path every time.

Arrival times come from the fair clock (:mod:`arena.match.fairclock`): the kernel's receive
stamp on TCP, else the moment the event loop woke for the data (a connection without stamps
asks the loop's watch to keep that moment: :meth:`arena.match.fairclock.LoopWatch.need_wake`).

On a server with a :class:`~arena.match.dispatch.Dispatcher` (every TCP and launched bot of
:class:`arena.net.server.ArenaServer`), a reader with nothing buffered parks there instead of
waiting on its own socket. The dispatcher's one task reads for all of them: a read holding just
one line that answers the pending request, while every seat of the match can be written at
once, is refereed right there (:meth:`Connection.on_readable`, :meth:`InstantHandler.answer_now`);
anything else (other lines, several lines, a partial line, the end of the stream, an error, a
write the socket does not take whole) goes back to the reader task, which handles it as if it
had read it itself.
"""

from __future__ import annotations

import math
import socket
from typing import Any, Protocol

import msgspec
import outcome
import trio

from arena.match import fairclock
from arena.match.clock import Clock
from arena.match.core import Answer, ConnectionCore, Verdict
from arena.match.dispatch import Dispatcher
from arena.match.limits import LIMITS
from arena.metrics import METRICS
from protocol.framing import LineReader, ProtocolError, encode
from protocol.messages import Compact, Decision, Error, ErrorCode, GameView, Request

INF = math.inf


class SendFailed(Exception):
    """The peer is gone or does not read (a send did not finish within its time limit)."""


class HeldWrite:
    """The part of a write :meth:`Connection.send_now` could not make at once: ``data`` still
    to write, and ``held``: whether the connection's turn to write is already taken for it (it
    is unless another write was already waiting). Pass it to :meth:`Connection.send_held`."""

    __slots__ = ("data", "held")

    def __init__(self, data: bytes, held: bool) -> None:
        self.data = data
        self.held = held


class _Closing(Exception):
    """A line handed back by the dispatcher closes the connection (``too_many_errors``)."""


_DATA, _VERDICT, _FINISH = range(3)
"""What the dispatcher hands a parked reader: bytes read, a line's verdict to act on, or the
rest of an answer's handling to await (see :meth:`Connection.on_readable`)."""


class Handler(Protocol):
    """What a connection seated in a match (or a chouette auction) tells it. ``t_ns`` is the
    answer's arrival time on the fair clock (the loop's clock, ``trio.current_time()``, in
    integer nanoseconds: the one unit from the socket to the core)."""

    async def on_answer(self, conn: Connection, rid: int, action: Any, t_ns: int) -> None: ...
    async def on_fault(self, conn: Connection, code: str, detail: str) -> None: ...
    async def on_deadline(self, conn: Connection, rid: int) -> None: ...
    async def on_closed(self, conn: Connection, reason: str) -> None: ...


class InstantHandler(Handler, Protocol):
    """A handler that can take an answer without waiting (the referee): the dispatcher's
    cheap path (:meth:`Connection.on_readable`)."""

    def writable_now(self) -> bool:
        """Whether every seat can be written at once (no write of theirs is waiting)."""
        ...

    def answer_now(self, conn: Connection, rid: int, action: Any, t_ns: int) -> Any:
        """:meth:`Handler.on_answer` without waiting: returns None when it is all done, else an
        awaitable that finishes it (writes the socket did not take at once)."""
        ...


def _raw_socket(stream: Any) -> socket.socket | None:
    """The stdlib socket under a trio ``SocketStream`` (trio keeps it as ``_sock``), or None."""
    sock = getattr(getattr(stream, "socket", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


class Connection:
    """One client after a successful ``hello``: its name, its stream and its reader.

    ``send_timeout_s`` bounds a write that the socket does not take at once: a peer that stops
    reading is treated as gone. ``closed`` is set when the reader ends (EOF, error or
    :meth:`aclose`). ``core`` holds its protocol state (request ids, the pending request, the
    error count); ``handler`` the match it sits in, at seat ``seat_no``.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        reader: LineReader,
        name: str,
        role: str = "bot",
        peer: str = "",
        send_timeout_s: float = LIMITS.send_timeout_ms / 1000,
    ) -> None:
        self.stream = stream
        self.reader = reader
        self.name = name
        self.role = role
        self.peer = peer
        self.send_timeout_s = send_timeout_s
        self.closed = trio.Event()
        self._shut = False  # closed.is_set(), as a plain attribute (read on every write)
        self.close_reason = ""
        self.core = ConnectionCore()
        self.handler: Handler | None = None
        self._instant: Any = None  # the handler, if an InstantHandler (the dispatcher's cheap path)
        self.seat_no = 0
        self.busy = False  # seated in a match (set by the scheduler)
        self.legal_form = "full"  # "compact" if the bot asked for it at hello (set by the server)
        self._raw = _raw_socket(stream)
        self._stamps = self._raw is not None and fairclock.enable_stamps(self._raw)
        self._scope: trio.CancelScope | None = None
        self._deadline_s = INF  # the reader's cancel scope's deadline (loop clock, s: trio's unit)
        self._armed: int | None = None
        self._turn: trio.Semaphore | None = None  # the locked path's turn (whoever holds it writes)
        self._slow = 0  # writes waiting on the locked path: the direct path must wait its turn
        self.direct = self._raw is not None
        """Whether a write goes straight to the socket (:meth:`writable_now`), kept as a plain
        attribute (read for both seats before every answer the dispatcher referees)."""
        self.dispatcher: Dispatcher | None = None  # set by the server: readers park there
        self._arrived_ns = 0  # the last read's arrival (fair clock, ns)
        self._waited = True  # the last read waited for its data (else a flood may be under way)
        self._full = False  # the last read filled its buffer: more is probably waiting
        self._now = trio.current_time  # the loop clock's own method once the reader runs
        self._watch: fairclock.LoopWatch | None = None  # the loop's watch (fair clock), once the reader runs

    # -- compatibility with the names the rest of the code uses

    @property
    def errors_sent(self) -> int:
        """Protocol faults committed so far (``too_many_errors`` at ``Limits.max_errors``)."""
        return self.core.errors

    @property
    def pending_id(self) -> int | None:
        """The request awaiting an answer on this connection, if any."""
        return self.core.pending_id

    def new_request_id(self) -> int:
        """A fresh request id, unique on this connection."""
        return self.core.new_request_id()

    # -- seating

    def attach(self, handler: Handler, seat: int) -> None:
        """Seat the connection: its answers and faults go to ``handler`` as seat ``seat``."""
        self.handler = handler
        self._instant = handler if callable(getattr(handler, "answer_now", None)) else None
        self.seat_no = seat
        self.core.seated = True

    def detach(self, handler: Handler) -> None:
        """Unseat it (if ``handler`` still holds it): a pending request expires."""
        if self.handler is handler:
            self.handler = None
            self._instant = None
            self.core.seated = False
        self.core.expire()
        self.arm(None, None)

    def arm(self, deadline_ns: int | None, rid: int | None, now_ns: int | None = None) -> None:
        """The reader reports request ``rid`` as timed out at ``deadline_ns`` (loop clock, ns;
        None: none) unless it is answered first (``now_ns``: the loop clock's time, if the
        caller has just read it; else it is read when needed). The reader's cancel scope keeps an earlier,
        stale deadline (of a request already answered) unless it falls due within the first half
        of this request's time, which costs the reader at most one wake-up per half a request's
        time instead of one per decision or one per move_ms for every reader at once."""
        deadline = INF if deadline_ns is None else deadline_ns / 1e9
        self._deadline_s = deadline
        self._armed = rid
        scope = self._scope
        if scope is None:
            return
        stale = scope.deadline
        if deadline < stale or rid is None:
            scope.deadline = deadline
        elif deadline > stale:
            # a later deadline is mostly left for the scope to reach first (cheaper than moving it
            # every decision): when that stale one fires, the reader makes a new scope with this
            # one. But a stale deadline due within the first half of this request's time is moved
            # now: its firing costs the reader a wake-up, and the readers of matches started
            # together would all wake at once, every move_ms, and hold up the answers meanwhile
            now = self._now() if now_ns is None else now_ns / 1e9
            if stale - now < (deadline - now) * 0.5:
                scope.deadline = deadline

    # -- writing

    def fileno(self) -> int:
        """The socket's file descriptor (-1 without a socket or once closed)."""
        return self._raw.fileno() if self._raw is not None else -1

    def writable_now(self) -> bool:
        """Whether a write would go straight to the socket: open, a socket, no write waiting."""
        return self.direct

    async def send_bytes(self, data: bytes) -> None:
        """Write ``data``; raise :class:`SendFailed` if the peer is gone or does not read."""
        rest = self.send_now(data)
        if rest is not None:
            await self.send_held(rest)

    def send_now(self, data: bytes) -> HeldWrite | None:
        """Write what the socket takes of ``data`` at once, without waiting: None if it took it
        all, else what is still to write (:class:`HeldWrite`), which the caller must pass to
        :meth:`send_held` (the connection's writes keep their order: the turn is taken for it
        here, unless another write already waits for it)."""
        raw = self._raw
        if self.direct and raw is not None:
            try:
                n = raw.send(data)
            except (BlockingIOError, OSError):  # an error shows again in send_held, which closes
                n = 0
            if n == len(data):
                return None
            data = data[n:]
        if self._turn is None:
            self._turn = trio.Semaphore(1)
        held = not self._slow
        if held:
            self._turn.acquire_nowait()  # free: nobody is on the locked path
        self._slow += 1
        self.direct = False
        return HeldWrite(data, held)

    async def send_held(self, write: HeldWrite) -> None:
        """Finish a write :meth:`send_now` began (``write``: what it returned), in its turn;
        :class:`SendFailed` as :meth:`send_bytes`."""
        self._slow -= 1  # _send_rest counts it again
        if self._shut:
            if write.held:
                assert self._turn is not None, "a held write took the turn (send_now)"
                self._turn.release()
            raise SendFailed(f"connection closed ({self.close_reason})")
        await self._send_rest(write.data, write.held)

    async def _send_rest(self, data: bytes, held: bool = False) -> None:
        """The locked path: in order behind earlier partial writes, within ``send_timeout_s``.
        ``held``: the turn is already this write's (:meth:`send_now`)."""
        if self._turn is None:
            self._turn = trio.Semaphore(1)
        turn = self._turn
        self._slow += 1
        self.direct = False
        mine = held
        try:
            with trio.CancelScope(shield=True):  # never leave half a line on the wire
                with trio.move_on_after(self.send_timeout_s) as timer:
                    if not mine:
                        await turn.acquire()
                        mine = True
                    raw = self._raw
                    if raw is None:
                        await self.stream.send_all(data)
                    else:
                        view = memoryview(data)
                        while view:
                            await trio.lowlevel.wait_writable(raw)
                            try:
                                view = view[raw.send(view):]
                            except BlockingIOError:
                                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            await self.aclose("send failed")
            raise SendFailed(f"send failed: {exc!r}") from None
        finally:
            self._slow -= 1
            self.direct = self._raw is not None and not self._slow and not self._shut
            if mine:
                turn.release()
        if timer.cancelled_caught:
            await self.aclose("not reading (send timed out)")
            raise SendFailed("peer does not read: send timed out")

    async def send(self, msg: msgspec.Struct) -> None:
        """Encode and send one message (see :meth:`send_bytes`)."""
        await self.send_bytes(encode(msg))

    async def send_error(self, code: ErrorCode, message: str, id: int | None = None, fatal: bool = False) -> None:
        """Send an ``error`` message, ignoring a failed send."""
        await self._tell(Error(code=code, message=message, id=id, fatal=fatal))

    async def _tell(self, error: Error) -> None:
        try:
            await self.send_bytes(encode(error))
        except SendFailed:
            pass

    async def aclose(self, reason: str = "closed") -> None:
        """Close the stream (idempotent); the reader then ends."""
        if not self.close_reason:
            self.close_reason = reason
        self._shut = True
        self.direct = False
        self.closed.set()
        if self.dispatcher is not None:
            self.dispatcher.forget(self)  # before the socket's number can be reused
        with trio.CancelScope(shield=True):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    # -- reading

    async def _receive(self, streak: int) -> bytes | bytearray:
        """The next bytes (b"" at the end); sets ``_arrived_ns`` (fair clock). ``streak``: reads in
        a row that found data waiting: past one, yield first, so a flood cannot hold the loop."""
        if streak:
            await trio.lowlevel.checkpoint()
        raw = self._raw
        if raw is None:
            data = await self.stream.receive_some(self.reader.chunk)
            self._arrived_ns = int((self._watch or fairclock.watch()).woke * 1e9)  # woke <= now: the loop woke for it
            self._waited = True
            return data
        dispatcher = self.dispatcher
        if dispatcher is not None and dispatcher.running and not self._full and not streak:
            if not self._stamps:
                dispatcher.spin = False  # its arrivals are the loop's wakes: no look after a turn
            return await self._parked(dispatcher)  # the usual case, on a server
        if not self._full:
            await trio.lowlevel.wait_readable(raw)  # the usual case: nothing is waiting yet
        while True:
            try:
                return self._read_once(raw, False)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(raw)

    def _read_once(self, raw: socket.socket, marked: bool) -> bytes:
        """One read of the socket (b"" at the end or on an error); sets ``_arrived_ns``, ``_full``
        and ``_waited``. ``BlockingIOError`` if nothing is there. ``marked``: in the dispatcher's
        task, whose batch read the clocks (:meth:`arena.match.fairclock.LoopWatch.mark`): a kernel
        stamp is converted with them; else with both clocks read now."""
        try:
            if self._stamps:
                data, anc, _, _ = raw.recvmsg(self.reader.chunk, fairclock.ANCILLARY_BYTES)
            else:
                data, anc = raw.recv(self.reader.chunk), None
        except BlockingIOError:
            raise
        except OSError:
            return b""
        watch = self._watch or fairclock.watch()
        if marked or not anc:
            self._arrived_ns = int(watch.arrived(anc) * 1e9)
        else:
            now = self._now()
            self._arrived_ns = int((fairclock.arrival(anc, now) or now) * 1e9)
        self._full = len(data) == self.reader.chunk  # more may be waiting: read before waiting
        self._waited = not self._full
        return data

    async def _parked(self, dispatcher: Dispatcher) -> bytes:
        """Wait at the dispatcher until it hands back bytes to read (b"" at the end); act on
        what else it hands back meanwhile (see :meth:`on_readable`). :class:`_Closing` if a
        line it handed back closes the connection."""
        while True:
            kind, value = await dispatcher.park(self)
            if kind == _DATA:
                data: bytes = value  # what on_readable read
                return data
            if kind == _FINISH:
                await value
            elif await self._verdict(value):
                raise _Closing

    def on_readable(self) -> None:
        """The dispatcher's cheap path, in its task, for this parked reader's socket: read once;
        a read that is one whole line answering the pending request, while the match's seats
        can all be written at once, goes straight to the handler's ``answer_now`` (an
        :class:`InstantHandler`; a blank line is dropped); any other line's verdict, and any
        other read, go back to the reader task (:meth:`_parked`), which handles them as its own
        reads."""
        raw = self._raw
        dispatcher = self.dispatcher
        if raw is None or dispatcher is None:
            return
        try:
            data = self._read_once(raw, True)
        except BlockingIOError:
            return  # nothing after all: stay parked
        reader = self.reader
        n = len(data)
        if (n and not self._full and data[-1] == 10 and n - 1 <= reader.max_line and not reader.buffered
                and data.count(b"\n") == 1):
            line = data[:-2] if n > 1 and data[-2] == 13 else data[:-1]
            if not line.strip():
                return  # a blank line: free
            handler = self._instant
            if handler is not None and handler.writable_now():
                verdict = self.core.line(line)
                if verdict is None:
                    return
                if type(verdict) is Answer:
                    self._armed = None  # the scope's deadline stays: a stale one that fires is ignored
                    dispatcher.answered += 1
                    rest = handler.answer_now(self, verdict.rid, verdict.action, self._arrived_ns)
                    if rest is not None:
                        dispatcher.wake(self, outcome.Value((_FINISH, rest)))
                    return
                dispatcher.wake(self, outcome.Value((_VERDICT, verdict)))
                return
        dispatcher.wake(self, outcome.Value((_DATA, data)))

    def _drain(self) -> bool:
        """Take in, without waiting, what the kernel already holds (True if anything)."""
        raw = self._raw
        got = False
        while raw is not None:
            try:
                if self._stamps:
                    data, anc, _, _ = raw.recvmsg(self.reader.chunk, fairclock.ANCILLARY_BYTES)
                else:
                    data, anc = raw.recv(self.reader.chunk), None
            except (BlockingIOError, OSError):
                break
            if not data:
                break
            now = trio.current_time()
            self._arrived_ns = int(((fairclock.arrival(anc, now) if anc else None) or now) * 1e9)
            self.reader.feed(data)
            got = True
        return got

    async def run_reader(self) -> None:
        """Read lines until the connection ends, handing each to the match it sits in."""
        reader = self.reader
        blank = 0
        self._now = trio.lowlevel.current_clock().current_time  # trio.current_time, two calls shorter
        self._watch = watch = fairclock.watch()
        if not self._stamps:
            watch.need_wake()  # its arrivals are the loop's wakes
        try:
            while True:
                with trio.CancelScope(deadline=self._deadline_s) as scope:
                    self._scope = scope
                    streak = 0
                    while True:
                        line = reader.pop_line()
                        if line is None:
                            try:
                                data = await self._receive(streak)
                            except _Closing:
                                await self._linger()
                                return
                            if not data:
                                reader.end()
                                return
                            streak = 0 if self._waited else streak + 1
                            reader.feed(data)
                            continue
                        if not line.strip():
                            # blank lines are free (no error, no write): without this a flood of
                            # them is read without ever yielding to the other connections' tasks
                            blank += 1
                            if blank % 64 == 0:
                                await trio.lowlevel.checkpoint()
                            continue
                        if await self._on_line(line):
                            await self._linger()
                            return
                self._scope = None
                if scope.cancelled_caught and await self._deadline_passed():
                    return
        except ProtocolError as exc:  # line_too_long, truncated: the stream cannot go on
            METRICS.protocol_errors.labels(exc.code).inc()
            self.core.refused(*reader.refused)
            await self._tell(ConnectionCore.broken(exc))
            if self.handler is not None:
                await self.handler.on_fault(self, exc.code, exc.message)
            self.close_reason = exc.code
            await self._linger()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            self._scope = None
            if not self.close_reason:
                self.close_reason = "disconnected"
            self._shut = True
            self.direct = False
            self.closed.set()
            if self.dispatcher is not None:
                self.dispatcher.forget(self)
            with trio.CancelScope(shield=True):
                if self.handler is not None:
                    await self.handler.on_closed(self, self.close_reason)
                try:
                    await self.stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass

    async def _linger(self) -> None:
        """Before closing for a fatal error: stop writing (the client sees the end after our
        last error) and read on, discarding, for ``Limits.close_linger_ms`` and
        ``Limits.max_line_bytes`` at most, so closing does not reset the connection under the
        client's unread lines (a client that sends on past that is cut off)."""
        raw = self._raw
        if raw is None:
            return
        try:
            raw.shutdown(socket.SHUT_WR)
        except OSError:
            return
        left = self.core.limits.max_line_bytes
        with trio.move_on_after(self.core.limits.close_linger_ms / 1000):
            while left > 0:
                try:
                    data = raw.recv(min(left, self.reader.chunk))
                except BlockingIOError:
                    try:
                        await trio.lowlevel.wait_readable(raw)
                    except trio.ClosedResourceError:
                        return
                    continue
                except OSError:
                    return
                if not data:
                    return
                left -= len(data)

    async def _deadline_passed(self) -> bool:
        """The armed deadline fired: read what already arrived (it may hold the answer, with
        its arrival time), then report the timeout if the request is still pending. True if the
        connection is to close."""
        if self._drain():
            while (line := self.reader.pop_line()) is not None:
                if line.strip() and await self._on_line(line):
                    return True
        rid = self._armed
        if rid is None:
            self._deadline_s = INF  # a stale deadline (its request was answered)
        elif self._deadline_s <= trio.current_time():  # else an earlier, stale one fired: wait on
            self.arm(None, None)
            if self.core.pending_id == rid:
                self.core.expire()
                if self.handler is not None:
                    await self.handler.on_deadline(self, rid)
        return False

    async def _on_line(self, line: bytes) -> bool:
        """Handle one line (not blank); True if the connection is to close."""
        verdict = self.core.line(line)
        if verdict is None:
            return False
        return await self._verdict(verdict)

    async def _verdict(self, verdict: Verdict) -> bool:
        """Act on a line's verdict (:meth:`arena.match.core.ConnectionCore.line`); True if the
        connection is to close."""
        if type(verdict) is Answer:
            self._armed = None  # the scope's deadline stays: a stale one that fires is ignored
            if self.handler is not None:
                await self.handler.on_answer(self, verdict.rid, verdict.action, self._arrived_ns)
            return False
        assert not isinstance(verdict, Answer)
        error, fault, close = verdict.error, verdict.fault, verdict.close
        if fault is not None:
            METRICS.protocol_errors.labels(fault.code).inc()
        await self._tell(error)
        if fault is not None and self.handler is not None:
            await self.handler.on_fault(self, fault.code, fault.detail)
        if close is not None:
            await self._tell(self.core.too_many())
            if self.handler is not None:
                await self.handler.on_fault(self, close, "too many errors")
            self.close_reason = close
            return True
        return False


class _Asker:
    """The handler of one request outside a match (a chouette bid)."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: tuple[int, Any] | None = None

    async def on_answer(self, conn: Connection, rid: int, action: Any, t_ns: int) -> None:
        self.answer = (rid, action)
        self.done.set()

    async def on_fault(self, conn: Connection, code: str, detail: str) -> None:
        self.done.set()

    async def on_deadline(self, conn: Connection, rid: int) -> None:
        self.done.set()

    async def on_closed(self, conn: Connection, reason: str) -> None:
        self.done.set()


async def ask_once(conn: Connection, match_id: str, decision: Decision, legal: list[Any] | Compact, state: GameView,
                   clock: Clock) -> tuple[int, Any] | None:
    """Ask ``conn`` one question outside a match (a chouette bid, docs/protocol.md §8.12):
    ``(request id, action)`` if it answers before ``clock``'s deadline, else None (a timeout, a
    protocol fault, a closed connection: the caller decides what that costs)."""
    asker = _Asker()
    conn.attach(asker, 0)
    try:
        rid = conn.new_request_id()
        data = encode(Request(id=rid, match_id=match_id, decision=decision, legal=legal, state=state,
                              time_ms=clock.time_ms, bank_ms=clock.bank_ms))
        conn.core.expect(rid)
        conn.arm(int(trio.current_time() * 1e9) + clock.deadline_ms * 1_000_000, rid)
        try:
            await conn.send_bytes(data)
        except SendFailed:
            return None
        await asker.done.wait()
        return asker.answer
    finally:
        conn.detach(asker)


__all__ = ["Connection", "Handler", "HeldWrite", "InstantHandler", "SendFailed", "ask_once"]
