"""One task that reads every waiting bot connection: the cheap path of a decision at scale.

With a task per connection, every answer costs a trip through trio's scheduler: the reader's
``wait_readable`` registers its socket with trio's epoll (a system call), the loop wakes the
task, and the task runs through its frames before it reads. At 100 matches that machinery was
about a fifth of the server's CPU per decision, and trio runs each batch of woken tasks in a
random order (half the time reversed), which adds a turn of the loop to some answers' wait.

A :class:`Dispatcher` instead keeps one epoll set of its own with the sockets of the
connections whose readers are waiting (:meth:`Dispatcher.park`): registered once, not per
read. Its task (:meth:`Dispatcher.run`) waits on that set, takes up to
:data:`BATCH` ready sockets in the order the kernel reports them, and calls each one's
``on_readable()`` in its own task (for a bot seated in a match:
:meth:`arena.match.seat.Connection.on_readable`, which referees a plain answer at once).
Whatever that cheap path does not handle it hands back to the connection's own reader task
(:meth:`Dispatcher.wake`), which carries on exactly as it would have without a dispatcher: the
dispatcher only ever takes the common case.

After a batch, the dispatcher first yields a turn of the loop (the other tasks run, trio polls its
own I/O without waiting) and looks at its set again without waiting, up to :data:`SPIN_TURNS`
times (a *spin*). When the bots answer by then (an instant bot over loopback: 99% of the time on
the quiet machine, a busy server nearly always), the answer is taken without trio's wait
machinery and, above all, without the process sleeping in ``epoll_wait`` and being woken again:
on the quiet 2-core machine a decision that slept cost about 85-90 µs of the server's CPU, one
that did not about 70-74 (the raw trio round trip of ``make bench``'s floor never sleeps: trio's
own two scheduling points per round give the client time to answer). Two spins in a row that find
nothing (bots that think) turn it off but for one spin every :data:`SPIN_PROBE` batches, so a
server of thinking bots pays about a quarter of a turn per batch. It never spins once a reader
without kernel stamps has parked (:attr:`Dispatcher.spin`): the fair clock takes the loop's wake
as such a reader's arrival time, which after a spin would be the turn before the look.

A parked reader stays inside its own cancel scope: its deadline, a cancellation or
:meth:`Dispatcher.forget` (the connection closes) wakes it, and it leaves the epoll set.
"""

from __future__ import annotations

import select
from typing import Any, Protocol

import outcome
import trio

from arena.match import fairclock

BATCH = 64
"""Ready sockets handled per turn of the dispatcher before it yields to the other tasks (at
about 0.1 ms per decision, at most a few milliseconds at a time)."""

SPIN_TURNS = 8
"""After a batch, the dispatcher yields a turn of the loop and looks again without waiting, up to
this many times, until a look finds a ready socket (a *spin*; about 20 µs of an idle loop here)."""
SPIN_MISSES = 2
"""The dispatcher stops spinning after this many spins in a row found nothing, but for one spin
every :data:`SPIN_PROBE` batches, until one finds something again."""
SPIN_PROBE = 32


class Dispatched(Protocol):
    """What the dispatcher reads for: a connection whose reader may park."""

    def fileno(self) -> int: ...
    def on_readable(self) -> None: ...


class Dispatcher:
    """The epoll set of parked readers and the task that serves it (see the module docstring).
    Start :meth:`run` in a nursery before any reader parks; :attr:`running` says whether it
    runs. Linux only (``select.epoll``): :meth:`available` says whether this platform has it."""

    def __init__(self) -> None:
        self._ep: Any = None
        self._parked: dict[int, tuple[Dispatched, trio.lowlevel.Task]] = {}
        self._registered: set[int] = set()
        self.running = False
        self.handled = 0
        """Readiness events handled by the dispatcher's task (for tests and the bench)."""
        self.answered = 0
        """Answers refereed in the dispatcher's task (the cheap path; for tests and the bench)."""
        self.spins = 0
        """Spins (batches after which it looked again without waiting: the module docstring; for
        tests and the bench)."""
        self.spin_hits = 0
        """Of :attr:`spins`, those that found a ready socket."""
        self.spin = True
        """Whether the dispatcher may look again after a turn (module docstring): set False, for
        good, by a reader whose arrival times are the loop's wakes (no kernel stamps) as it parks."""

    @staticmethod
    def available() -> bool:
        """Whether this platform has ``select.epoll``."""
        return hasattr(select, "epoll")

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve parked readers until cancelled."""
        self._ep = ep = select.epoll()
        self.running = True
        parked = self._parked
        task_status.started()
        wait_readable, poll, get, epfd = trio.lowlevel.wait_readable, ep.poll, parked.get, ep.fileno()
        mark, checkpoint = fairclock.watch().mark, trio.lowlevel.checkpoint
        events: list[tuple[int, int]] = []
        misses = batches = 0
        try:
            while True:
                if not events:
                    await wait_readable(epfd)
                    events = poll(0, BATCH)
                mark()  # the clocks, once per batch: the kernel stamps of its reads are converted with them
                for fd, _ in events:
                    entry = get(fd)
                    if entry is None:
                        continue
                    self.handled += 1
                    try:
                        entry[0].on_readable()
                    except BaseException as exc:  # a bug belongs to that connection's task, not to all of them
                        if parked.get(fd) is entry:
                            self.wake(entry[0], outcome.Error(exc))
                        if not isinstance(exc, Exception):
                            raise
                events = []
                batches += 1
                if (misses < SPIN_MISSES or batches % SPIN_PROBE == 0) and self.spin:
                    for _ in range(SPIN_TURNS):
                        await checkpoint()  # one turn for the others (a cancellation point)
                        events = poll(0, BATCH)
                        if events:
                            break
                    self.spins += 1
                    if events:
                        self.spin_hits += 1
                        misses = 0
                    else:
                        misses += 1
        finally:
            self.running = False
            for fd in list(parked):
                conn = parked[fd][0]
                self.wake(conn, outcome.Error(trio.ClosedResourceError("the server is stopping")))
            self._registered.clear()
            ep.close()

    async def park(self, conn: Dispatched) -> Any:
        """Wait, in ``conn``'s reader task, until the dispatcher hands something back
        (:meth:`wake`); returns it. Cancellation (the reader's deadline) unparks it."""
        fd = conn.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("the connection is closed")
        task = trio.lowlevel.current_task()
        ep = self._ep
        try:
            if fd in self._registered:
                ep.modify(fd, select.EPOLLIN)
            else:
                ep.register(fd, select.EPOLLIN)
        except FileNotFoundError:  # closed behind our back, its number reused: a new socket
            ep.register(fd, select.EPOLLIN)
        except FileExistsError:
            ep.modify(fd, select.EPOLLIN)
        self._registered.add(fd)
        self._parked[fd] = (conn, task)

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._unpark(fd)
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    def is_parked(self, conn: Dispatched) -> bool:
        """Whether ``conn``'s reader is parked here."""
        entry = self._parked.get(conn.fileno())
        return entry is not None and entry[0] is conn

    def wake(self, conn: Dispatched, value: outcome.Outcome[Any]) -> None:
        """Hand ``value`` to ``conn``'s parked reader (an :class:`outcome.Value` it returns, or
        an :class:`outcome.Error` it raises); no-op if it is not parked."""
        fd = conn.fileno()
        entry = self._parked.get(fd)
        if entry is None or entry[0] is not conn:
            return
        self._unpark(fd)
        trio.lowlevel.reschedule(entry[1], value)

    def forget(self, conn: Dispatched) -> None:
        """``conn`` is closing: a parked reader gets ``trio.ClosedResourceError`` (as from
        ``wait_readable``), and its socket leaves the epoll set before its number can be reused."""
        try:
            fd = conn.fileno()
        except (OSError, ValueError):
            return
        if fd < 0:
            return
        self.wake(conn, outcome.Error(trio.ClosedResourceError("another task closed this connection")))
        if fd in self._registered:
            self._registered.discard(fd)
            try:
                self._ep.unregister(fd)
            except (OSError, ValueError):
                pass

    def _unpark(self, fd: int) -> None:
        self._parked.pop(fd, None)
        try:
            self._ep.modify(fd, 0)  # stays registered, silent, until the reader parks again
        except (OSError, ValueError):
            self._registered.discard(fd)


__all__ = ["BATCH", "Dispatched", "Dispatcher"]
