"""The fair clock's arrival times (docs/protocol.md §10.4): a kernel receive stamp converted to the
loop's clock with the offset read when the loop woke, the wake itself without a stamp, and the
loop watch on trio's own clock reading the same time as the clock's method."""

from __future__ import annotations

import socket
import struct

import trio
import trio.testing

from arena.match import fairclock


def stamp(wall_s: float) -> list[tuple[int, int, bytes]]:
    """Ancillary data as ``recvmsg`` returns it for a segment the kernel stamped at ``wall_s``."""
    sec = int(wall_s)
    assert fairclock.SO_TIMESTAMPNS is not None
    return [(socket.SOL_SOCKET, fairclock.SO_TIMESTAMPNS, struct.pack("qq", sec, round((wall_s - sec) * 1e9)))]


class Clock:
    """A loop clock the test sets by hand."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_a_stamp_from_before_the_wake_is_converted_with_the_wakes_offset_without_reading_a_clock():
    clock = Clock(500.0)
    watch = fairclock.LoopWatch(clock)
    watch.woke, watch.woke_wall = 500.0, 1_700_000_000.0  # the loop clock 500 s, the wall clock 1.7e9 s
    clock.t = 999.0  # a clock read now would be far off: the conversion must not read it
    got = watch.arrived(stamp(1_700_000_000.0 - 0.004))  # arrived 4 ms before the loop woke
    assert abs(got - (500.0 - 0.004)) < 1e-6


def test_a_stamp_from_after_the_wake_is_converted_with_both_clocks_read_now_and_never_later_than_now(monkeypatch):
    clock = Clock(500.0)
    watch = fairclock.LoopWatch(clock)
    watch.woke, watch.woke_wall = 500.0, 1_700_000_000.0
    clock.t = 500.010  # 10 ms into the turn
    monkeypatch.setattr(fairclock, "_wall", lambda: 1_700_000_000.010)
    got = watch.arrived(stamp(1_700_000_000.006))  # came in 6 ms into the turn: 4 ms ago
    assert abs(got - 500.006) < 1e-6
    # a stamp ahead of the wall clock (a clock stepped back meanwhile) is taken as arriving now
    assert watch.arrived(stamp(1_700_000_000.5)) == 500.010


def test_without_a_stamp_the_arrival_is_the_loops_wake():
    watch = fairclock.LoopWatch(Clock(42.0))
    watch.woke = 41.5
    assert watch.arrived(None) == 41.5
    assert watch.arrived([]) == 41.5
    assert watch.arrived([(socket.SOL_SOCKET, 99, b"\0" * 16)]) == 41.5  # another kind of ancillary data


async def test_on_trios_own_clock_the_watch_reads_the_clocks_time_itself():
    watch = fairclock.watch()
    assert type(watch).__name__ == "_SystemLoopWatch"
    before = trio.current_time()
    watch.mark()
    assert before <= watch.woke <= trio.current_time()  # the same clock as trio.current_time, offset included
    watch.need_wake()
    before = trio.current_time()
    await trio.sleep(0.001)
    after = trio.current_time()
    assert before <= watch.woke <= after  # the wake hook: the loop's return from its I/O wait


async def test_no_hook_runs_per_turn_until_a_stream_without_stamps_is_read():
    watch = fairclock.watch()
    watch.woke = -1.0
    await trio.sleep(0.001)
    assert watch.woke == -1.0 and not watch.hooked  # nothing ran at the wake
    watch.mark()
    assert watch.woke > 0
    watch.need_wake()
    watch.need_wake()  # once only
    watch.woke = -1.0
    await trio.sleep(0.001)
    assert watch.woke > 0 and watch.hooked
    kept = watch.woke
    watch.mark()  # the hook keeps woke at the loop's wake: the dispatcher's later reading is not taken
    assert watch.woke == kept


def test_on_a_mock_clock_the_watch_uses_the_clocks_method():
    async def main() -> tuple[str, float, float]:
        watch = fairclock.watch()
        watch.need_wake()
        await trio.sleep(3.0)
        return type(watch).__name__, watch.woke, trio.current_time()

    name, woke, now = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert name == "LoopWatch" and woke <= now and woke >= 3.0  # virtual seconds
