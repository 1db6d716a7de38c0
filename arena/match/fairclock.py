"""The fair clock: a bot is charged only for time the server could not have spent on it.

A decision is charged from the moment the server starts the write that carries the request
(:meth:`arena.match.seat.Connection.send_bytes`: the bytes go to the kernel at once, or the
write blocks because the bot does not read) to the moment the answer line **reached the
server's kernel**, not the moment the server got round to reading it. Under load a ready answer
can wait in the kernel while the event loop serves other matches; that wait is the server's, and
is not charged (docs/protocol.md §10.4, "What is charged").

How the arrival time is known, best first:

* TCP sockets on Linux (a bot on the network, a launched bot's loopback pair): the kernel stamps
  every received segment (``SO_TIMESTAMPNS``, read back as ancillary data of ``recvmsg``).
  :meth:`LoopWatch.arrived` turns that stamp (on the wall clock) into the event loop's clock with
  the two clocks' offset read once per batch of the dispatcher (no clock is read per read;
  :func:`arrival` reads both clocks each time, for reads outside the dispatcher);
* any other stream (a socket pair, memory streams in tests): the moment the event loop last
  woke from its I/O wait (:meth:`LoopWatch.need_wake`), when it learnt the data was there; the
  time the loop then spends on other tasks before this reader runs is not charged.

:class:`LoopWatch` also measures how late the loop runs a task that became due (a sampler task's
oversleep, smoothed, while someone reads it): the scheduler admits no new match while that
exceeds ``Limits.admission_lag_ms`` (:mod:`arena.schedule.admission`), so the server stays below
saturation. No trio instrument runs per turn of the loop unless a stream without stamps is read.
"""

from __future__ import annotations

import math
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
INF = math.inf


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


class LoopWatch:
    """The fair clock's and the admission's view of the event loop (one per trio run: :func:`watch`).

    ``woke`` (loop clock, s) and ``woke_wall`` (the wall clock, ``time.time``, read beside it) are a
    moment of this turn of the loop no later than now and no earlier than the loop's return from
    its I/O wait, which is when the loop learnt of the data read now:

    * while a stream without kernel stamps is read (:meth:`need_wake`: a memory stream, a socket
      pair), a trio instrument sets them when the loop comes back from its I/O wait, each turn,
      as the arrival time of that stream's data (unchanged meaning);
    * otherwise no hook runs per turn (trio calls every instrument hook through a generic dispatch,
      about 6% of a decision's CPU): the dispatcher sets them with :meth:`mark` when its task
      resumes after the wait, once per batch of ready sockets. They then serve only to convert
      kernel stamps (which are on the wall clock, and from before that moment) to the loop's clock
      without reading a clock per read; readers outside the dispatcher convert a stamp with both
      clocks read at the read (:func:`arrival`).

    ``lag_ms``: how late the loop runs a task that became due, smoothed (what a newly arrived line
    may wait before its reader runs); read by the admission (:mod:`arena.schedule.admission`). Its
    first read starts a sampler task that sleeps :attr:`TICK_S` at a time and measures how much
    it overslept; the sampler stops (and ``lag_ms`` falls back to 0) when nobody read the figure
    for :attr:`IDLE_S`, so an idle server, or a test on a mock clock, is not woken for it."""

    SMOOTHING = 0.2
    """Weight of the newest sample in ``lag_ms``."""
    TICK_S = 0.01
    """The sampler's sleep (s): 100 samples a second while the figure is read."""
    IDLE_S = 1.0
    """The sampler stops after this long (loop clock, s) without a read of ``lag_ms``."""

    def __init__(self, now: Callable[[], float] = trio.current_time) -> None:
        self.now = now
        """The loop's clock (``trio.current_time``; :func:`watch` passes the clock's own method)."""
        self.woke = 0.0
        self.woke_wall = 0.0
        self.hooked = False
        """Whether the wake hook runs (:meth:`need_wake`): :meth:`mark` then leaves ``woke`` alone."""
        self.samples = 0
        """Lag samples taken (for tests)."""
        self._lag_ms = 0.0
        self._lag_read = -INF
        self._sampling = False

    def mark(self) -> None:
        """Read both clocks into ``woke`` and ``woke_wall`` now, unless the wake hook keeps them
        (:attr:`hooked`). The dispatcher calls it when its task resumes after the I/O wait."""
        if not self.hooked:
            self.woke = self.now()
            self.woke_wall = _wall()

    def need_wake(self) -> None:
        """A stream without kernel stamps is read: from now on, for the rest of the run, keep
        ``woke`` at the loop's return from each I/O wait (a trio instrument; in a trio run)."""
        if not self.hooked:
            self.hooked = True
            trio.lowlevel.add_instrument(_Wake(self))

    def after_io_wait(self, timeout: float) -> None:
        """The wake hook's work (see :meth:`need_wake`)."""
        self.woke = self.now()
        self.woke_wall = _wall()

    @property
    def lag_ms(self) -> float:
        """The loop's smoothed lateness in ms (see the class docstring); in a trio run, the first
        read starts the sampler."""
        self._lag_read = self.now()
        if not self._sampling:
            self._sampling = True
            trio.lowlevel.spawn_system_task(self._sample, name="arena.fairclock.lag")
        return self._lag_ms

    @lag_ms.setter
    def lag_ms(self, value: float) -> None:
        self._lag_ms = value

    def lag_sample(self, late_ms: float) -> None:
        """Take one sample: a task ran ``late_ms`` after it became due."""
        self.samples += 1
        self._lag_ms += (late_ms - self._lag_ms) * self.SMOOTHING

    async def _sample(self) -> None:
        now, tick = self.now, self.TICK_S
        try:
            while now() - self._lag_read < self.IDLE_S:
                due = now() + tick
                await trio.sleep_until(due)
                self.lag_sample((now() - due) * 1000)
        finally:
            self._sampling = False
            self._lag_ms = 0.0

    def arrived(self, ancdata: list[tuple[int, int, bytes]] | None) -> float:
        """When the data of a read done now reached the kernel, on the loop's clock (seconds):
        its receive stamp in ``ancdata`` (from ``recvmsg``), else :attr:`woke` (when the loop
        learnt the data was there; never later than now). A stamp from before :attr:`woke_wall`
        (the usual case: the data woke the loop) is converted with the offset of :attr:`woke` and
        :attr:`woke_wall`, without reading a clock; a later one (data that came in during this
        turn, or a wall clock stepped forward) with both clocks read now, as :func:`arrival` does
        (never later than now)."""
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
    read without the clock's method call (:meth:`mark` runs once per batch of the dispatcher)."""

    def __init__(self, now: Callable[[], float], offset: float) -> None:
        super().__init__(now)
        self.offset = offset

    def mark(self) -> None:
        if not self.hooked:
            self.woke = _perf() + self.offset
            self.woke_wall = _wall()

    def after_io_wait(self, timeout: float) -> None:
        self.woke = _perf() + self.offset
        self.woke_wall = _wall()


class _Wake(trio.abc.Instrument):
    """The wake hook of :meth:`LoopWatch.need_wake` (one hook: trio calls only what is defined)."""

    def __init__(self, watch: LoopWatch) -> None:
        self.after_io_wait = watch.after_io_wait  # type: ignore[method-assign]


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
    """The :class:`LoopWatch` of the running trio loop, made on first use (no hook installed)."""
    token = trio.lowlevel.current_trio_token()
    w = _watches.get(token)
    if w is None:
        _watches.clear()  # one trio run at a time per thread: a finished run's watch is stale
        w = _watches[token] = _watch_for(trio.lowlevel.current_clock())
        w.woke, w.woke_wall = w.now(), _wall()
    return w


__all__ = ["ANCILLARY_BYTES", "LoopWatch", "arrival", "enable_stamps", "watch"]
