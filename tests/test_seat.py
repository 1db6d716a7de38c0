"""A connection's reader and its one deadline (arena/match/seat.py), on trio's MockClock: a request's
deadline fires at its time, a stale one (of a request already answered) is mostly left to fire and
ignored, but one due within the first half of a new request's time is moved instead, so that the
readers of matches started together do not all wake at once every move_ms."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from arena.match.seat import Connection
from protocol.framing import LineReader


class Handler:
    """Records what the connection reports."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, Any, int]] = []
        self.deadlines: list[tuple[int, float]] = []

    async def on_answer(self, conn: Connection, rid: int, action: Any, t_ns: int) -> None:
        self.answers.append((rid, action, t_ns))

    async def on_fault(self, conn: Connection, code: str, detail: str) -> None:
        raise AssertionError(f"unexpected fault {code}: {detail}")

    async def on_deadline(self, conn: Connection, rid: int) -> None:
        self.deadlines.append((rid, trio.current_time()))

    async def on_closed(self, conn: Connection, reason: str) -> None:
        pass


async def seated(nursery: trio.Nursery) -> tuple[Connection, Handler, trio.abc.Stream]:
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, LineReader(ours), "bot", send_timeout_s=10.0)
    handler = Handler()
    conn.attach(handler, 0)
    nursery.start_soon(conn.run_reader)
    await trio.testing.wait_all_tasks_blocked()  # the reader runs: its scope exists
    return conn, handler, theirs


def ns(t: float) -> int:
    return int(t * 1e9)


async def ask(conn: Connection, rid: int, within_s: float) -> None:
    conn.core.expect(rid)
    conn.arm(ns(trio.current_time() + within_s), rid)


async def test_a_stale_deadline_is_left_far_off_and_moved_when_due_in_the_first_half_of_the_new_time(autojump_clock):
    async with trio.open_nursery() as nursery:
        conn, handler, bot = await seated(nursery)
        t0 = trio.current_time()
        await ask(conn, 1, 2.0)
        assert conn._scope is not None and conn._scope.deadline == ns(t0 + 2.0) / 1e9  # from none: set
        await bot.send_all(b'{"type":"action","id":1,"action":"x"}\n')
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(0.1)
        await ask(conn, 2, 2.0)  # the stale 2.0 is due in 1.9 s, past half of the 2 s: left
        assert conn._scope.deadline == ns(t0 + 2.0) / 1e9
        await bot.send_all(b'{"type":"action","id":2,"action":"x"}\n')
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(1.4)
        await ask(conn, 3, 2.0)  # the stale one is due in 0.5 s, within the first half: moved
        assert conn._scope.deadline == ns(t0 + 3.5) / 1e9
        assert [rid for rid, _, _ in handler.answers] == [1, 2] and handler.deadlines == []
        nursery.cancel_scope.cancel()


async def test_an_answered_bot_never_wakes_its_reader_for_a_stale_deadline_and_a_real_one_fires_on_time(
        autojump_clock, monkeypatch):
    wakes = []
    passed = Connection._deadline_passed

    async def counted(self: Connection) -> bool:
        wakes.append(trio.current_time())
        return await passed(self)

    monkeypatch.setattr(Connection, "_deadline_passed", counted)
    async with trio.open_nursery() as nursery:
        conn, handler, bot = await seated(nursery)
        for rid in range(1, 301):  # 300 answers 20 ms apart: 6 s, three times the 2 s allowance
            await ask(conn, rid, 2.0)
            await trio.sleep(0.02)
            await bot.send_all(b'{"type":"action","id":%d,"action":"x"}\n' % rid)
            await trio.testing.wait_all_tasks_blocked()  # the reader took it in
        assert len(handler.answers) == 300 and wakes == []
        t = trio.current_time()
        await ask(conn, 301, 2.0)  # never answered: it times out at its deadline, not before
        await trio.sleep(3.0)
        assert [rid for rid, _ in handler.deadlines] == [301]
        assert handler.deadlines[0][1] == pytest.approx(t + 2.0, abs=1e-6)
        assert all(w > t for w in wakes)  # a stale deadline may fire once more meanwhile: ignored
        nursery.cancel_scope.cancel()
