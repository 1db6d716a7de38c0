"""The fair clock: a bot is charged only for time the server could not have spent on it.

A decision is charged from the moment the server starts the write that carries the request
(:meth:`arena.match.seat.Connection.send_bytes`: the bytes go to the kernel at once, or the
write blocks because the bot does not read) to the moment the answer line **reached the
server's kernel**, not the moment the server got round to reading it. Under load a ready answer
can wait in the kernel while the event loop serves other matches; that wait is the server's, and
is not charged (docs/protocol.md §10.4, "What is charged").

How the arrival time is known, best first:

* TCP sockets on Linux: the kernel stamps every received segment (``SO_TIMESTAMPNS``, read back
  as ancillary data of ``recvmsg``). :meth:`LoopWatch.arrived` turns that stamp (on the wall
  clock) into the event loop's clock with the two clocks' offset read once per turn of the loop,
  when it woke (no clock is read per read; :func:`arrival` reads both clocks each time);
* any other stream (the socket pair of a launched bot's stdio relay, memory streams in tests):
  the moment the event loop last woke from its I/O wait (:class:`LoopWatch`), when it learnt the
  data was there; the time the loop then spends on other tasks before this reader runs is not
  charged. (What the relay task itself waited is, at most one turn of the loop.)

:class:`LoopWatch` also measures how long the loop takes to go round (smoothed): the scheduler
admits no new match while that exceeds ``Limits.admission_lag_ms``
(:mod:`arena.schedule.admission`), so the server stays below saturation.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

import trio

SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
"""``SO_TIMESTAMPNS`` (35 on Linux, whose Python module does not name it)."""
ANCILLARY_BYTES = socket.CMSG_SPACE(16)
"""Room for one ``struct timespec`` of ancillary data."""
_TIMESPEC = struct.Struct("qq")
_unpack_timespec = _TIMESPEC.unpack_from
_SOL_SOCKET = socket.SOL_SOCKET
_wall = time.time
_perf = time.perf_counter


def enable_stamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp the data ``sock`` receives (a TCP socket on Linux); True if it will."""
    if SO_TIMESTAMPNS is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def arrival(ancdata: list[tuple[int, int, bytes]], now: float) -> float | None:
    """The kernel's receive stamp in ``ancdata`` (from ``recvmsg``) on the loop's clock
    (``now`` = ``trio.current_time()``, seconds), never later than ``now``; None without a stamp."""
    for level, kind, data in ancdata:
        if kind == SO_TIMESTAMPNS and level == _SOL_SOCKET and len(data) >= 16:
            sec, nsec = _unpack_timespec(data)
            late = _wall() - (sec + nsec * 1e-9)
            return now - late if late > 0.0 else now
    return None


class LoopWatch(trio.abc.Instrument):
    """A trio instrument: ``woke`` is when the loop last came back from its I/O wait (loop
    clock, seconds); ``lag_ms`` the smoothed time it then takes before it waits again (one turn
    of the loop: what a newly arrived line may wait before its reader runs)."""

    SMOOTHING = 0.2
    """Weight of the newest turn in ``lag_ms``."""

    def __init__(self, now: Callable[[], float] = trio.current_time) -> None:
        self.now = now
        """The loop's clock (``trio.current_time``; :func:`watch` passes the clock's own method,
        which skips two calls: the hooks run twice per turn of the loop)."""
        self.woke = 0.0
        self.woke_wall = 0.0
        """The wall clock (``time.time``, s) read beside :attr:`woke`: the two clocks' offset for the
        turn, so that a kernel stamp is converted without reading either clock again (:meth:`arrived`)."""
        self.lag_ms = 0.0
        self.turns = 0

    def after_io_wait(self, timeout: float) -> None:
        self.woke = self.now()
        self.woke_wall = _wall()

    def before_io_wait(self, timeout: float) -> None:
        turn_ms = (self.now() - self.woke) * 1000
        self.turns += 1
        self.lag_ms += (turn_ms - self.lag_ms) * self.SMOOTHING

    def arrived(self, ancdata: list[tuple[int, int, bytes]] | None) -> float:
        """When the data of a read done now reached the kernel, on the loop's clock (seconds):
        its receive stamp in ``ancdata`` (from ``recvmsg``), else :attr:`woke` (when the loop
        learnt the data was there; never later than now). A stamp from before :attr:`woke` (the
        usual case: the data woke the loop) is converted with the offset read at that wake,
        without reading a clock; a later one (data that came in during this turn, or a wall clock
        stepped forward) with both clocks read now, as :func:`arrival` does (never later than now)."""
        if ancdata:
            for level, kind, data in ancdata:
                if kind == SO_TIMESTAMPNS and level == _SOL_SOCKET and len(data) >= 16:
                    sec, nsec = _unpack_timespec(data)
                    stamp: float = sec + nsec * 1e-9
                    late = self.woke_wall - stamp
                    if late >= 0.0:
                        return self.woke - late
                    now: float = self.now()
                    late = _wall() - stamp
                    return now - late if late > 0.0 else now
        return self.woke


class _SystemLoopWatch(LoopWatch):
    """A :class:`LoopWatch` on trio's own clock (``SystemClock``: ``offset + time.perf_counter()``),
    which its two hooks (run every turn of the loop) read without the clock's method call."""

    def __init__(self, now: Callable[[], float], offset: float) -> None:
        super().__init__(now)
        self.offset = offset

    def after_io_wait(self, timeout: float) -> None:
        self.woke = _perf() + self.offset
        self.woke_wall = _wall()

    def before_io_wait(self, timeout: float) -> None:
        turn_ms = (_perf() + self.offset - self.woke) * 1000
        self.turns += 1
        self.lag_ms += (turn_ms - self.lag_ms) * self.SMOOTHING


def _watch_for(clock: Any) -> LoopWatch:
    """The :class:`LoopWatch` for ``clock``: the cheaper one on trio's ``SystemClock``, whose time is
    ``offset + time.perf_counter()`` (checked, so a test's ``MockClock`` gets the plain one)."""
    offset = getattr(clock, "offset", None)
    if type(clock).__name__ == "SystemClock" and isinstance(offset, float) and abs(
            clock.current_time() - (_perf() + offset)) < 0.01:
        return _SystemLoopWatch(clock.current_time, offset)
    return LoopWatch(clock.current_time)


_watches: dict[Any, LoopWatch] = {}


def watch() -> LoopWatch:
    """The :class:`LoopWatch` of the running trio loop, installed on first use."""
    token = trio.lowlevel.current_trio_token()
    w = _watches.get(token)
    if w is None:
        _watches.clear()  # one trio run at a time per thread: a finished run's watch is stale
        w = _watches[token] = _watch_for(trio.lowlevel.current_clock())
        w.woke, w.woke_wall = w.now(), _wall()
        trio.lowlevel.add_instrument(w)
    return w


__all__ = ["ANCILLARY_BYTES", "LoopWatch", "arrival", "enable_stamps", "watch"]
