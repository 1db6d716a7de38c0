"""The trio driver of the match core (arena.match.referee, arena.match.seat) over memory
streams on trio's MockClock: every time-out is virtual, so nothing here depends on the wall
clock or the machine's load. The policy itself is tested in test_match_core.py; these tests
check that the driver feeds the core the right inputs at the right (virtual) times."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import trio
import trio.testing

from arena.match.log import MatchLog, read_log
from arena.match.referee import MatchConfig, Referee
from arena.match.seat import Connection
from protocol.framing import LineReader
from protocol.messages import TimeControl

Policy = Callable[[dict[str, Any]], Awaitable[Any]]


async def first_legal(req: dict[str, Any]) -> Any:
    return req["legal"][0]


def after(seconds: float, then: Policy = first_legal) -> Policy:
    async def policy(req: dict[str, Any]) -> Any:
        await trio.sleep(seconds)
        return await then(req)
    return policy


async def silent(req: dict[str, Any]) -> Any:
    return None


class Bot:
    """The far end of a memory stream: answers requests by ``policy``; records (time, message)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.reader = LineReader(stream)
        self.received: list[tuple[float, dict[str, Any]]] = []
        self.sent_requests: dict[int, float] = {}

    async def send(self, obj: dict[str, Any] | bytes) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n"
        await self.stream.send_all(data)

    async def play(self, policy: Policy) -> None:
        while True:
            line = await self.reader.read_line()
            if line is None:
                return
            msg = json.loads(line)
            self.received.append((trio.current_time(), msg))
            if msg["type"] == "match_end":
                return
            if msg["type"] == "request":
                action = await policy(msg)
                if action is not None:
                    await self.send({"type": "action", "id": msg["id"], "action": action})

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for _, m in self.received if m["type"] == kind]


async def match(config: MatchConfig, policies: tuple[Policy, Policy], lockstep: int | None = None,
                script: Callable[[Bot], Awaitable[None]] | None = None,
                log: MatchLog | None = None) -> tuple[Any, list[Bot], list[Connection]]:
    """Referee one match between two bots over memory streams; ``lockstep``: that seat's stream
    only moves bytes when read (a bot that does not read blocks the server's writes);
    ``script`` replaces seat 0's play loop."""
    conns, bots = [], []
    for seat, name in enumerate(("alice", "bob")):
        ours, theirs = (trio.testing.lockstep_stream_pair() if seat == lockstep
                        else trio.testing.memory_stream_pair())
        conns.append(Connection(ours, LineReader(ours), name, send_timeout_s=10.0))
        bots.append(Bot(theirs))
    result: list[Any] = []
    async with trio.open_nursery() as nursery:
        for conn in conns:
            nursery.start_soon(conn.run_reader)
        if script is not None:
            nursery.start_soon(script, bots[0])
        else:
            nursery.start_soon(bots[0].play, policies[0])
        if lockstep != 1:
            nursery.start_soon(bots[1].play, policies[1])
        result.append(await Referee("m1", 5, config, (conns[0], conns[1]), log or MatchLog(None)).run())
        await trio.sleep(1)  # let the bots read match_end
        nursery.cancel_scope.cancel()
    return result[0], bots, conns


async def test_a_match_plays_out_on_memory_streams(autojump_clock):
    result, bots, _ = await match(MatchConfig(), (first_legal, first_legal))
    assert result.reason == "target" and result.decisions > 0
    assert bots[0].of("match_end")[0]["you"] == ("win" if result.winner == 0 else "loss")


async def test_a_silent_bot_times_out_exactly_at_move_plus_grace(autojump_clock, tmp_path):
    cfg = MatchConfig(time=TimeControl(move_ms=1000, grace_ms=50))
    with MatchLog(tmp_path / "m1.jsonl") as log:
        result, bots, _ = await match(cfg, (silent, first_legal), log=log)
    lines = read_log(tmp_path / "m1.jsonl")
    assert [(x["seat"], x["code"]) for x in lines if x["type"] == "incident"] == [(0, "timeout")]
    assert lines[-1]["type"] == "result" and lines[-1]["reason"] == "forfeit_timeout"
    (t_req, req), = [(t, m) for t, m in bots[0].received if m["type"] == "request"]
    (t_err, err), = [(t, m) for t, m in bots[0].received if m["type"] == "error"]
    assert err["code"] == "timeout" and err["fatal"] and err["id"] == req["id"]
    assert abs((t_err - t_req) - 1.05) < 1e-6  # virtual time: exactly move_ms + grace_ms
    assert result.reason == "forfeit_timeout" and result.winner == 1


async def test_time_over_move_is_charged_to_the_bank_on_the_virtual_clock(autojump_clock):
    cfg = MatchConfig(time=TimeControl(move_ms=1000, bank_ms=1000))
    result, bots, _ = await match(cfg, (after(1.3), first_legal))
    banks = [r["bank_ms"] for r in bots[0].of("request")]
    assert banks[:3] == [1000, 700, 400]  # 300 ms over each time, charged to the millisecond
    assert result.reason == "forfeit_timeout" and result.faulty == 0  # the bank runs out


async def test_auto_timeouts_strike_and_a_late_answer_is_harmless(autojump_clock):
    cfg = MatchConfig(time=TimeControl(move_ms=100, grace_ms=0), on_timeout="auto", max_strikes=2)
    answered_late = []

    async def late(req: dict[str, Any]) -> Any:
        if not answered_late:
            answered_late.append(req["id"])
            await trio.sleep(0.15)  # after the deadline (0.1 s): the referee played for us
        return req["legal"][0]

    result, bots, conns = await match(cfg, (late, first_legal))
    errors = bots[0].of("error")
    assert errors[0]["code"] == "timeout" and not errors[0]["fatal"]
    assert errors[0]["message"].endswith("(strike 1 of 2)")
    assert errors[1]["code"] == "late_answer" and errors[1]["id"] == answered_late[0] and not errors[1]["fatal"]
    assert result.reason == "target" and conns[0].errors_sent == 0


async def test_a_malformed_line_forfeits_and_is_told_fatal(autojump_clock):
    async def junk(req: dict[str, Any]) -> Any:
        await bots_ref[0].send(b"{oops\n")
        return None

    bots_ref: list[Bot] = []

    async def script(bot: Bot) -> None:
        bots_ref.append(bot)
        await bot.play(junk)

    result, bots, _ = await match(MatchConfig(), (first_legal, first_legal), script=script)
    err = bots[0].of("error")[0]
    assert err["code"] == "bad_json" and err["fatal"]
    assert result.reason == "forfeit_protocol" and result.faulty == 0


async def test_a_bot_that_hangs_up_forfeits_by_disconnect(autojump_clock):
    async def script(bot: Bot) -> None:
        await bot.reader.read_line()  # match_start
        await trio.sleep(0.2)
        await bot.stream.aclose()

    result, _, conns = await match(MatchConfig(), (first_legal, first_legal), script=script)
    assert result.reason == "forfeit_disconnect" and result.faulty == 0
    assert "connection" in result.detail and conns[0].closed.is_set()


async def test_a_bot_that_does_not_read_is_dropped_after_the_send_time_out(autojump_clock):
    t0 = trio.current_time()
    result, _, conns = await match(MatchConfig(), (first_legal, first_legal), lockstep=1)
    assert result.reason == "forfeit_disconnect" and result.faulty == 1
    assert "does not read" in result.detail and conns[1].close_reason == "not reading (send timed out)"
    assert trio.current_time() - t0 >= 10.0  # the send time-out, virtual


async def test_the_reader_keeps_one_cancel_scope_across_answered_decisions(autojump_clock):
    """Per decision the reader makes no new cancel scope: a scope is replaced only when a
    deadline fired (a stale one included)."""
    scopes: set[int] = set()

    async def watching(req: dict[str, Any]) -> Any:
        scopes.add(id(conns2[0]._scope))
        return req["legal"][0]

    conns2: list[Connection] = []
    ours0, theirs0 = trio.testing.memory_stream_pair()
    ours1, theirs1 = trio.testing.memory_stream_pair()
    conns2 += [Connection(ours0, LineReader(ours0), "alice"), Connection(ours1, LineReader(ours1), "bob")]
    b0, b1 = Bot(theirs0), Bot(theirs1)
    async with trio.open_nursery() as nursery:
        for conn in conns2:
            nursery.start_soon(conn.run_reader)
        nursery.start_soon(b0.play, watching)
        nursery.start_soon(b1.play, first_legal)
        r = await Referee("m2", 5, MatchConfig(), (conns2[0], conns2[1]), MatchLog(None)).run()
        nursery.cancel_scope.cancel()
    assert r.reason == "target" and len(b0.of("request")) > 10 and len(scopes) == 1


class CountingStream(trio.abc.Stream):
    """A stream that records each ``send_all`` (one write) before passing it on."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.writes: list[bytes] = []

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_each_decision_is_one_write_to_the_seat_asked(autojump_clock):
    """Everything one decision produces for a seat (the events it may see, then the request)
    goes out in one write: a seat gets match_start, one write per request, and match_end."""
    streams: list[CountingStream] = []
    conns: list[Connection] = []
    bots: list[Bot] = []
    for name in ("alice", "bob"):
        ours, theirs = trio.testing.memory_stream_pair()
        counted = CountingStream(ours)
        streams.append(counted)
        conns.append(Connection(counted, LineReader(counted), name))
        bots.append(Bot(theirs))
    async with trio.open_nursery() as nursery:
        for conn, bot in zip(conns, bots):
            nursery.start_soon(conn.run_reader)
            nursery.start_soon(bot.play, first_legal)
        result = await Referee("m3", 7, MatchConfig(), (conns[0], conns[1]), MatchLog(None)).run()
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert result.reason == "target" and result.decisions > 10
    for stream, bot in zip(streams, bots):
        kinds = [[json.loads(line)["type"] for line in write.splitlines()] for write in stream.writes]
        assert kinds[0] == ["match_start"] and kinds[-1][-1] == "match_end"
        asks = kinds[1:-1]
        assert len(asks) == len(bot.of("request"))  # one write per request, nothing in between
        assert all(k[-1] == "request" and set(k[:-1]) <= {"event"} for k in asks)
        assert set(kinds[-1][:-1]) <= {"event"}
    assert sum(len(b.of("request")) for b in bots) == result.decisions


class CountingSocket(socket.socket):
    """A real socket that records each ``send`` (one system call) it is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sends: list[bytes] = []

    def send(self, data: Any, *flags: int) -> int:
        n = super().send(data, *flags)
        self.sends.append(bytes(data[:n]))
        return n


def counted_stream(sock: socket.socket) -> tuple[trio.SocketStream, CountingSocket]:
    """A trio stream on ``sock`` whose stdlib socket, the one :class:`Connection` writes to
    directly, is a :class:`CountingSocket` (a second handle on the same socket: trio wraps only
    a plain ``socket.socket``)."""
    counted = CountingSocket(fileno=os.dup(sock.fileno()))
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
    stream.socket._sock = counted  # type: ignore[attr-defined]
    return stream, counted


async def test_on_a_socket_each_decision_is_one_send_call():
    """The direct path: a decision's bytes for a seat are one ``send`` on its socket (no lock,
    no task switch); a partial write would add the rest's calls (socket pairs, no timing)."""
    counters: list[CountingSocket] = []
    conns: list[Connection] = []
    bots: list[Bot] = []
    for name in ("alice", "bob"):
        a, b = socket.socketpair()
        stream, counted = counted_stream(a)
        counters.append(counted)
        conns.append(Connection(stream, LineReader(stream), name))
        bots.append(Bot(trio.SocketStream(trio.socket.from_stdlib_socket(b))))
    try:
        with trio.fail_after(120):  # a hang bound, not a timing
            async with trio.open_nursery() as nursery:
                for conn, bot in zip(conns, bots):
                    nursery.start_soon(conn.run_reader)
                    nursery.start_soon(bot.play, first_legal)
                result = await Referee("m4", 7, MatchConfig(), (conns[0], conns[1]), MatchLog(None)).run()
                for bot in bots:
                    while not bot.of("match_end"):
                        await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
    finally:
        for counted in counters:
            counted.close()
    assert result.reason == "target" and result.decisions > 10
    for counted, conn, bot in zip(counters, conns, bots):
        assert conn._raw is counted  # the direct path was taken
        sends = counted.sends
        assert len(sends) == len(bot.of("request")) + 2  # match_start, one per request, match_end
        assert all(data.endswith(b"\n") for data in sends)
