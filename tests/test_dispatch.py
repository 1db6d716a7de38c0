"""The dispatcher (arena/match/dispatch.py): one task reads every parked bot connection and
referees plain answers at once; everything else goes back to the connection's own reader.

The mechanism is tested on socket pairs inside the process (parking, waking, deadlines on a mock
clock, closing, a bug in one connection, a write the socket does not take whole); the whole path
over real TCP gives the same logs, byte for byte, as a server without a dispatcher."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import outcome
import pytest
import trio
import trio.testing

from arena.match import dispatch, fairclock
from arena.match.dispatch import Dispatcher
from arena.match.log import MatchLog
from arena.match.referee import MatchConfig, Referee
from arena.match.seat import Connection, SendFailed
from arena.net.server import ArenaServer, ServerConfig
from arena.store.sqlite import Store
from protocol.framing import LineReader
from tests.conftest import connect_bot


class _Sock:
    """A parked reader of a socket pair's end, recording what the dispatcher asked of it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reads: list[bytes] = []
        self.fail: Exception | None = None

    def fileno(self) -> int:
        return self.sock.fileno()

    def on_readable(self) -> None:
        if self.fail is not None:
            raise self.fail
        self.reads.append(self.sock.recv(100))


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    return a, b


@asynccontextmanager
async def _serving(dispatcher: Dispatcher) -> AsyncIterator[trio.Nursery]:
    """A nursery where ``dispatcher`` runs; cancelled at the end of the block."""
    async with trio.open_nursery() as nursery:
        await nursery.start(dispatcher.run)
        yield nursery
        nursery.cancel_scope.cancel()


async def test_a_parked_reader_is_read_for_in_the_dispatchers_task_until_woken() -> None:
    dispatcher = Dispatcher()
    ours, theirs = _pair()
    conn = _Sock(ours)
    got: list[object] = []
    async with _serving(dispatcher) as nursery:

        async def reader() -> None:
            got.append(await dispatcher.park(conn))

        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.is_parked(conn)
        for line in (b"one\n", b"two\n"):
            theirs.send(line)
            while len(conn.reads) < (1 if line == b"one\n" else 2):
                await trio.testing.wait_all_tasks_blocked()
                await trio.sleep(0)
        assert conn.reads == [b"one\n", b"two\n"] and got == []  # read for it, the reader never woke
        dispatcher.wake(conn, outcome.Value("over to you"))
        await trio.testing.wait_all_tasks_blocked()
        assert got == ["over to you"] and not dispatcher.is_parked(conn)
        theirs.send(b"three\n")  # not parked any more: left for the reader's own reads
        await trio.testing.wait_all_tasks_blocked()
        assert conn.reads == [b"one\n", b"two\n"]
        assert ours.recv(100) == b"three\n"
    assert dispatcher.handled == 2 and not dispatcher.running


async def test_a_deadline_unparks_the_reader_and_closing_wakes_it_with_closed_resource_error(autojump_clock) -> None:
    dispatcher = Dispatcher()
    ours, theirs = _pair()
    conn = _Sock(ours)
    closed: list[bool] = []
    async with _serving(dispatcher) as nursery:
        t0 = trio.current_time()
        with trio.move_on_after(5) as scope:
            await dispatcher.park(conn)
        assert scope.cancelled_caught and trio.current_time() - t0 == 5  # virtual seconds
        assert not dispatcher.is_parked(conn)

        async def reader() -> None:
            try:
                await dispatcher.park(conn)
            except trio.ClosedResourceError:
                closed.append(True)

        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        dispatcher.forget(conn)
        await trio.testing.wait_all_tasks_blocked()
        assert closed == [True]
        ours.close()
        with pytest.raises(trio.ClosedResourceError):
            await dispatcher.park(conn)  # a closed socket does not park
    theirs.close()


async def test_a_bug_in_one_connections_read_reaches_its_reader_and_the_others_go_on() -> None:
    dispatcher = Dispatcher()
    (bad_ours, bad_theirs), (good_ours, good_theirs) = _pair(), _pair()
    bad, good = _Sock(bad_ours), _Sock(good_ours)
    bad.fail = RuntimeError("a bug")
    raised: list[BaseException] = []
    async with _serving(dispatcher) as nursery:

        async def reader(conn: _Sock) -> None:
            try:
                await dispatcher.park(conn)
            except RuntimeError as exc:
                raised.append(exc)

        nursery.start_soon(reader, bad)
        nursery.start_soon(reader, good)
        await trio.testing.wait_all_tasks_blocked()
        bad_theirs.send(b"x\n")
        good_theirs.send(b"y\n")
        while not (raised and good.reads):
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(0)
        assert str(raised[0]) == "a bug" and good.reads == [b"y\n"] and dispatcher.running


class _Instant(_Sock):
    """A parked reader whose bot answers at once: each read makes the peer write again."""

    def __init__(self, sock: socket.socket, peer: socket.socket, rounds: int) -> None:
        super().__init__(sock)
        self.peer, self.left = peer, rounds

    def on_readable(self) -> None:
        super().on_readable()
        self.left -= 1
        if self.left > 0:
            self.peer.send(b"x\n")  # the next answer is there before the dispatcher looks again


async def test_an_answer_ready_after_one_turn_is_taken_without_waiting() -> None:
    dispatcher = Dispatcher()
    ours, theirs = _pair()
    conn = _Instant(ours, theirs, 50)
    async with _serving(dispatcher) as nursery:
        nursery.start_soon(dispatcher.park, conn)
        await trio.testing.wait_all_tasks_blocked()
        theirs.send(b"x\n")
        while conn.left > 0:
            await trio.sleep(0)
        await trio.testing.wait_all_tasks_blocked()
    assert len(conn.reads) == 50 == dispatcher.handled
    # the first read came through trio's wait; the 49 after it each from a look after one turn,
    # and one more look found nothing
    assert dispatcher.spin_hits == 49 and dispatcher.spins == 50


async def test_the_dispatcher_stops_looking_without_waiting_for_bots_that_think(autojump_clock) -> None:
    dispatcher = Dispatcher()
    ours, theirs = _pair()
    conn = _Sock(ours)
    async with _serving(dispatcher) as nursery:
        nursery.start_soon(dispatcher.park, conn)
        await trio.testing.wait_all_tasks_blocked()
        for _ in range(100):
            theirs.send(b"x\n")
            await trio.sleep(0.02)  # a bot thinking 20 ms: the look after a turn finds nothing
    assert len(conn.reads) == 100 == dispatcher.handled
    probes = 100 // dispatch.SPIN_PROBE
    assert dispatch.SPIN_MISSES <= dispatcher.spins <= dispatch.SPIN_MISSES + probes
    assert dispatcher.spin_hits == 0


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    server.setblocking(False)
    return server, client


@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_only_a_reader_without_kernel_stamps_turns_the_look_after_a_turn_off(transport: str) -> None:
    dispatcher = Dispatcher()
    ours, theirs = _tcp_pair() if transport == "tcp" else _pair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    conn = Connection(stream, LineReader(stream), "bot")
    conn.dispatcher = dispatcher
    async with _serving(dispatcher) as nursery:
        nursery.start_soon(conn.run_reader)
        await trio.testing.wait_all_tasks_blocked()
        assert dispatcher.is_parked(conn)
        # a socket pair has no kernel stamps: its arrivals are the loop's wakes (the hook runs),
        # which a look after a turn would put a turn early
        assert dispatcher.spin is (transport == "tcp")
        assert fairclock.watch().hooked is (transport == "unix")
        await conn.aclose()
    theirs.close()


async def test_a_write_the_socket_does_not_take_whole_keeps_its_turn() -> None:
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    ours.setblocking(False)
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    conn = Connection(stream, LineReader(stream), "bot", send_timeout_s=30.0)
    big = b"A" * 1_000_000 + b"\n"
    rest = conn.send_now(big)
    assert rest is not None and rest.held and 0 < len(rest.data) < len(big)  # the rest waits, its turn taken
    assert not conn.writable_now()
    order: list[str] = []
    received = bytearray()

    async def later() -> None:
        await conn.send_bytes(b"B\n")  # written after the rest of the first, though it starts first
        order.append("B")

    async def finish() -> None:
        await conn.send_held(rest)
        order.append("A")

    async def drain() -> None:
        theirs.setblocking(False)
        while not received.endswith(b"B\n"):
            await trio.lowlevel.wait_readable(theirs)
            received.extend(theirs.recv(1 << 20))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(finish)
        nursery.start_soon(drain)
    assert bytes(received) == big + b"B\n" and order == ["A", "B"]
    assert conn.writable_now()
    await conn.aclose()
    assert not conn.writable_now()  # closed: the dispatcher's cheap path is off
    with pytest.raises(SendFailed):
        await conn.send_held(conn.send_now(b"C\n"))  # closed: the turn is given back, the write fails
    theirs.close()


async def _seeded_match(folder, dispatch: bool, nursery: trio.Nursery) -> tuple[bytes, list, int | None]:
    folder.mkdir()
    store = Store(folder / "arena.db")
    server = ArenaServer(store, ServerConfig(handshake_timeout_s=30.0, dispatch=dispatch))
    await nursery.start(server.serve)
    a = await connect_bot(server, "alice")
    b = await connect_bot(server, "bob")
    conns = (server.bots["alice"], server.bots["bob"])
    path = folder / "match.jsonl"
    async with trio.open_nursery() as match:
        match.start_soon(a.play)
        match.start_soon(b.play)
        with MatchLog(path) as log:
            result = await Referee("seeded", 2026, MatchConfig(), conns, log).run()
    assert result.reason == "target" and result.decisions > 20
    handled = server.dispatcher.answered if server.dispatcher is not None else None
    received = [m for m in a.received + b.received if m["type"] != "welcome"]
    await a.aclose()
    await b.aclose()
    return path.read_bytes(), received, handled


async def test_over_tcp_the_dispatcher_referees_every_answer_and_changes_no_byte(tmp_path, nursery) -> None:
    with_log, with_msgs, handled = await _seeded_match(tmp_path / "on", True, nursery)
    without_log, without_msgs, none = await _seeded_match(tmp_path / "off", False, nursery)
    decisions = sum(1 for m in with_msgs if m["type"] == "request")
    # the answers were refereed in the dispatcher's task (each one is, unless a read happens to
    # catch half a line: then the reader task takes it)
    assert none is None and handled is not None and handled >= decisions // 2
    assert with_log == without_log and with_msgs == without_msgs


async def test_an_answer_split_over_two_writes_or_followed_by_more_lines_is_refereed_alike(server, store) -> None:
    a = await connect_bot(server, "split")
    b = await connect_bot(server, "tidy")
    conns = (server.bots["split"], server.bots["tidy"])

    async def split_play() -> None:
        while True:
            msg = await a.recv()
            if msg is None or msg["type"] == "match_end":
                return
            if msg["type"] == "request":
                line = b'{"type":"action","id":%d,"action":%s}\n' % (msg["id"], _json(msg["legal"][0]))
                if msg["id"] % 2:
                    await a.send_raw(line[:7])  # half a line: the reader waits for the rest
                    await trio.testing.wait_all_tasks_blocked()
                    await a.send_raw(line[7:])
                else:
                    await a.send_raw(line + b"\n")  # and a blank line in the same write

    async with trio.open_nursery() as match:
        match.start_soon(split_play)
        match.start_soon(b.play)
        result = await Referee("split", 7, MatchConfig(), conns, MatchLog(None)).run()
    assert result.reason == "target" and result.decisions > 20
    assert not [m for m in a.received if m["type"] == "error"]


def _json(value: object) -> bytes:
    import msgspec

    return msgspec.json.encode(value)
